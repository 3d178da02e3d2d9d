"""`convoeval run --repeat N` against a local OpenAI-compatible server whose answers differ
between repeats: N x requests with the cache on, the spread in the rows, the gate modes and
their exit codes, and the interval in the HTML report."""

from __future__ import annotations

import json
import os
import re
from collections import Counter
from pathlib import Path
from typing import Any

from _cli import convoeval

RECORDS = 4


def _question(body: dict[str, Any]) -> int:
    text = " ".join(str(m.get("content")) for m in body["messages"])
    found = re.search(r"question (\d+):", text)
    assert found is not None
    return int(found.group(1))


def test_repeat_reports_the_spread_and_gates_on_it(tmp_path: Path, fault_server: Any) -> None:
    asked: Counter[int] = Counter()

    def responder(body: dict[str, Any]) -> dict[str, Any]:
        question = _question(body)
        asked[question] += 1  # each record is relevant on its first answer only
        return {"verdicts": [{"exchange": 0, "relevant": asked[question] == 1, "reason": ""}]}

    fault_server.responder = responder
    with (tmp_path / "d.jsonl").open("w") as handle:
        for i in range(RECORDS):
            turns = [
                {"type": "human", "content": f"question {i}: what is the status?"},
                {"type": "ai", "content": f"answer {i}: all good"},
            ]
            handle.write(json.dumps({"user_input": turns, "id": f"q{i}"}) + "\n")
    env = {**os.environ, "CONVOEVAL_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("OPENAI_API_KEY", None)
    common = [
        "run", "d.jsonl", "-m", "conversation_relevancy", "--judge", "openai/test-model",
        "--base-url", fault_server.url, "--api-key", "sk-test", "--repeat", "3",
        "--fail-under", "conversation_relevancy=0.3",
    ]  # fmt: skip
    done = convoeval(*common, "-o", "a.jsonl", "--report", "a.html", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr  # every record's mean is 1/3 >= 0.3
    assert len(fault_server.bodies) == 3 * RECORDS  # the cache is on: N x requests
    temperatures = Counter(body.get("temperature") for body in fault_server.bodies)
    assert temperatures[0.7] == 2 * RECORDS  # repeats 2 and 3 sample at 0.7
    rows = [json.loads(line) for line in (tmp_path / "a.jsonl").read_text().splitlines()]
    for row in rows:
        entry = row["repeats"]["conversation_relevancy"]
        assert sorted(entry["values"]) == [0.0, 0.0, 1.0]
        assert (entry["min"], entry["max"]) == (0.0, 1.0)
        assert abs(row["scores"]["conversation_relevancy"] - 1 / 3) < 1e-9
    assert "95% CI" in done.stdout and "0.333-0.333" in done.stdout
    html = (tmp_path / "a.html").read_text()
    assert "95% CI" in html and "0.000-1.000" in html

    # The interval of equal record means is a point: the lower bound passes.
    bound = convoeval(*common, "-o", "a.jsonl", "--gate", "lower-bound", cwd=tmp_path, env=env)
    assert bound.returncode == 0, bound.stderr
    # No repeat's own mean (a multiple of 1/4, the three summing to 1) can reach 0.3 in all
    # three repeats: a 90% pass rate fails with exit code 3. Rerun: the cache replays.
    sent = len(fault_server.bodies)
    rate = convoeval(*common, "-o", "b.jsonl", "--gate", "pass-rate=0.9", cwd=tmp_path, env=env)
    assert rate.returncode == 3, rate.stderr
    assert "below the pass rate 90%" in rate.stderr
    assert len(fault_server.bodies) == sent
    bad = convoeval(*common, "-o", "c.jsonl", "--gate", "median", cwd=tmp_path, env=env)
    assert bad.returncode == 2 and "--gate" in bad.stderr
    report = convoeval("report", "a.jsonl", "-o", "again.html", cwd=tmp_path, env=env)
    assert report.returncode == 0 and "95% CI" in (tmp_path / "again.html").read_text()
