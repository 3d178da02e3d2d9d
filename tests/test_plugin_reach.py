"""A judge that cannot be reached fails a test session fast (issue 32 part 3): the pytest plugin
and `assert_conversation` check each judge endpoint once per session, as `convoeval run` does
before scoring, instead of every test waiting out the judge's whole retry budget."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

import pytest

import convoeval
from _plugins import NO_UNUSED
from convoeval import AIMessage, HumanMessage, MultiTurnSample
from convoeval.judges import OpenAIJudge
from convoeval.runner import JudgeUnreachableError
from convoeval.runner._reach_judges import check_judges

GOAL = {"user_goal": "find it", "end_state": "found", "achieved": True, "reason": "found"}
TESTS = """
from convoeval.testing import assert_conversation, convoeval_cases


@convoeval_cases("chats.jsonl")
def test_with_the_session_judge(conversation, convoeval_judge):
    assert_conversation(conversation, ["agent_goal_accuracy"], convoeval_judge)


@convoeval_cases("chats.jsonl")
def test_with_a_judge_spec(conversation):
    assert_conversation(conversation, ["agent_goal_accuracy"], "openai/m")
"""


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def _chats(path: Path, count: int) -> None:
    samples = [
        MultiTurnSample(
            user_input=[HumanMessage(content=f"where is order {i}?"), AIMessage(content="here")],
            id=f"c{i}",
        )
        for i in range(count)
    ]
    path.write_text("".join(json.dumps(s.to_dict()) + "\n" for s in samples))


def _session(tmp_path: Path, url: str) -> subprocess.CompletedProcess[str]:
    """Run TESTS on 3 conversations with the judge `openai/m` at `url`, in a pytest of its own."""
    (tmp_path / "test_bot.py").write_text(TESTS)
    _chats(tmp_path / "chats.jsonl", 3)
    source = str(Path(convoeval.__file__).resolve().parents[1])  # this checkout's src
    env = {**os.environ, "PYTHONPATH": source, "OPENAI_BASE_URL": url, "OPENAI_API_KEY": "sk-x"}
    env["CONVOEVAL_CACHE_DIR"] = str(tmp_path / "cache")
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", *NO_UNUSED, "-rfE"]
    try:
        return subprocess.run(
            [*command, "--convoeval-judge", "openai/m"],
            cwd=tmp_path,
            env=env,
            capture_output=True,
            text=True,
            timeout=240,  # each test would wait out the 120 s retry budget without the check
        )
    except subprocess.TimeoutExpired:
        pytest.fail("the session did not fail fast: its tests waited for the judge")


def test_a_session_whose_judge_is_down_fails_fast_with_the_reason(tmp_path: Path) -> None:
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    started = time.monotonic()
    done = _session(tmp_path, url)
    took = time.monotonic() - started
    out = done.stdout + done.stderr
    assert done.returncode == 1, out
    assert "3 failed, 3 errors" in out, out  # the fixture's tests error at setup
    assert out.count(f"cannot reach the judge at {url}") >= 6, out
    assert "convoeval: the session's judge cannot be reached" in out, out
    assert took < 30, f"took {took:.0f} s"


def test_a_session_checks_its_judge_endpoint_once(tmp_path: Path, fault_server: Any) -> None:
    connections = 0
    accept = fault_server._httpd.process_request

    def counted(request: Any, address: Any) -> None:
        nonlocal connections
        connections += 1
        accept(request, address)

    fault_server._httpd.process_request = counted
    fault_server.reply(GOAL).forever()
    done = _session(tmp_path, fault_server.url)
    assert done.returncode == 0, done.stdout + done.stderr
    # One judge request per conversation (the second test of each reads the answer cache),
    # each on its own connection (the server closes them), and one check for the session: a
    # connection to the endpoint and one authenticated `GET /models` for its key.
    assert fault_server.attempts == 3 and connections == 3 + 2


async def test_each_endpoint_is_checked_once_per_cache() -> None:
    port = _closed_port()
    # timeout=1: the fresh check's key request to a socket that never answers waits that long
    judge = OpenAIJudge("m", base_url=f"http://127.0.0.1:{port}/v1", cache=False, timeout=1)
    cache: dict[str, JudgeUnreachableError | None] = {}
    with pytest.raises(JudgeUnreachableError, match="cannot reach the judge"):
        await check_judges([judge], cache)
    with socket.socket() as server:  # the endpoint comes up: a cached answer does not see it
        server.bind(("127.0.0.1", port))
        server.listen()
        with pytest.raises(JudgeUnreachableError, match="cannot reach the judge"):
            await check_judges([judge], cache)
        await check_judges([judge])  # a fresh check reaches it
