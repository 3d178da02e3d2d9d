"""A wrong API key (issue 32, "Keys"): the judge's server refuses it (401/403) and the run stops
at the first refusal, says so with the server's message scrubbed of the key, sends nothing more
and exits 5 (DESIGN §8), keeping the rows already written. The start-up check sends an
authenticated request, so a wrong key is usually caught before any record is scored."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from _cli import convoeval
from convoeval import AIMessage, HumanMessage, MultiTurnSample

KEY = "sk-wrongkey-4Fh8Tq2Vn6Xc0Mb9Lw3Rz7Ys"
#: What OpenAI answers to a wrong key: the key, its start with the rest masked, and its end.
SAID = f"Incorrect API key provided: {KEY[:8]}{'*' * 20}{KEY[-4:]} (Bearer {KEY})"
GOAL = "agent_goal_accuracy_with_reference"
RELEVANT = {"verdicts": {"0": {"relevant": True, "reason": ""}}}
EXIT_AUTH = 5


def _data(path: Path, count: int) -> Path:
    with path.open("w") as handle:
        for i in range(count):
            sample = MultiTurnSample(
                user_input=[
                    HumanMessage(content=f"where is order {i}?"),
                    AIMessage(content=f"order {i} ships tomorrow"),
                ],
                reference=f"the user learns when order {i} ships",
                id=f"o{i}",
            )
            handle.write(json.dumps(sample.to_dict()) + "\n")
    return path


def _args(url: str, *more: str) -> list[str]:
    return [
        "run", "d.jsonl", "--judge", "openai/test-model", "--base-url", url, "--api-key", KEY,
        "-o", "r.jsonl", "--no-cache", *more,
    ]  # fmt: skip


def _env(tmp_path: Path) -> dict[str, str]:
    env = {**os.environ, "CONVOEVAL_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("OPENAI_API_KEY", None)
    return env


def _convoeval(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return convoeval(*args, cwd=tmp_path, env=_env(tmp_path))


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _says_refused_without_the_key(status: int, stderr: str, stdout: str) -> None:
    assert f"HTTP {status}" in stderr and "Incorrect API key provided" in stderr, stderr
    assert "[REDACTED]" in stderr and "--retry-failed" not in stderr
    for shown in (stderr, stdout):
        assert KEY[:12] not in shown and KEY[-12:] not in shown and KEY[:8] + "*" not in shown


def test_a_wrong_key_is_caught_by_the_start_up_check_before_any_record(
    tmp_path: Path, fault_server: Any
) -> None:
    fault_server.models_answer(401, SAID).error(401, SAID).forever()
    _data(tmp_path / "d.jsonl", 12)
    done = _convoeval(tmp_path, *_args(fault_server.url, "-m", f"conversation_relevancy,{GOAL}"))
    assert done.returncode == EXIT_AUTH, done.stderr
    # One authenticated request, the start-up check's; no record was sent.
    assert [h["authorization"] for h in fault_server.model_requests] == [f"Bearer {KEY}"]
    assert fault_server.attempts == 0
    _says_refused_without_the_key(401, done.stderr, done.stdout)
    assert "nothing was scored" in done.stderr
    assert _rows(tmp_path / "r.jsonl") == []


@pytest.mark.parametrize("status", [401, 403])
def test_a_server_whose_start_up_check_proves_nothing_gets_one_request(
    tmp_path: Path, fault_server: Any, status: int
) -> None:
    """`GET /models` unknown to the server (404; or public, as llama.cpp's): the first judge
    request's refusal stops the run, and nothing more is sent."""
    fault_server.error(status, SAID).forever()
    _data(tmp_path / "d.jsonl", 12)
    args = _args(fault_server.url, "-m", f"conversation_relevancy,{GOAL}", "--concurrency", "1")
    done = _convoeval(tmp_path, *args)
    assert done.returncode == EXIT_AUTH, done.stderr
    assert len(fault_server.model_requests) == 1 and fault_server.attempts == 1
    _says_refused_without_the_key(status, done.stderr, done.stdout)


def test_a_refusal_mid_run_stops_at_once_and_keeps_the_rows_written(
    tmp_path: Path, fault_server: Any
) -> None:
    """The key is revoked after three answers: the fourth request is refused, the run stops
    without sending a fifth, the three rows written stay, and a run with the key working again
    resumes after them."""
    release = threading.Event()
    fault_server.models_answer(200)
    for _ in range(3):
        fault_server.reply(RELEVANT)
    fault_server.error(401, SAID, hold=release).forever()  # held until the rows are on disk
    _data(tmp_path / "d.jsonl", 12)
    args = _args(fault_server.url, "-m", "conversation_relevancy", "--concurrency", "1")
    process = subprocess.Popen(
        [sys.executable, "-m", "convoeval.cli", *args],
        cwd=tmp_path,
        env=_env(tmp_path),
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    out = tmp_path / "r.jsonl"
    deadline = time.monotonic() + 120
    while process.poll() is None and time.monotonic() < deadline:
        if out.exists() and out.read_text().count("\n") >= 3:
            break
        time.sleep(0.02)
    release.set()
    stdout, stderr = process.communicate(timeout=120)
    assert process.returncode == EXIT_AUTH, stderr
    assert fault_server.attempts == 4  # three answered, the refused one, nothing after it
    _says_refused_without_the_key(401, stderr, stdout)
    assert "the rows written so far are kept in r.jsonl" in stderr
    rows = _rows(out)
    assert [r["index"] for r in rows] == [0, 1, 2]
    assert all(r["scores"]["conversation_relevancy"] == 1.0 and not r["errors"] for r in rows)

    fault_server.default = None
    fault_server.reply(RELEVANT).forever()
    again = _convoeval(tmp_path, *args)
    assert again.returncode == 0, again.stderr
    assert [r["index"] for r in _rows(out)] == list(range(12))
    assert fault_server.attempts == 4 + 9  # only the records not written before


def test_requests_in_flight_at_the_refusal_are_the_only_others_sent(
    tmp_path: Path, fault_server: Any
) -> None:
    """Three requests are in flight (the limit) when the refusals come back: none after."""
    fault_server.error(401, SAID, gather=3).forever()
    _data(tmp_path / "d.jsonl", 12)
    args = _args(fault_server.url, "-m", "conversation_relevancy", "--concurrency", "3")
    done = _convoeval(tmp_path, *args)
    assert done.returncode == EXIT_AUTH, done.stderr
    assert fault_server.peak == 3 and fault_server.attempts == 3
    _says_refused_without_the_key(401, done.stderr, done.stdout)


def test_a_403_from_the_models_route_does_not_stop_a_key_that_may_chat(
    tmp_path: Path, fault_server: Any
) -> None:
    """A key restricted to some endpoints may be refused the model list and still chat."""
    fault_server.models_answer(403, "Missing scopes: api.model.read")
    fault_server.reply(RELEVANT).forever()
    _data(tmp_path / "d.jsonl", 3)
    done = _convoeval(tmp_path, *_args(fault_server.url, "-m", "conversation_relevancy"))
    assert done.returncode == 0, done.stderr
    assert len(fault_server.model_requests) == 1 and fault_server.attempts == 3
