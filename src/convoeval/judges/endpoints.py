"""What judges learn about an endpoint and model while running, kept in one resettable registry.

A server that refuses `response_format` json_schema, or a model that refuses `temperature`, is
asked the adapted way by every later request and every judge on that endpoint and model, so the
refusal costs one request per process, not one per step. Concurrency limits are not kept here:
they belong to each judge instance (see `LLMJudge`).
"""

from __future__ import annotations

import threading
from dataclasses import dataclass, field

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

    def reset(self) -> None:
        """Forget everything learned (for example after a server was reconfigured)."""
        with self._lock:
            self._learned.clear()


#: The registry judges use unless they are given their own.
ENDPOINTS = EndpointRegistry()
