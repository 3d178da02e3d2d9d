"""The backend protocol: one round trip to a model, and a classification of what went wrong.

A backend (OpenAI chat completions, the fake judge's script, later the OpenAI Batch API) turns a
`BackendRequest` into a `BackendReply` or raises `BackendFailure` saying whether the failure is
worth retrying, is a refused output format or sampling parameter, or is final. Everything else
(cache, concurrency limit, retries, timeout, re-ask, usage) lives once in `LLMJudge`.

A batch backend's `send` adds the request to the open batch and awaits its line of the result (a
failed line is a RETRYABLE failure, retried in a later batch; a re-ask goes into the next batch);
its `LLMJudge` takes no limiter and no per-request timeout, since every pending request waits in
the batch at once.
"""

from __future__ import annotations

import enum
from dataclasses import dataclass
from typing import Any, Protocol

from convoeval.judges.protocol._answers import Reask, schema_text
from convoeval.judges.protocol.step import Step

__all__ = ["Backend", "BackendFailure", "BackendReply", "BackendRequest", "Failure"]


@dataclass(frozen=True)
class BackendRequest:
    """One question to send: the step and its (opaque) inputs, the rendered user prompt, the
    answer schema of this request, the re-ask turn if any, the structured-output mode, the
    parameters to adapt, a repeated sample's sampling and the question's cache key."""

    step: Step[Any]
    inputs: Any
    user: str
    #: The answer schema sent: the step's, narrowed to these inputs (`Step.request_schema`).
    schema: dict[str, Any]
    reask: Reask | None = None
    mode: str = "json_schema"
    #: Sampling parameters the endpoint refused: "max_tokens", "temperature", "seed".
    adapted: frozenset[str] = frozenset()
    #: A repeated judge sample's temperature and seed (judges/ensembles/samples.py); None:
    #: the backend's.
    temperature: float | None = None
    seed: int | None = None
    #: The question's answer-cache key (what names a batch line); empty when the judge keeps no
    #: cache and does not ask for keys (`LLMJudge.keyed`).
    key: str = ""

    def messages(self) -> list[dict[str, str]]:
        """The chat messages: system (with the schema as text unless json_schema mode), user,
        and for a re-ask the previous answer and the message quoting its problem."""
        system = self.step.instructions
        if self.mode != "json_schema":
            text = schema_text(self.schema)
            system = f"{system}\n\n{text}" if system else text
        messages = [{"role": "system", "content": system}, {"role": "user", "content": self.user}]
        if self.reask is not None:
            messages.append({"role": "assistant", "content": self.reask.previous})
            messages.append({"role": "user", "content": self.reask.message})
        return messages


@dataclass(frozen=True)
class BackendReply:
    """What came back: content (text, mapping or model), why it stopped, tokens if reported."""

    content: object
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None


class Failure(enum.Enum):
    """How a failed round trip is handled by the core."""

    RETRYABLE = "retryable"  # 429, 5xx, timeout, connection: retried within the budget
    FORMAT_REJECTED = "format rejected"  # the output mode was refused: fall back to the next one
    PARAM_REJECTED = "parameter rejected"  # a sampling parameter was refused: adapt it once
    CREDENTIALS_REFUSED = "credentials refused"  # 401/403: stop, send nothing more with them
    FATAL = "fatal"  # anything else: the step fails with this message


class BackendFailure(Exception):
    """A classified failure of one round trip; `message` says what came back or what failed."""

    def __init__(
        self,
        kind: Failure,
        message: str,
        *,
        retry_after: float | None = None,
        param: str | None = None,
    ) -> None:
        self.kind = kind
        self.message = message
        self.retry_after = retry_after
        self.param = param
        super().__init__(message)


class Backend(Protocol):
    """One model behind one endpoint. `endpoint` never carries credentials."""

    kind: str
    model: str
    endpoint: str

    def sampling(self) -> dict[str, Any]:
        """The settings that shape answers (part of the cache key and of `describe()`)."""
        ...

    def secrets(self) -> tuple[str, ...]:
        """Credentials to mask in every error text (API keys)."""
        ...

    async def send(self, request: BackendRequest) -> BackendReply:
        """One round trip; raises `BackendFailure` when it failed. Must be cancellable: a
        cancelled send closes its connection."""
        ...

    async def aclose(self) -> None:
        """Release connections opened on the running event loop."""
        ...
