"""A chat-completions answer read once for live and batch requests: its reply, or its failure."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

from convoeval.judges.core.backend import BackendFailure, BackendReply, Failure
from convoeval.judges.core.retry import parse_retry_after

if TYPE_CHECKING:
    import httpx

_FORMAT_WORDS = ("response_format", "json_schema", "json_object")
#: Sampling parameters some models refuse (OpenAI's reasoning models), and how to adapt:
#: `max_tokens` becomes `max_completion_tokens`; `temperature` and `seed` are left out.
_PARAM_FIXES = ("max_tokens", "temperature", "seed")
#: HTTP statuses worth retrying (as the OpenAI SDK does): timeout, conflict, rate limit, 5xx.
_RETRY_STATUS = frozenset({408, 409, 429})
#: HTTP statuses that refuse the credentials (authentication, permission): every request with
#: them would be refused the same way.
REFUSED_STATUS = frozenset({401, 403})
_SHOWN_BYTES = 200


def _first_bytes(data: bytes) -> str:
    text = data[:_SHOWN_BYTES].decode("utf-8", errors="replace")
    more = f"... ({len(data)} bytes)" if len(data) > _SHOWN_BYTES else ""
    return f"{text!r}{more}" if text else "(empty body)"


def _error_message(response: httpx.Response) -> str:
    """The server's error message (OpenAI-style `{"error": {"message": ...}}`) or first bytes."""
    try:
        body = response.json()
    except ValueError:
        return _first_bytes(response.content)
    error = body.get("error", body) if isinstance(body, Mapping) else body
    message = error.get("message") if isinstance(error, Mapping) else None
    return str(message) if message else _first_bytes(response.content)


def _retry_after(headers: httpx.Headers) -> float | None:
    seconds = parse_retry_after(headers.get("retry-after"))
    if seconds is None and headers.get("retry-after-ms"):
        ms = parse_retry_after(headers.get("retry-after-ms"))
        seconds = None if ms is None else ms / 1000
    return seconds


def _rejected_param(response: httpx.Response, sent: Mapping[str, Any]) -> str | None:
    """The adaptable parameter a 400 refuses, if it names one that was sent."""
    try:
        body = response.json()
    except ValueError:
        body = {}
    error = body.get("error", body) if isinstance(body, Mapping) else {}
    named = error.get("param") if isinstance(error, Mapping) else None
    text = response.text.lower()
    if "unsupported" not in text and "not supported" not in text:
        return None
    for param in _PARAM_FIXES:
        if param in sent and (named == param or f"'{param}'" in text):
            return param
    return None


def status_failure(response: httpx.Response, sent: Mapping[str, Any], mode: str) -> BackendFailure:
    """The failure a non-200 answer means for the core: retryable, parameter or format refused,
    credentials refused, or fatal, with the server's message."""
    status, message = response.status_code, _error_message(response)
    if status in REFUSED_STATUS:
        return BackendFailure(Failure.CREDENTIALS_REFUSED, f"HTTP {status}: {message}")
    if status == 429:
        return BackendFailure(
            Failure.RETRYABLE,
            f"HTTP 429 rate limited: {message}",
            retry_after=_retry_after(response.headers),
        )
    if status >= 500 or status in _RETRY_STATUS:
        kind = "server error" if status >= 500 else "retryable"
        return BackendFailure(
            Failure.RETRYABLE,
            f"HTTP {status} {kind}: {message}",
            retry_after=_retry_after(response.headers),
        )
    if status == 400:
        param = _rejected_param(response, sent)
        if param is not None:
            return BackendFailure(
                Failure.PARAM_REJECTED,
                f"the server refused the request: HTTP 400: {message}",
                param=param,
            )
        if mode != "prompt" and any(w in response.text for w in _FORMAT_WORDS):
            return BackendFailure(
                Failure.FORMAT_REJECTED,
                f"the server rejected the request: HTTP 400: {message}",
            )
    return BackendFailure(
        Failure.FATAL, f"the server refused the request: HTTP {status}: {message}"
    )


def read_reply(response: httpx.Response) -> BackendReply:
    """A 200 answer's content, finish reason and token counts; a body with no usable choice is
    a fatal failure saying what came back."""
    try:
        payload = response.json()
    except ValueError:
        payload = None
    if not isinstance(payload, Mapping):
        raise _unusable(
            "unusable server response: HTTP 200 with a body that is not a JSON object", response
        )
    choices = payload.get("choices")
    first = choices[0] if isinstance(choices, list) and choices else None
    message = first.get("message") if isinstance(first, Mapping) else None
    if not isinstance(message, Mapping):
        raise _unusable("the server answered HTTP 200 with no choices", response)
    content = message.get("content")
    if content is None:
        content = message.get("refusal") or ""
    usage = payload.get("usage")
    usage = usage if isinstance(usage, Mapping) else {}
    return BackendReply(
        content=content if isinstance(content, str) else json.dumps(content),
        finish_reason=first.get("finish_reason") if isinstance(first, Mapping) else None,
        prompt_tokens=_int(usage.get("prompt_tokens")),
        completion_tokens=_int(usage.get("completion_tokens")),
    )


def _unusable(problem: str, response: httpx.Response) -> BackendFailure:
    """The fatal failure of a 200 with an unusable body: `problem`, its content type and start."""
    kind = response.headers.get("content-type", "no content type")
    shown = _first_bytes(response.content)
    return BackendFailure(Failure.FATAL, f"{problem} (content type {kind}); first bytes: {shown}")


def _int(value: Any) -> int | None:
    return int(value) if isinstance(value, int | float) and not isinstance(value, bool) else None
