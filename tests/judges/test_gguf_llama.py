"""Every metric that asks a judge, through `gguf:` on the SmolLM2 file the suite installs, in one
run (one llama.cpp start): a score or a recorded judge failure for every pair, never a crash or
a hang, and no connection that leaves 127.0.0.1 (an audit hook sees every socket connect of this
process). Plumbing, not verdict quality: a 135M model judges nothing well."""

from __future__ import annotations

import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any, ClassVar
from urllib.parse import urlsplit

import pytest

from convoeval import MultiTurnSample, evaluate
from convoeval.judges import resolve_judge
from convoeval.judges.gguf.judge import GGUFJudge
from convoeval.metrics import METRICS, Ask, Metric, MetricResult, describe_metrics

#: Addresses this process connected to while `_WATCHING` holds True.
_CONNECTS: list[Any] = []
_WATCHING = [False]


def _audit(event: str, args: tuple[Any, ...]) -> None:
    if event == "socket.connect" and _WATCHING[0]:
        _CONNECTS.append(args[1])


sys.addaudithook(_audit)  # audit hooks cannot be removed: it records only while watching

SAMPLE = {
    "id": "order",
    "user_input": [
        {"type": "human", "content": "Where is my order VB-1042? I'm Ana."},
        {
            "type": "ai",
            "content": "",
            "tool_calls": [{"name": "get_order", "args": {"order_id": "VB-1042"}, "id": "c1"}],
        },
        {"type": "tool", "content": '{"status": "in_transit"}', "tool_call_id": "c1"},
        {"type": "ai", "content": "Ana, VB-1042 is in transit."},
    ],
    "reference": "The user learns the order is in transit.",
    "reference_topics": ["orders"],
    "chatbot_role": "a polite shop assistant",
    "rubrics": {"1": "unhelpful", "2": "helpful"},
}


@pytest.mark.llm
def test_every_judge_metric_runs_through_gguf_on_loopback_only(
    smollm2_gguf: Path, tmp_path: Path
) -> None:
    names = [m["name"] for m in describe_metrics() if m["uses_judge"]]
    metrics: list[Any] = [n for n in names if n not in ("aspect_critic", "conversational_geval")]
    metrics += [
        METRICS["aspect_critic"](definition="Is the reply polite?"),
        METRICS["conversational_geval"](criteria="Is the reply correct?"),
    ]
    # One answer token and one request at a time: every step's answer is cut off, re-asked (its
    # prompt then read from the slot's cache) and recorded as a failure, at the least CPU (the
    # prompts are the cost: 27 s on 1 thread, against 33 s with 12 tokens and 2 slots).
    spec = f"gguf:{smollm2_gguf} threads=1 ctx=2048 max_tokens=1 concurrency=1 timeout=60"
    judge = resolve_judge(spec)
    assert isinstance(judge, GGUFJudge)
    _WATCHING[0] = True
    try:
        result = evaluate(
            [SAMPLE], metrics, judge, output=tmp_path / "r.jsonl", show_progress=False
        )
    finally:
        _WATCHING[0] = False
    _assert_stopped(judge)
    row = next(iter(result.rows()))
    assert sorted(row["scores"]) == sorted(names)
    for name in names:  # a score, or a judge failure recorded with its reason
        assert row["scores"][name] is not None or row["errors"].get(name), (name, row)
    hosts = {address[0] for address in _CONNECTS if isinstance(address, tuple)}
    assert hosts == {"127.0.0.1"}, hosts
    assert result.meta["judge"]["kind"] == "gguf"
    assert result.usage.requests > 0
    assert result.cost() == (0.0, "the gguf judge runs locally (llama.cpp in this process)")


def _assert_stopped(judge: GGUFJudge) -> None:
    """The judge's llama.cpp server is stopped: nothing listens on its port any more."""
    assert not judge.server.running
    port = urlsplit(judge.chat.base_url).port
    assert port is not None  # it had started (its base URL names the port it listened on)
    with pytest.raises(ConnectionRefusedError):
        socket.create_connection(("127.0.0.1", port), timeout=5).close()


_START_STOP = """
import sys
from pathlib import Path
from convoeval.judges.gguf.server import LlamaServer
for cycle in range(int(sys.argv[2])):
    server = LlamaServer(Path(sys.argv[1]), threads=1, ctx=256, slots=1)
    server.start()
    server.stop()
    print(cycle, flush=True)
"""


@pytest.mark.llm
def test_a_server_stopped_as_soon_as_it_started_stops(smollm2_gguf: Path) -> None:
    """llama.cpp's task loop marks itself running when it begins, so a stop that came earlier was
    lost and the stop waited for ever: a short run (the pytest plugin's session, a one-record
    check) hung at its end on a busy machine. With a busy core beside it, the old code hung
    within four start-and-stop cycles in each of three tries; `start()` now returns once the
    loop answers."""
    source = str(Path(__file__).resolve().parents[2] / "src")
    busy = subprocess.Popen([sys.executable, "-c", "while True: pass"])
    try:
        done = subprocess.run(
            [sys.executable, "-c", _START_STOP, str(smollm2_gguf), "5"],
            capture_output=True, text=True, timeout=60,
            env={**os.environ, "PYTHONPATH": source},
        )  # fmt: skip
    except subprocess.TimeoutExpired as exc:
        pytest.fail(f"a stop never returned; cycles done: {exc.stdout!r}")
    finally:
        busy.kill()
        busy.wait()
    assert done.returncode == 0, done.stderr
    assert done.stdout.split() == ["0", "1", "2", "3", "4"]


class _Interrupted(Metric):
    """Test metric (not registered): Ctrl-C while it scores (the judge's server has started)."""

    name: ClassVar[str] = "interrupted"
    required: ClassVar[tuple[str, ...]] = ("user_input",)
    uses_judge: ClassVar[bool] = True

    async def _score(self, sample: MultiTurnSample, ask: Ask) -> MetricResult:
        raise KeyboardInterrupt


@pytest.mark.llm
def test_an_interrupted_run_stops_the_server(smollm2_gguf: Path, tmp_path: Path) -> None:
    judge = resolve_judge(f"gguf:{smollm2_gguf} threads=1 ctx=512")
    assert isinstance(judge, GGUFJudge)
    with pytest.raises(KeyboardInterrupt):
        evaluate(
            [SAMPLE], [_Interrupted()], judge, output=tmp_path / "r.jsonl", show_progress=False
        )
    assert judge.chat.base_url.startswith("http://127.0.0.1:")  # it had started
    _assert_stopped(judge)


_INNER_CONFTEST = """
import socket
from pathlib import Path

def pytest_sessionfinish(session):  # after the session's fixtures were torn down
    port = int(Path("port.txt").read_text())
    try:
        socket.create_connection(("127.0.0.1", port), timeout=5).close()
    except ConnectionRefusedError:
        Path("after.txt").write_text("stopped")
    else:
        Path("after.txt").write_text("still listening")
"""
_INNER_TEST = """
from pathlib import Path
from urllib.parse import urlsplit

KEPT = []  # the judge outlives the session: only closing it stops its server

def test_uses_the_session_judge(convoeval_judge):
    assert convoeval_judge.server.running  # started by the fixture's reachability check
    KEPT.append(convoeval_judge)
    Path("port.txt").write_text(str(urlsplit(convoeval_judge.chat.base_url).port))
"""


@pytest.mark.llm
def test_the_pytest_plugins_gguf_judge_stops_with_the_session(
    smollm2_gguf: Path, tmp_path: Path
) -> None:
    (tmp_path / "conftest.py").write_text(_INNER_CONFTEST)
    (tmp_path / "test_inner.py").write_text(_INNER_TEST)
    source = str(Path(__file__).resolve().parents[2] / "src")
    command = [sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-n", "0"]
    command += ["--convoeval-judge", f"gguf:{smollm2_gguf} threads=1 ctx=512", "test_inner.py"]
    done = subprocess.run(
        command, cwd=tmp_path, capture_output=True, text=True, timeout=300,
        env={**os.environ, "PYTHONPATH": source},
    )  # fmt: skip
    assert done.returncode == 0, done.stdout + done.stderr
    assert (tmp_path / "after.txt").read_text() == "stopped"


class _Quiet(Metric):
    """Test metric (not registered): asks its judge nothing and scores 1."""

    name: ClassVar[str] = "quiet"
    required: ClassVar[tuple[str, ...]] = ("user_input",)
    uses_judge: ClassVar[bool] = True

    async def _score(self, sample: MultiTurnSample, ask: Ask) -> MetricResult:
        return MetricResult(1.0, "fine")


@pytest.mark.llm
def test_assert_conversation_closes_the_gguf_judge_it_made(
    smollm2_gguf: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from convoeval.testing import assert_conversation

    made: list[GGUFJudge] = []  # kept alive here: only closing it stops its server
    init = GGUFJudge.__init__

    def recording(self: GGUFJudge, *args: Any, **kwargs: Any) -> None:
        init(self, *args, **kwargs)
        made.append(self)

    monkeypatch.setattr(GGUFJudge, "__init__", recording)
    sample = MultiTurnSample.model_validate(SAMPLE)
    assert_conversation(sample, [_Quiet()], judge=f"gguf:{smollm2_gguf} threads=1 ctx=512")
    assert len(made) == 1
    _assert_stopped(made[0])
