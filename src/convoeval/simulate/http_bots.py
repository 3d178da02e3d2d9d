"""Bots behind HTTP: an OpenAI-compatible chat endpoint (`OpenAIBot`, with its own base URL,
API key variable, system prompt, tools and limit) and a plain JSON endpoint (`HttpBot`).

`HttpBot` POSTs `{"thread_id", "scenario", "trial", "seed", "messages"}` (the conversation so
far as OpenAI chat messages) and reads `{"reply": TEXT}` or `{"messages": [...]}` (the
messages the bot added: assistant tool calls, tool results, then its reply), with an optional
`"usage": {"prompt_tokens", "completion_tokens"}` (docs/simulation.md).
"""

from __future__ import annotations

import hashlib
import json
import os
from collections.abc import Mapping, Sequence
from typing import Any

from convoeval.io.openai_layout import to_openai_messages
from convoeval.judges.core.retry import RetryPolicy
from convoeval.judges.openai.judge import OPENAI_URL, redact_url
from convoeval.judges.protocol.base import Usage
from convoeval.schema import Message
from convoeval.simulate._http import JsonPoster
from convoeval.simulate.bots import BotCall, BotError, answer_messages

#: The keys of an OpenAI chat message a bot endpoint is sent and read (other keys, such as
#: convoeval's message metadata or a server's reasoning text, stay out).
_CHAT_KEYS = ("role", "content", "tool_calls", "tool_call_id", "name")
DEFAULT_TIMEOUT = 60.0


def chat_messages(messages: Sequence[Message]) -> list[dict[str, Any]]:
    """The conversation as plain OpenAI chat messages (what a chat endpoint accepts)."""
    return [
        {k: v for k, v in message.items() if k in _CHAT_KEYS}
        for message in to_openai_messages(messages)
    ]


def _policy(retry_budget: float | None) -> RetryPolicy:
    return RetryPolicy() if retry_budget is None else RetryPolicy(max_total_s=retry_budget)


def _count(usage: Usage) -> Any:
    def spent(requests: int, seconds: float) -> None:
        usage.add(Usage(requests=requests, latency_s=seconds))

    return spent


def _tokens(payload: Any, usage: Usage) -> None:
    found = payload.get("usage") if isinstance(payload, Mapping) else None
    if isinstance(found, Mapping):
        prompt, completion = found.get("prompt_tokens"), found.get("completion_tokens")
        usage.add(
            Usage(
                prompt_tokens=prompt if isinstance(prompt, int) else 0,
                completion_tokens=completion if isinstance(completion, int) else 0,
            )
        )


def _digest(value: Any) -> str | None:
    if value is None:
        return None
    text = json.dumps(value, sort_keys=True, ensure_ascii=False)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()[:16]


class OpenAIBot:
    """A chat model behind an OpenAI-compatible `/chat/completions` endpoint as the bot: sent the
    system prompt (if any), the conversation and the tools (if any); its reply, tool calls
    included, is the bot's turn. Its tool calls are recorded, not run (nothing here can run
    them): a reply that calls tools ends the conversation (stop reason `tool_call`).

    The API key comes from `api_key`, else the environment variable `api_key_env`, else, for
    api.openai.com, `OPENAI_API_KEY`; a local server gets no Authorization header.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        api_key_env: str | None = None,
        system_prompt: str | None = None,
        tools: list[dict[str, Any]] | None = None,
        temperature: float | None = None,
        max_tokens: int | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        retry_budget: float | None = None,
        concurrency: int | None = None,
    ) -> None:
        if not model or not model.strip():
            raise BotError("an OpenAI-compatible bot needs a model name (--bot openai/MODEL)")
        url = (base_url or OPENAI_URL).rstrip("/")
        key = api_key or (os.environ.get(api_key_env) if api_key_env else None)
        if key is None and url == OPENAI_URL:
            key = os.environ.get("OPENAI_API_KEY")
        self.model = model.strip()
        self.name = f"openai/{self.model}"
        self.base_url = url
        self.system_prompt = system_prompt
        self.tools = tools
        self.temperature = temperature
        self.max_tokens = max_tokens
        self._http = JsonPoster(
            f"{url}/chat/completions",
            api_key=key,
            timeout=timeout,
            retry=_policy(retry_budget),
            concurrency=concurrency,
            who=f"the bot {self.name}",
        )

    def describe(self) -> dict[str, Any]:
        return {
            "kind": "openai",
            "name": self.name,
            "model": self.model,
            "endpoint": redact_url(self.base_url),
            "system_prompt": _digest(self.system_prompt),
            "tools": _digest(self.tools),
            "temperature": self.temperature,
            "max_tokens": self.max_tokens,
        }

    def endpoint(self) -> str | None:
        return self.base_url

    async def aclose(self) -> None:
        await self._http.aclose()

    def body(self, messages: Sequence[Message], call: BotCall) -> dict[str, Any]:
        """The chat-completions request for this turn."""
        sent = chat_messages(messages)
        if self.system_prompt:
            sent.insert(0, {"role": "system", "content": self.system_prompt})
        body: dict[str, Any] = {"model": self.model, "messages": sent}
        if self.tools:
            body["tools"] = self.tools
        if self.temperature is not None:
            body["temperature"] = self.temperature
        if self.max_tokens is not None:
            body["max_tokens"] = self.max_tokens
        if call.seed is not None:
            body["seed"] = call.seed
        return body

    async def reply(self, messages: list[Message], call: BotCall, usage: Usage) -> list[Message]:
        payload = await self._http.post(self.body(messages, call), _count(usage))
        _tokens(payload, usage)
        choices = payload.get("choices") if isinstance(payload, Mapping) else None
        first = choices[0] if isinstance(choices, list) and choices else None
        message = first.get("message") if isinstance(first, Mapping) else None
        if not isinstance(message, Mapping):
            shown = json.dumps(payload)[:200]
            raise BotError(f"the bot {self.name} answered with no choice: {shown}")
        plain = {k: v for k, v in message.items() if k in _CHAT_KEYS}
        plain["role"] = "assistant"
        if plain.get("content") is None:
            plain["content"] = message.get("refusal") or ""
        return answer_messages(plain, f"the bot {self.name}")


class HttpBot:
    """The bot behind a plain JSON endpoint (shape in the module docstring and
    docs/simulation.md); `api_key_env` names a variable whose value goes in a Bearer header."""

    def __init__(
        self,
        url: str,
        *,
        api_key_env: str | None = None,
        timeout: float = DEFAULT_TIMEOUT,
        retry_budget: float | None = None,
        concurrency: int | None = None,
    ) -> None:
        self.url = url
        self.name = redact_url(url)
        key = os.environ.get(api_key_env) if api_key_env else None
        self._http = JsonPoster(
            url,
            api_key=key,
            timeout=timeout,
            retry=_policy(retry_budget),
            concurrency=concurrency,
            who="the bot",
        )

    def describe(self) -> dict[str, Any]:
        return {"kind": "http", "name": self.name, "endpoint": self.name}

    def endpoint(self) -> str | None:
        return self.url

    async def aclose(self) -> None:
        await self._http.aclose()

    async def reply(self, messages: list[Message], call: BotCall, usage: Usage) -> list[Message]:
        body = {
            "thread_id": call.thread_id,
            "scenario": call.scenario,
            "trial": call.trial,
            "seed": call.seed,
            "messages": chat_messages(messages),
        }
        payload = await self._http.post(body, _count(usage))
        _tokens(payload, usage)
        where = f"the bot at {self.name}"
        if isinstance(payload, Mapping) and isinstance(payload.get("reply"), str):
            return answer_messages(payload["reply"], where)
        if isinstance(payload, Mapping) and isinstance(payload.get("messages"), list):
            return answer_messages(payload["messages"], where)
        shown = json.dumps(payload)[:200]
        raise BotError(
            f'{where} answered {shown}; expected {{"reply": TEXT}} or {{"messages": [...]}}'
        )
