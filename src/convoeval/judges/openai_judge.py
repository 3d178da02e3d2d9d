"""The `openai` judge: any OpenAI-compatible chat-completions server, with structured output.

Built on the official SDK's async client with the SDK's own retries off; this module adds the
json_schema -> json_object -> prompt-only fallback, the adaptation of sampling parameters a model
refuses (reasoning models), bounded retries, the per-endpoint concurrency limit, the answer cache
and usage accounting. API keys are only ever handed to the SDK client.
"""

from __future__ import annotations

import asyncio
import json
import os
import re
import sqlite3
import time
import warnings
import weakref
from collections.abc import Mapping
from typing import Any, TypeVar, cast
from urllib.parse import urlsplit, urlunsplit

import openai
from pydantic import BaseModel

from convoeval.judges._answers import (
    AnswerProblem,
    RawReply,
    Reask,
    accept,
    ask_validated,
    estimate_tokens,
    schema_text,
)
from convoeval.judges.base import Answer, JudgeError, Step, Usage
from convoeval.judges.cache import JudgeCache, cache_key
from convoeval.judges.retry import (
    Deadline,
    RetryPolicy,
    endpoint_limit,
    limiter_for,
    parse_retry_after,
    set_endpoint_limit,
)

OutT = TypeVar("OutT", bound=BaseModel)

OPENAI_URL = "https://api.openai.com/v1"
#: The key sent to local servers that need none (never a real credential).
PLACEHOLDER_KEY = "not-needed"
_MODES = ("json_schema", "json_object", "prompt")
#: Structured-output mode that works, remembered per (endpoint, model) after a rejection.
_mode_memory: dict[tuple[str, str], int] = {}
_FORMAT_WORDS = ("response_format", "json_schema", "json_object")


class _FormatRejected(Exception):
    """The server refused the requested response_format (a 400 that names it)."""


#: Sampling parameters some models refuse (OpenAI's reasoning models), and how to adapt:
#: `max_tokens` becomes `max_completion_tokens`; `temperature` and `seed` are left out.
_PARAM_FIXES = ("max_tokens", "temperature", "seed")
#: Adaptations learned per (endpoint, model) from a 400 that named the parameter.
_param_memory: dict[tuple[str, str], set[str]] = {}


class _ParamRejected(Exception):
    """The server refused a sampling parameter this judge can adapt (a 400 naming it)."""

    def __init__(self, param: str, message: str) -> None:
        self.param = param
        super().__init__(message)


def _rejected_param(exc: openai.APIStatusError, sent: Mapping[str, Any]) -> str | None:
    """The adaptable parameter a 400 refuses, if it names one that was sent."""
    body = exc.body if isinstance(exc.body, Mapping) else {}
    error = body.get("error", body)
    named = error.get("param") if isinstance(error, Mapping) else None
    text = _error_text(exc).lower()
    if "unsupported" not in text and "not supported" not in text:
        return None
    for param in _PARAM_FIXES:
        if param in sent and (named == param or f"'{param}'" in text):
            return param
    return None


def redact_url(url: str) -> str:
    """The URL without user info, query or fragment (they may carry credentials)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))


def _schema_name(step_name: str) -> str:
    cleaned = re.sub(r"[^a-zA-Z0-9_-]", "_", step_name)[:64]
    return cleaned or "answer"


def _strict_compatible(schema: Any) -> bool:
    """True when every object in the schema closes its properties and requires all of them."""
    if isinstance(schema, dict):
        if schema.get("type") == "object" or "properties" in schema:
            props = schema.get("properties", {})
            if schema.get("additionalProperties") is not False:
                return False
            if set(schema.get("required", [])) != set(props):
                return False
        return all(_strict_compatible(v) for v in schema.values())
    if isinstance(schema, list):
        return all(_strict_compatible(v) for v in schema)
    return True


def _error_text(exc: openai.APIStatusError) -> str:
    body = exc.body
    try:
        body_text = json.dumps(body, ensure_ascii=False, default=str)
    except (TypeError, ValueError):
        body_text = str(body)
    return f"{exc.message} {body_text}"


class OpenAIJudge:
    """A judge backed by an OpenAI-compatible server (OpenAI, vLLM, Ollama, llama.cpp, gateways)."""

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        concurrency: int | None = None,
        cache: bool | JudgeCache = True,
        timeout: float = 60.0,
        seed: int | None = None,
        temperature: float = 0.0,
        max_tokens: int | None = None,
        retry: RetryPolicy | None = None,
        strict: bool | None = None,
    ) -> None:
        if not model or not model.strip():
            raise ValueError("OpenAIJudge needs a model name")
        if timeout <= 0:
            raise ValueError("timeout must be positive")
        self.model = model
        self.name = f"openai/{model}"
        self.base_url = (base_url or os.environ.get("OPENAI_BASE_URL") or OPENAI_URL).rstrip("/")
        self.endpoint = redact_url(self.base_url)
        key = api_key or os.environ.get("OPENAI_API_KEY")
        if not key:
            if urlsplit(self.base_url).hostname == "api.openai.com":
                raise ValueError(
                    "no API key for api.openai.com: set OPENAI_API_KEY or pass api_key "
                    "(or point OPENAI_BASE_URL at a local server)"
                )
            key = PLACEHOLDER_KEY
        self._api_key = key
        if concurrency is not None:
            set_endpoint_limit(self.endpoint, concurrency)
        if cache is True:
            self.cache: JudgeCache | None = JudgeCache()
        elif cache is False:
            self.cache = None
        else:
            self.cache = cache
        self.timeout = timeout
        self.seed = seed
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.retry = retry or RetryPolicy()
        self.strict = strict
        #: Everything this judge spent so far, failed steps included.
        self.total = Usage()
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, openai.AsyncOpenAI] = (
            weakref.WeakKeyDictionary()
        )

    def __repr__(self) -> str:
        return f"OpenAIJudge(model={self.model!r}, endpoint={self.endpoint!r})"

    def describe(self) -> dict[str, Any]:
        """Judge kind, model, endpoint and sampling settings (never the key)."""
        return {
            "kind": "openai",
            "name": self.name,
            "model": self.model,
            "endpoint": self.endpoint,
            "temperature": self.temperature,
            "seed": self.seed,
            "max_tokens": self.max_tokens,
            "concurrency": endpoint_limit(self.endpoint),
            "cache": self.cache is not None,
        }

    def _client(self) -> openai.AsyncOpenAI:
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            client = openai.AsyncOpenAI(
                api_key=self._api_key, base_url=self.base_url, max_retries=0, timeout=self.timeout
            )
            self._clients[loop] = client
        return client

    async def aclose(self) -> None:
        """Close this event loop's HTTP client (optional; clients of closed loops are dropped)."""
        client = self._clients.pop(asyncio.get_running_loop(), None)
        if client is not None:
            await client.close()

    def _sampling(self) -> dict[str, Any]:
        return {"temperature": self.temperature, "seed": self.seed, "max_tokens": self.max_tokens}

    def _key(self, step: Step[Any], user: str) -> str:
        return cache_key(
            endpoint=self.endpoint,
            model=self.model,
            step=step.name,
            version=step.version,
            system=step.instructions,
            user=user,
            schema=step.schema(),
            sampling=self._sampling(),
        )

    async def run(self, step: Step[OutT], inputs: Mapping[str, Any]) -> Answer[OutT]:
        """Answer `step` for `inputs`: cache, then request(s) with retries, fallback and re-ask."""
        user = step.render(inputs)
        key = self._key(step, user) if self.cache is not None else ""
        stored = await self._cache_get(key)
        if stored is not None:
            try:
                cached = accept(step, inputs, RawReply(content=stored))
            except AnswerProblem:
                cached = None  # stale entry (schema or check changed): ask again
            if cached is not None:
                hit = Usage(cached=1)
                self.total.add(hit)
                return Answer(output=cached, usage=hit)
        usage = Usage()
        try:
            output = await ask_validated(
                step, inputs, lambda reask: self._ask(step, user, reask, usage)
            )
        except JudgeError as exc:
            exc.usage = usage
            raise
        finally:
            self.total.add(usage)
        await self._cache_put(key, step, output)
        return Answer(output=output, usage=usage)

    def _cache_broken(self, exc: Exception) -> None:
        if self.cache is None:
            return  # another task already reported it
        cache, self.cache = self.cache, None
        warnings.warn(
            f"judge cache {cache} is unusable ({type(exc).__name__}: {exc}); continuing without it",
            RuntimeWarning,
            stacklevel=3,
        )

    async def _cache_get(self, key: str) -> str | None:
        if self.cache is None:
            return None
        try:
            return await self.cache.aget(key)
        except (sqlite3.Error, OSError) as exc:
            self._cache_broken(exc)
            return None

    async def _cache_put(self, key: str, step: Step[Any], output: BaseModel) -> None:
        if self.cache is None:
            return
        try:
            await self.cache.aput(key, output.model_dump_json(), step=step.name, model=self.model)
        except (sqlite3.Error, OSError) as exc:
            self._cache_broken(exc)

    async def _ask(self, step: Step[Any], user: str, reask: Reask | None, usage: Usage) -> RawReply:
        memory_key = (self.endpoint, self.model)
        mode = _mode_memory.get(memory_key, 0)
        while True:
            messages = self._messages(step, user, reask, _MODES[mode])
            try:
                return await self._send(step, messages, _MODES[mode], usage)
            except _ParamRejected as exc:
                # Once adapted, the parameter is no longer sent: each one is adapted at most once.
                _param_memory.setdefault(memory_key, set()).add(exc.param)
            except _FormatRejected as exc:
                if mode + 1 >= len(_MODES):
                    raise JudgeError(step.name, f"the server rejected the request: {exc}") from exc
                mode += 1
                _mode_memory[memory_key] = max(_mode_memory.get(memory_key, 0), mode)

    def _messages(
        self, step: Step[Any], user: str, reask: Reask | None, mode: str
    ) -> list[dict[str, str]]:
        system = step.instructions
        if mode != "json_schema":
            system = f"{system}\n\n{schema_text(step)}" if system else schema_text(step)
        messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
        if reask is not None:
            messages.append({"role": "assistant", "content": reask.previous})
            messages.append({"role": "user", "content": reask.message})
        return messages

    def _request_args(self, step: Step[Any], mode: str) -> dict[str, Any]:
        fixes = _param_memory.get((self.endpoint, self.model), set())
        args: dict[str, Any] = {"model": self.model}
        if "temperature" not in fixes:
            args["temperature"] = self.temperature
        if self.seed is not None and "seed" not in fixes:
            args["seed"] = self.seed
        if self.max_tokens is not None:
            limit = "max_completion_tokens" if "max_tokens" in fixes else "max_tokens"
            args[limit] = self.max_tokens
        if mode == "json_schema":
            schema = step.schema()
            strict = _strict_compatible(schema) if self.strict is None else self.strict
            args["response_format"] = {
                "type": "json_schema",
                "json_schema": {
                    "name": _schema_name(step.name),
                    "schema": schema,
                    "strict": strict,
                },
            }
        elif mode == "json_object":
            args["response_format"] = {"type": "json_object"}
        return args

    async def _send(
        self, step: Step[Any], messages: list[dict[str, str]], mode: str, usage: Usage
    ) -> RawReply:
        args = self._request_args(step, mode)
        deadline = Deadline(self.retry.max_total_s)
        limiter = limiter_for(self.endpoint)
        client = self._client()
        retries = 0
        while True:
            failure: str
            retry_after: float | None = None
            async with limiter.slot():
                usage.requests += 1
                started = time.perf_counter()
                try:
                    response = await client.chat.completions.create(
                        messages=cast(Any, messages),
                        timeout=max(0.001, min(self.timeout, deadline.remaining())),
                        **args,
                    )
                except openai.RateLimitError as exc:
                    failure = f"HTTP 429 rate limited: {exc.message}"
                    headers = exc.response.headers
                    retry_after = parse_retry_after(headers.get("retry-after"))
                    if retry_after is None and headers.get("retry-after-ms"):
                        ms = parse_retry_after(headers.get("retry-after-ms"))
                        retry_after = None if ms is None else ms / 1000
                except openai.InternalServerError as exc:
                    failure = f"HTTP {exc.status_code} server error: {exc.message}"
                except openai.APITimeoutError:
                    failure = "the request timed out"
                except openai.APIConnectionError as exc:
                    failure = f"connection failed: {exc.__cause__ or exc}"
                except openai.APIStatusError as exc:
                    text = _error_text(exc)
                    param = _rejected_param(exc, args) if exc.status_code == 400 else None
                    if param is not None:
                        raise _ParamRejected(param, f"HTTP 400: {exc.message}") from exc
                    if (
                        exc.status_code == 400
                        and mode != "prompt"
                        and any(w in text for w in _FORMAT_WORDS)
                    ):
                        raise _FormatRejected(f"HTTP 400: {exc.message}") from exc
                    raise JudgeError(
                        step.name,
                        f"the server refused the request: HTTP {exc.status_code}: {exc.message}",
                    ) from exc
                except (openai.APIError, ValueError) as exc:
                    raise JudgeError(
                        step.name, f"unusable server response: {type(exc).__name__}: {exc}"
                    ) from exc
                else:
                    return self._reply(step, messages, response, usage)
                finally:
                    usage.latency_s += time.perf_counter() - started
            retries += 1
            if retries > self.retry.max_retries:
                raise JudgeError(
                    step.name, f"gave up after {retries} attempts; last error: {failure}"
                )
            delay = self.retry.backoff(retries, retry_after)
            if delay >= deadline.remaining():
                raise JudgeError(
                    step.name,
                    f"gave up after {retries} attempts: the retry time budget "
                    f"({self.retry.max_total_s:g} s) is spent; last error: {failure}",
                )
            await asyncio.sleep(delay)

    def _reply(
        self, step: Step[Any], messages: list[dict[str, str]], response: Any, usage: Usage
    ) -> RawReply:
        choices = getattr(response, "choices", None)
        if not choices:
            raise JudgeError(step.name, "the server answered with no choices")
        choice = choices[0]
        message = choice.message
        content = message.content
        if content is None:
            content = getattr(message, "refusal", None) or ""
        reported = getattr(response, "usage", None)
        if reported is not None and (reported.prompt_tokens or reported.completion_tokens):
            usage.prompt_tokens += int(reported.prompt_tokens or 0)
            usage.completion_tokens += int(reported.completion_tokens or 0)
        else:
            usage.prompt_tokens += estimate_tokens("".join(m["content"] for m in messages))
            usage.completion_tokens += estimate_tokens(content)
        return RawReply(content=content, finish_reason=choice.finish_reason)
