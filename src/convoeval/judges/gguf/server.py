"""llama.cpp's server, run in this process by `xllamacpp` (the `convoeval[local]` extra) on one
GGUF file, listening on 127.0.0.1 only, on a free port. `LlamaServer` starts it on demand and
stops it when asked (or when the interpreter exits): the tests' fixture and the benchmarks use
the same class.
"""

from __future__ import annotations

import os
import threading
import weakref
from pathlib import Path
from typing import Any

from convoeval.judges.protocol.base import JudgeConfigError

#: The only address the server listens on.
HOST = "127.0.0.1"
#: Seconds the started server has to answer its first request before it counts as failed.
READY_TIMEOUT_S = 120.0
#: What to do when the optional extra is missing.
INSTALL_HINT = "pip install 'convoeval[local]'"


class LocalExtraMissing(JudgeConfigError):
    """`xllamacpp` (the `convoeval[local]` extra) is not installed."""


class ServerStartError(JudgeConfigError):
    """llama.cpp could not load the file or start its server."""


def default_threads() -> int:
    """CPU threads for llama.cpp: half the logical CPUs (about the physical cores), 1 to 4. More
    threads than free cores make llama.cpp's threads wait on each other at full speed."""
    return max(1, min(4, (os.cpu_count() or 2) // 2))


def require_xllamacpp() -> Any:
    """The `xllamacpp` module, or a one-line `LocalExtraMissing` saying how to install it."""
    try:
        import xllamacpp
    except ImportError as exc:
        raise LocalExtraMissing(
            f"the gguf judge runs llama.cpp through xllamacpp, which is not installed ({exc}): "
            f"{INSTALL_HINT}"
        ) from None
    return xllamacpp


class LlamaServer:
    """One llama.cpp server on `path`: `slots` requests at once, `ctx` tokens of context for
    each, `threads` CPU threads. `start()` returns its `/v1` base URL (starting it if needed),
    `stop()` ends it; both are safe from any thread."""

    def __init__(self, path: Path, *, threads: int, ctx: int, slots: int) -> None:
        self.path = path
        self.threads = threads
        self.ctx = ctx
        self.slots = slots
        self._server: Any = None
        self._url: str | None = None
        self._lock = threading.Lock()
        # stopped at interpreter exit (or when this object is collected) if nobody did before
        weakref.finalize(self, _drop, self.__dict__)

    @property
    def running(self) -> bool:
        return self._server is not None

    def start(self) -> str:
        """The server's base URL (`http://127.0.0.1:PORT/v1`), started now if it is not running."""
        with self._lock:
            if self._server is not None and self._url is not None:
                return self._url
            xllamacpp = require_xllamacpp()
            params = xllamacpp.CommonParams()
            params.model.path = str(self.path)
            params.hostnames = [HOST]
            params.port = 0
            params.n_parallel = self.slots
            params.n_ctx = self.ctx * self.slots  # llama.cpp splits it among the slots
            params.cpuparams.n_threads = self.threads
            params.cpuparams_batch.n_threads = self.threads
            # threads sleep, not spin, while they wait for work: on a laptop (or a machine
            # shared with other work) spinning burns the cores the rest of the run needs
            params.cpuparams.poll = 0
            params.cpuparams_batch.poll = 0
            params.verbosity = 0  # its own log stays quiet; failures are said below
            params.ui = False
            params.endpoint_slots = True  # `_wait_for_task_loop` asks it
            try:
                server = xllamacpp.Server(params)
            except RuntimeError as exc:
                raise ServerStartError(
                    f"llama.cpp could not load {self.path} ({exc}); check that it is a complete "
                    f"model file and that {self.ctx * self.slots} tokens of context fit in memory "
                    "(lower ctx= or --concurrency)"
                ) from None
            address = str(server.listening_address).rstrip("/")
            if not address.startswith(f"http://{HOST}:"):
                del server
                raise ServerStartError(f"llama.cpp listens on {address}, not on {HOST}; stopped")
            self._server = server
            try:
                _wait_for_task_loop(address)
            except ServerStartError:
                _drop(self.__dict__)
                raise
            self._url = f"{address}/v1"
            return self._url

    def stop(self) -> None:
        """Stop the server (nothing when it is not running); `start()` may start it again."""
        with self._lock:
            _drop(self.__dict__)


def _wait_for_task_loop(address: str) -> None:
    """Return once llama.cpp's task loop answers a request (`GET /slots` goes through it).

    The loop marks itself running when it begins, so a stop that came before that was lost and
    stopping then waited for ever (under load: tests/judges/test_gguf_llama.py). Plain
    http.client on purpose: one local request, no proxy settings to honour or avoid."""
    import http.client

    port = int(address.rsplit(":", 1)[1])
    connection = http.client.HTTPConnection(HOST, port, timeout=READY_TIMEOUT_S)
    try:
        connection.request("GET", "/slots")
        reply = connection.getresponse()
        reply.read()
    except OSError as exc:
        raise ServerStartError(f"llama.cpp on port {port} did not answer ({exc})") from None
    finally:
        connection.close()
    if reply.status != 200:
        raise ServerStartError(f"llama.cpp on port {port} answered GET /slots {reply.status}")


def _drop(state: dict[str, Any]) -> None:
    """Release the server object: its destructor stops llama.cpp and frees the model."""
    server = state.get("_server")
    state["_server"] = None
    state["_url"] = None
    del server
