"""Every `convoeval run` option that reaches an LLM judge, seen where it lands: at a local
OpenAI-compatible server (the request bodies, their headers, how many, how many at once, when
the client hung up); and resuming a results file with another judge, refused word for word."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

from _cli import convoeval

if TYPE_CHECKING:
    from conftest import FaultServer

GOAL = "agent_goal_accuracy_with_reference"
GOOD_GOAL = {"end_state": "the order was found", "achieved": True, "reason": "it was found"}
KEY = "sk-test-flag-key-4d1e"


def _env(tmp_path: Path, **extra: str) -> dict[str, str]:
    """The environment of a run: its own judge cache, no OpenAI variables but `extra`."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("OPENAI_")}
    return {**env, "CONVOEVAL_CACHE_DIR": str(tmp_path / "cache"), **extra}


def _data(path: Path, count: int) -> Path:
    """`count` records for the goal metric (one judge request each)."""
    with path.open("w") as handle:
        for i in range(count):
            record = {
                "user_input": [
                    {"type": "human", "content": f"where is order {i}?"},
                    {"type": "ai", "content": f"order {i} ships tomorrow"},
                ],
                "reference": f"the user learns when order {i} ships",
                "id": f"o{i}",
            }
            handle.write(json.dumps(record) + "\n")
    return path


def _args(url: str, *options: str, model: str = "test-model") -> list[str]:
    """`convoeval run` of d.jsonl (written beforehand) with the goal metric against `url`."""
    return ["run", "d.jsonl", "-m", GOAL, "-o", "r.jsonl", "--judge", f"openai/{model}",
            "--base-url", url, *options]  # fmt: skip


def _run(tmp_path: Path, url: str, *options: str, env: dict[str, str] | None = None) -> Any:
    """`_args` run in `tmp_path`, by default with `_env`."""
    return convoeval(*_args(url, *options), cwd=tmp_path, env=env or _env(tmp_path))


def _schema(body: dict[str, Any]) -> dict[str, Any]:
    schema: dict[str, Any] = body["response_format"]["json_schema"]["schema"]
    return schema


def test_reason_first_asks_for_the_rationale_before_the_verdict(
    tmp_path: Path, fault_server: FaultServer
) -> None:
    _data(tmp_path / "d.jsonl", 1)
    fault_server.reply(GOOD_GOAL).forever()
    plain = _run(tmp_path, fault_server.url, "--api-key", KEY, "--no-cache")
    assert plain.returncode == 0, plain.stderr
    first = _run(
        tmp_path, fault_server.url, "--api-key", KEY, "--no-cache", "--reason-first", "--overwrite"
    )
    assert first.returncode == 0, first.stderr
    without, with_flag = (list(_schema(body)["properties"]) for body in fault_server.bodies)
    assert without == ["end_state", "achieved", "reason"]
    assert with_flag == ["reason", "end_state", "achieved"]


def test_concurrency_sets_the_requests_in_flight(tmp_path: Path, fault_server: FaultServer) -> None:
    # Every request is held unanswered: with a limit of 3 the run sends 3 and then cannot send
    # a 4th (any other limit sends all 9 at once), until the server lets them go.
    _data(tmp_path / "d.jsonl", 9)
    fault_server.reply(GOOD_GOAL).forever()
    fault_server.hold(lambda body: True)
    args = _args(fault_server.url, "--api-key", KEY, "--no-cache", "--concurrency", "3")
    command = [sys.executable, "-m", "convoeval.cli", *args]
    process = subprocess.Popen(
        command, cwd=tmp_path, env=_env(tmp_path), stdout=subprocess.PIPE, stderr=subprocess.PIPE
    )
    try:
        assert fault_server.wait_until(lambda server: server.holding == 3, timeout=120)
        # The bound is the point here: a 4th request would come at once, it does not in 2 s.
        assert not fault_server.wait_until(lambda server: server.attempts > 3, timeout=2)
        fault_server.release()
        _, stderr = process.communicate(timeout=120)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 0, stderr
    assert fault_server.attempts == 9 and fault_server.peak == 3


def test_timeout_hangs_up_on_a_stalled_request(tmp_path: Path, fault_server: FaultServer) -> None:
    # The server would answer after 60 s; the client hangs up at the timeout (1 s), long before
    # the default one (60 s). One attempt: the retry budget (0.5 s) is spent by then.
    _data(tmp_path / "d.jsonl", 1)
    fault_server.stall(60).forever()
    done = _run(
        tmp_path, fault_server.url, "--api-key", KEY, "--no-cache",
        "--timeout", "1", "--retry-budget", "0.5",
    )  # fmt: skip
    assert done.returncode == 4, done.stderr
    assert fault_server.wait_until_idle(timeout=30)
    assert fault_server.attempts == fault_server.abandoned == 1
    [held] = fault_server.hangups
    assert held < 30, f"the client held the stalled request {held:.1f} s"
    row = json.loads((tmp_path / "r.jsonl").read_text())
    assert "timed out after 1 s" in row["errors"][GOAL]["message"]


def test_retry_budget_bounds_the_retries(tmp_path: Path, fault_server: FaultServer) -> None:
    # Every answer is a 429 asking to come back in 1 s. A budget of 0.5 s cannot pay for that
    # wait (one request); 1.9 s pays for one wait and not a second (two requests).
    _data(tmp_path / "d.jsonl", 1)
    fault_server.error(429, "slow down", {"Retry-After": "1"}).forever()
    sent = []
    for budget in ("0.5", "1.9"):
        before = fault_server.attempts
        done = _run(
            tmp_path, fault_server.url, "--api-key", KEY, "--no-cache", "--overwrite",
            "--retry-budget", budget,
        )  # fmt: skip
        assert done.returncode == 4, done.stderr
        sent.append(fault_server.attempts - before)
        row = json.loads((tmp_path / "r.jsonl").read_text())
        assert f"the retry time budget ({budget} s) is spent" in row["errors"][GOAL]["message"]
    assert sent == [1, 2]


def test_judge_samples_sends_each_step_that_many_times(
    tmp_path: Path, fault_server: FaultServer
) -> None:
    _data(tmp_path / "d.jsonl", 2)
    fault_server.reply(GOOD_GOAL).forever()
    done = _run(tmp_path, fault_server.url, "--api-key", KEY, "--no-cache", "--judge-samples", "3")
    assert done.returncode == 0, done.stderr
    assert fault_server.attempts == 6  # 2 records x 1 step x 3 samples
    asked = [body["messages"][-1]["content"] for body in fault_server.bodies]
    assert sorted(asked.count(text) for text in set(asked)) == [3, 3]
    assert all(body.get("temperature", 0) > 0 for body in fault_server.bodies)  # samples vary
    row = json.loads((tmp_path / "r.jsonl").read_text().splitlines()[0])
    assert row["scores"][GOAL] == 1.0


def test_no_cache_asks_again_what_the_cache_would_answer(
    tmp_path: Path, fault_server: FaultServer
) -> None:
    _data(tmp_path / "d.jsonl", 2)
    fault_server.reply(GOOD_GOAL).forever()
    counts = []
    for options in ([], ["--overwrite"], ["--overwrite", "--no-cache"]):
        before = fault_server.attempts
        done = _run(tmp_path, fault_server.url, "--api-key", KEY, *options)
        assert done.returncode == 0, done.stderr
        counts.append(fault_server.attempts - before)
    assert counts == [2, 0, 2]  # asked, then answered from the cache, then asked again


def test_base_url_and_api_key_reach_the_server_and_win_over_the_environment(
    tmp_path: Path, fault_server: FaultServer
) -> None:
    _data(tmp_path / "d.jsonl", 1)
    fault_server.reply(GOOD_GOAL).forever()
    closed = "http://127.0.0.1:9/v1"  # where the environment points: nothing listens there
    env = _env(tmp_path, OPENAI_BASE_URL=closed, OPENAI_API_KEY="sk-env-key")
    done = _run(tmp_path, fault_server.url, "--api-key", KEY, "--no-cache", env=env)
    assert done.returncode == 0, done.stderr
    assert fault_server.attempts == 1
    assert fault_server.headers[0]["authorization"] == f"Bearer {KEY}"
    assert fault_server.bodies[0]["model"] == "test-model"
    # Without the options, the environment's are used.
    env = _env(tmp_path, OPENAI_BASE_URL=fault_server.url, OPENAI_API_KEY="sk-env-key")
    args = ["run", "d.jsonl", "-m", GOAL, "-o", "e.jsonl", "--judge", "openai/test-model"]
    from_env = convoeval(*args, "--no-cache", cwd=tmp_path, env=env)
    assert from_env.returncode == 0, from_env.stderr
    assert fault_server.attempts == 2
    assert fault_server.headers[1]["authorization"] == "Bearer sk-env-key"


@pytest.mark.parametrize("change", ["model", "endpoint"])
def test_resuming_with_another_judge_exits_2_naming_the_old_and_the_new(
    tmp_path: Path, fault_server: FaultServer, change: str
) -> None:
    _data(tmp_path / "d.jsonl", 2)
    fault_server.reply(GOOD_GOAL).forever()
    url = fault_server.url
    first = _run(tmp_path, url, "--api-key", KEY)
    assert first.returncode == 0, first.stderr
    rows = (tmp_path / "r.jsonl").read_bytes()
    other = url.replace("/v1", "/v2")  # the same server, another endpoint
    model, base = ("other-model", url) if change == "model" else ("test-model", other)
    again = convoeval(*_args(base, "--api-key", KEY, model=model), cwd=tmp_path, env=_env(tmp_path))
    assert (again.returncode, again.stdout) == (2, "")
    assert again.stderr == (
        f"error: r.jsonl cannot be resumed by this run: {GOAL}'s judge differs "
        f"(openai/test-model test-model {url} -> openai/{model} {model} {base}); use "
        "--overwrite (overwrite=True in Python) to start again, or another output file (-o)\n"
    )
    assert (tmp_path / "r.jsonl").read_bytes() == rows
    assert fault_server.attempts == 2  # the first run's requests only
