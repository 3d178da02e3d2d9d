"""What judges learn about an endpoint and model while running, kept in one resettable registry.

A server that refuses `response_format` json_schema, or a model that refuses `temperature`, is
asked the adapted way by every later request and every judge on that endpoint and model, so the
refusal costs one request, not one per step. A lesson lasts for the run that learned it
(`run_scope`: one `evaluate()` or `convoeval run`), and a new run starts with none, so a server
fixed or upgraded since is asked the preferred way again; outside a run (a metric's `score` or
`score_sync`, `measure`, `assert_conversation` in a notebook or a service) a lesson lasts
`LEARNED_TTL_S` from when it was learned. The registry also holds each endpoint's shared default
concurrency limit, used by the judges that set none of their own (see `LLMJudge`). `tls_context`
is the TLS context of an endpoint's HTTP client: built only for https, and once per process.
"""

from __future__ import annotations

import functools
import os
import ssl
import threading
import time
import weakref
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from urllib.parse import urlsplit

from convoeval.judges.core.retry import DEFAULT_CONCURRENCY, Limiter

#: Structured-output modes, tried in this order: the server's json_schema support, its JSON mode,
#: then the schema in the prompt only.
MODES = ("json_schema", "json_object", "prompt")
#: Seconds a lesson learned outside a run lasts (documented in docs/judges.md).
LEARNED_TTL_S = 600.0


class _Run:
    """The identity of one run, for the lessons learned in it (weakly referenced)."""

    __slots__ = ("__weakref__",)


_RUN: ContextVar[_Run | None] = ContextVar("convoeval_endpoint_run", default=None)


@contextmanager
def run_scope() -> Iterator[None]:
    """One run: what its judges learn about endpoints (in its tasks) lasts until it ends, and
    nothing learned before or elsewhere applies inside it."""
    token = _RUN.set(_Run())
    try:
        yield
    finally:
        _RUN.reset(token)


@dataclass
class Learned:
    """What was learned about one (endpoint, model): the output mode and adapted parameters, and
    when the last lesson was learned (on the registry's clock; None: nothing learned)."""

    mode: int = 0
    adapted: set[str] = field(default_factory=set)
    clock: Callable[[], float] = field(default=time.monotonic, repr=False, compare=False)
    at: float | None = None

    def fall_back(self, mode: int) -> None:
        """Remember that `mode` (an index into MODES) is the first mode to try from now on."""
        self.mode = max(self.mode, mode)
        self.at = self.clock()

    def adapt(self, param: str) -> None:
        """Remember that `param` is refused: adapted (left out or renamed) from now on."""
        self.adapted.add(param)
        self.at = self.clock()


class EndpointRegistry:
    """Learned per-(endpoint, model) state, shared by the judges that use this registry: per run
    inside `run_scope`, else for `LEARNED_TTL_S` (`clock` tells the time: tests pass a fake)."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self._clock = clock
        self._lock = threading.Lock()
        self._learned: dict[tuple[str, str], Learned] = {}
        self._runs: weakref.WeakKeyDictionary[_Run, dict[tuple[str, str], Learned]] = (
            weakref.WeakKeyDictionary()
        )
        self._shared: dict[str, Limiter] = {}

    def learned(self, endpoint: str, model: str) -> Learned:
        """The (mutable) learned state of `model` at `endpoint` in this run (outside a run: if
        learned less than `LEARNED_TTL_S` ago); fresh if nothing was learned."""
        run = _RUN.get()
        with self._lock:
            table = self._learned if run is None else self._runs.setdefault(run, {})
            entry = table.get((endpoint, model))
            if entry is None or (run is None and self._expired(entry)):
                entry = table[(endpoint, model)] = Learned(clock=self._clock)
            return entry

    def _expired(self, entry: Learned) -> bool:
        return entry.at is not None and self._clock() - entry.at >= LEARNED_TTL_S

    def mode(self, endpoint: str, model: str) -> str:
        """The structured-output mode requests to `model` at `endpoint` start with."""
        return MODES[self.learned(endpoint, model).mode]

    def shared_limiter(self, endpoint: str) -> Limiter:
        """The endpoint's default limit (16 requests in flight), shared by every judge on it that
        was given no `concurrency` of its own."""
        with self._lock:
            limiter = self._shared.get(endpoint)
            if limiter is None:
                limiter = self._shared[endpoint] = Limiter(DEFAULT_CONCURRENCY)
            return limiter

    def reset(self) -> None:
        """Forget everything learned and the shared limits (judges made later get fresh ones)."""
        with self._lock:
            self._learned.clear()
            self._runs.clear()
            self._shared.clear()


#: The registry judges use unless they are given their own.
ENDPOINTS = EndpointRegistry()


def tls_context(url: str) -> ssl.SSLContext:
    """The TLS context for an HTTP client of `url`. For https: httpx's default (certifi's CAs,
    or SSL_CERT_FILE / SSL_CERT_DIR), built on first use and shared by every client (reading the
    CA file takes 50-200 ms). For plain http, which never uses TLS: a context that trusts no
    certificate authority, so no CA file is read, and a connection that did turn to TLS would
    fail its certificate check instead of going unverified."""
    if urlsplit(url).scheme.lower() == "https":
        return _verifying(os.environ.get("SSL_CERT_FILE"), os.environ.get("SSL_CERT_DIR"))
    return _trusting_none()


@functools.cache
def _verifying(cert_file: str | None, cert_dir: str | None) -> ssl.SSLContext:
    """httpx's default context, once per process and pair of those two settings."""
    import httpx

    return httpx.create_ssl_context()


@functools.cache
def _trusting_none() -> ssl.SSLContext:
    """A client context that verifies certificates and host names against no CA at all."""
    return ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)
