"""`convoeval run` never quietly wrong (issue 32 §1): a --fail-under limit checked as a
--threshold is (exit 2), a bug that stops the run with its traceback (exit 6, rows kept, the run
resumes), malformed rubrics found by the scan before any judge call."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from _cli import convoeval
from _orders import write_orders

#: A metric with a bug (a KeyError on record o2, once rows o0 and o1 are on disk), registered
#: before the real command line runs; BUGGY_FIXED=1 turns the bug off.
BUGGY = """
import asyncio, os
from pathlib import Path
from typing import ClassVar
from convoeval.metrics import Metric, MetricResult, register

@register
class Buggy(Metric):
    name: ClassVar[str] = "buggy_metric"

    async def _score(self, sample, ask):
        with open("seen.txt", "a") as seen:
            seen.write(f"{sample.id}\\n")
        if sample.id == "o2" and not os.environ.get("BUGGY_FIXED"):
            for _ in range(10_000):  # until rows o0 and o1 are written (no wall clock)
                if Path("r.jsonl").read_text().count("\\n") >= 2:
                    break
                await asyncio.sleep(0)
            raise KeyError("no_such_field")
        return MetricResult(1.0, "ok")
"""


def _convoeval(
    *args: str, cwd: Path, env: dict[str, str] | None = None, setup: str = ""
) -> subprocess.CompletedProcess[str]:
    """The real command line in a new process (after `setup`, e.g. an import: in a fresh
    interpreter, so what it imports is all the command has)."""
    if not setup:
        return convoeval(*args, cwd=cwd, env=env)
    code = f"{setup}\nfrom convoeval.cli import main\nmain()"
    command = [sys.executable, "-c", code, *args]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=300, env=env)


def test_a_fail_under_limit_that_cannot_be_met_or_missed_is_refused(tmp_path: Path) -> None:
    write_orders(tmp_path / "d.jsonl", 3, reference=False)
    common = ["run", "d.jsonl", "-m", "tool_call_accuracy", "-o", "r.jsonl"]
    for limit, message in (
        ("nan", "the --fail-under limit of tool_call_accuracy must be a finite number, not nan"),
        ("inf", "the --fail-under limit of tool_call_accuracy must be a finite number, not inf"),
        ("2", "the --fail-under limit of tool_call_accuracy is 2, outside its scores' range "
         "[0, 1]"),
    ):  # fmt: skip
        done = _convoeval(*common, "--fail-under", f"tool_call_accuracy={limit}", cwd=tmp_path)
        assert done.returncode == 2, done.stderr
        assert f"error: {message}" in done.stderr
        assert not (tmp_path / "r.jsonl").exists()  # refused before scoring
    threshold = _convoeval(*common, "--threshold", "tool_call_accuracy=nan", cwd=tmp_path)
    assert threshold.returncode == 2
    assert "the threshold of tool_call_accuracy must be a finite number, not nan" in (
        threshold.stderr
    )
    # Metrics chosen from the data: the limit is checked once they are known (rows kept).
    chosen = _convoeval("run", "d.jsonl", "--fail-under", "tool_call_f1=nan", cwd=tmp_path)
    assert chosen.returncode == 2 and "tool_call_f1 must be a finite number" in chosen.stderr
    ok = _convoeval(*common, "--fail-under", "tool_call_accuracy=1", cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr


def test_a_bug_stops_the_run_with_its_traceback_exit_6_and_the_run_resumes(
    tmp_path: Path,
) -> None:
    (tmp_path / "buggy.py").write_text(BUGGY)
    write_orders(tmp_path / "d.jsonl", 4, reference=False)
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(tmp_path), *sys.path])}
    args = ["run", "d.jsonl", "-m", "buggy_metric", "-o", "r.jsonl", "--concurrency", "1"]
    done = _convoeval(*args, cwd=tmp_path, env=env, setup="import buggy")
    assert done.returncode == 6, done.stderr
    assert "Traceback (most recent call last)" in done.stderr
    assert "KeyError: 'no_such_field'" in done.stderr
    assert "error: a bug stopped the run" in done.stderr and "r.jsonl" in done.stderr
    assert "--retry-failed" not in done.stderr
    rows = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert [row["id"] for row in rows][:2] == ["o0", "o1"] and "o2" not in [r["id"] for r in rows]
    (tmp_path / "seen.txt").unlink()
    fixed = _convoeval(*args, cwd=tmp_path, env={**env, "BUGGY_FIXED": "1"}, setup="import buggy")
    assert fixed.returncode == 0, fixed.stderr
    seen = (tmp_path / "seen.txt").read_text().split()
    assert "o0" not in seen and "o1" not in seen  # resumed: the kept rows are not scored again
    rows = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert [row["id"] for row in rows] == ["o0", "o1", "o2", "o3"]


def test_a_malformed_rubric_exits_2_with_its_line_before_any_judge_call(
    tmp_path: Path, fault_server: Any
) -> None:
    fault_server.reply({"level": 1, "reason": "fine"}).forever()
    turns = [{"type": "human", "content": "hi"}, {"type": "ai", "content": "hello"}]
    records = [
        {"user_input": turns, "rubrics": {"score1_description": "poor", "score2": "ok"}},
        {"user_input": turns, "rubrics": {"score1_description": "poor", "great": "ok"}},
    ]
    (tmp_path / "d.jsonl").write_text("".join(json.dumps(r) + "\n" for r in records))
    done = _convoeval(
        "run", "d.jsonl", "-m", "rubrics_score", "--judge", "openai/test-model",
        "--base-url", fault_server.url, "--api-key", "k", "-o", "r.jsonl", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 2, done.stderr
    assert (
        "d.jsonl:2: rubrics: rubric key 'great' names no level number (needed by rubrics_score)"
        in done.stderr
    )
    assert fault_server.attempts == 0
