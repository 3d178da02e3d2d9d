"""What judges learn about an endpoint and model while running, kept in one resettable registry.

A server that refuses `response_format` json_schema, or a model that refuses `temperature`, is
asked the adapted way by every later request and every judge on that endpoint and model, so the
refusal costs one request per process, not one per step. The registry also holds each endpoint's
shared default concurrency limit, used by the judges that set none of their own (see `LLMJudge`).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

from convoeval.judges.core.retry import DEFAULT_CONCURRENCY, Limiter

#: Structured-output modes, tried in this order: the server's json_schema support, its JSON mode,
#: then the schema in the prompt only.
MODES = ("json_schema", "json_object", "prompt")


@dataclass
class Learned:
    """What was learned about one (endpoint, model): the output mode and adapted parameters."""

    mode: int = 0
    adapted: set[str] = field(default_factory=set)

    def fall_back(self, mode: int) -> None:
        """Remember that `mode` (an index into MODES) is the first mode to try from now on."""
        self.mode = max(self.mode, mode)


class EndpointRegistry:
    """Learned per-(endpoint, model) state, shared by the judges that use this registry."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._learned: dict[tuple[str, str], Learned] = {}
        self._shared: dict[str, Limiter] = {}

    def learned(self, endpoint: str, model: str) -> Learned:
        """The (mutable) learned state of `model` at `endpoint`; fresh if nothing was learned."""
        with self._lock:
            entry = self._learned.get((endpoint, model))
            if entry is None:
                entry = self._learned[(endpoint, model)] = Learned()
            return entry

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
            self._shared.clear()


#: The registry judges use unless they are given their own.
ENDPOINTS = EndpointRegistry()
