"""Limits that limit (issue 32 part 3): one concurrency limit per endpoint across threads and
event loops, the command line's judges sharing their endpoint's limit, sync calls that close
what they open, and a structured-output downgrade that lasts for one run.

Every request goes to a real socket on 127.0.0.1. A server that must show a limit being broken
holds each request until more than the limit are in flight (so a broken limit shows at once)
or a hold time passes (so a kept limit costs only that time per wave): a kept limit can never
look broken, however loaded the machine.
"""

from __future__ import annotations

import asyncio
import json
import os
import socket
import subprocess
import threading
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from _parcel import PARCEL, parcels

from _cli import convoeval
from convoeval import ConversationalGEval, evaluate
from convoeval.judges import FakeJudge, JudgePanel, OpenAIJudge, Step
from convoeval.judges.core.backend import BackendFailure, Failure
from convoeval.judges.core.endpoints import LEARNED_TTL_S, EndpointRegistry, run_scope
from convoeval.metrics.agent_goal_accuracy import AgentGoalAccuracyWithoutReference
from convoeval.runner import JudgeUnreachableError
from convoeval.testing import assert_conversation

if TYPE_CHECKING:
    from conftest import FakeTime, FaultServer, Verdict

GOAL = "agent_goal_accuracy"
GOOD_GOAL = {"user_goal": "find the parcel", "end_state": "found", "achieved": True, "reason": "ok"}
GOOD_GEVAL = {"score": 8, "reason": "helpful"}
STATEMENT = {"verdict": True, "label": "yes"}


def _answer(body: dict[str, Any]) -> dict[str, Any]:
    """A valid answer to the goal step or the G-Eval step, by the step named in the request."""
    text = json.dumps(body)
    return GOOD_GEVAL if "conversational_geval" in text else GOOD_GOAL


def _hold_until_over(server: FaultServer, limit: int, hold: float) -> None:
    """Make `server` hold every request until more than `limit` are in flight or `hold` s pass."""
    original = server._next

    def held(body: dict[str, Any], headers: dict[str, str]) -> Any:
        action = original(body, headers)
        with server._changed:
            server._changed.wait_for(lambda: server.peak > limit or server.closing.is_set(), hold)
        return action

    server._next = held  # type: ignore[method-assign]


def test_threads_sharing_a_judge_keep_its_limit_of_one(fault_server: FaultServer) -> None:
    fault_server.responder = _answer
    _hold_until_over(fault_server, 1, hold=1.0)
    judge = OpenAIJudge("m", base_url=fault_server.url, concurrency=1, cache=False)
    metric = AgentGoalAccuracyWithoutReference(judge=judge)
    values: list[float | None] = []

    def score() -> None:
        values.append(metric.score_sync(PARCEL).value)

    threads = [threading.Thread(target=score) for _ in range(4)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(60)
    assert values == [1.0] * 4
    assert fault_server.attempts == 4 and fault_server.peak == 1


def _write(path: Path, count: int) -> Path:
    path.write_text("".join(json.dumps(s.to_dict()) + "\n" for s in parcels(count)))
    return path


def _run(tmp_path: Path, url: str, *extra: str) -> subprocess.CompletedProcess[str]:
    command = ["run", "d.jsonl", "-m", GOAL, "-q"]
    command += ["--judge", "openai/a", "--judge", "openai/b", "--base-url", url, "--no-cache"]
    return convoeval(*command, "-o", "r.jsonl", *extra, cwd=tmp_path)


@pytest.mark.parametrize(("flag", "limit"), [((), 16), (("--concurrency", "3"), 3)])
def test_cli_judges_on_one_server_share_its_limit(
    tmp_path: Path, fault_server: FaultServer, flag: tuple[str, ...], limit: int
) -> None:
    # 10 records x 2 judges = 20 requests: two judges with a limit each would put 2 x limit
    # in flight (20 with the default), above the endpoint's one limit.
    fault_server.responder = _answer
    _hold_until_over(fault_server, limit, hold=0.5)
    _write(tmp_path / "d.jsonl", 10)
    done = _run(tmp_path, fault_server.url, *flag)
    assert done.returncode == 0, done.stderr
    assert fault_server.attempts == 20
    assert fault_server.peak <= limit


def _open_fds() -> int:
    return len(os.listdir("/proc/self/fd"))


@pytest.mark.skipif(not os.path.isdir("/proc/self/fd"), reason="counts /proc/self/fd")
def test_sync_calls_close_the_connections_they_open(
    fault_server: FaultServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    # HTTP/1.1 keeps each connection open until the client closes it (as real servers do);
    # both ends are sockets of this process, so a connection left open counts twice.
    fault_server._httpd.RequestHandlerClass.protocol_version = "HTTP/1.1"
    fault_server.responder = _answer
    monkeypatch.setenv("OPENAI_BASE_URL", fault_server.url)
    judge = OpenAIJudge("m", cache=False)
    goal = AgentGoalAccuracyWithoutReference(judge=judge)
    geval = ConversationalGEval("helpful", criteria="The assistant helps.", model=judge)
    calls = {
        "score_sync": lambda: goal.score_sync(PARCEL),
        "measure": lambda: geval.measure(PARCEL),
        "asyncio.run(score)": lambda: asyncio.run(goal.score(PARCEL)),
        "assert_conversation": lambda: assert_conversation(PARCEL, [goal], judge),
        # a judge made from a spec by the call itself, with its answer cache (a SQLite file)
        "assert_conversation with a spec": lambda: assert_conversation(PARCEL, [GOAL], "openai/m"),
    }
    for name, call in calls.items():
        call()  # the first call loads what every later one reuses
        fault_server.wait_until_idle()
        before = _open_fds()
        for _ in range(20):
            call()
        fault_server.wait_until_idle()
        grown = _open_fds() - before
        assert grown <= 4, f"20 {name} calls left {grown} more file descriptors open"


def test_a_format_downgrade_lasts_for_the_run_only(fault_server: FaultServer) -> None:
    fault_server.error(400, "response_format json_schema is not supported by this server")
    fault_server.reply(GOOD_GOAL)
    options: dict[str, Any] = {"base_url": fault_server.url, "cache": False}
    first = evaluate([PARCEL], [GOAL], "openai/m", show_progress=False, **options)
    assert first.failed() == 0
    modes = [b.get("response_format", {}).get("type") for b in fault_server.bodies]
    assert modes == ["json_schema", "json_object"]

    # The server now takes json_schema: a new run asks with it again.
    fault_server.responder = _answer
    second = evaluate([PARCEL], [GOAL], "openai/m", show_progress=False, **options)
    assert second.failed() == 0
    assert fault_server.bodies[2]["response_format"]["type"] == "json_schema"


async def test_a_lesson_lasts_for_its_run_and_ten_minutes_outside_one(
    verdict_step: Step[Verdict], fake_time: FakeTime
) -> None:
    registry = EndpointRegistry(clock=fake_time.clock)
    refused = BackendFailure(Failure.FORMAT_REJECTED, "HTTP 400: json_schema unsupported")
    judge = FakeJudge({"statement_check": [refused, STATEMENT] * 3}, registry=registry)
    with run_scope():  # learned in a run: every later request of the run, no other run
        await judge.run(verdict_step, {"statement": "a"})
        assert registry.mode("fake:fake", "fake") == "json_object"
    assert registry.mode("fake:fake", "fake") == "json_schema"
    with run_scope():
        assert registry.mode("fake:fake", "fake") == "json_schema"

    await judge.run(verdict_step, {"statement": "b"})  # outside a run: for LEARNED_TTL_S
    fake_time.now += LEARNED_TTL_S - 1
    assert registry.mode("fake:fake", "fake") == "json_object"
    fake_time.now += 1
    assert registry.mode("fake:fake", "fake") == "json_schema"
    assert LEARNED_TTL_S == 600  # the ten minutes docs/judges.md states


def _closed_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def test_a_panel_scores_with_the_members_it_can_reach(
    tmp_path: Path, fault_server: FaultServer
) -> None:
    fault_server.responder = _answer
    closed = _closed_url()
    members = [OpenAIJudge(m, base_url=fault_server.url, cache=False) for m in ("a", "b")]
    panel = JudgePanel([*members, OpenAIJudge("c", base_url=closed, cache=False)])
    out = tmp_path / "r.jsonl"
    result = evaluate(parcels(2), [GOAL], panel, output=out, show_progress=False)
    assert result.failed() == 0 and fault_server.attempts == 4  # a and b, for each record
    for row in result.rows():
        assert row["scores"][GOAL] == 1.0
        [record] = row["details"][GOAL]["judge_panel"]
        assert record["left_out"] == ["openai/c"] and record["answered"] == 2
        assert f"left out of the panel: cannot reach {closed}" in record["errors"]["openai/c"]
    meta = json.loads((tmp_path / "r.jsonl.meta.json").read_text())
    assert list(meta["panel_left_out"]) == ["openai/c"]

    # Two of three unreachable leave no majority: nothing is scored.
    alone = JudgePanel([members[0], *(OpenAIJudge(m, base_url=closed) for m in ("c", "d"))])
    with pytest.raises(JudgeUnreachableError, match="only 1 of its 3 members can be reached"):
        evaluate(parcels(1), [GOAL], alone, output=tmp_path / "none.jsonl", show_progress=False)
    assert fault_server.attempts == 4
