"""From what the user gave to the two sides of a simulation: the bot (a callable, a `Bot`, or a
spec: `openai/MODEL`, an `http(s)://` URL, `module:function`) and the simulated user (any LLM
judge spec or judge; the offline judge cannot write messages)."""

from __future__ import annotations

import importlib
import sys
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, cast

from convoeval.errors import UsageError
from convoeval.judges import resolve_judge
from convoeval.judges.protocol.base import Judge
from convoeval.simulate.bots import Bot, CallableBot
from convoeval.simulate.http_bots import DEFAULT_TIMEOUT, HttpBot, OpenAIBot

BOT_FORMS = (
    "a Python callable (sync or async) taking list[Message], a Bot (OpenAIBot, HttpBot), "
    "'openai/MODEL' (an OpenAI-compatible chat endpoint at bot_base_url), an http(s):// URL (a "
    "plain JSON endpoint) or 'module:function' (a callable imported from the current directory)"
)
#: The bot settings that only a bot built from a spec takes.
BOT_OPTIONS = (
    "bot_base_url",
    "bot_api_key_env",
    "bot_system_prompt",
    "bot_tools",
    "bot_max_tokens",
)


def is_bot(value: Any) -> bool:
    """Whether `value` is a ready `Bot` (not a plain callable or spec)."""
    return all(callable(getattr(value, name, None)) for name in ("reply", "describe", "endpoint"))


def resolve_bot(bot: Any, options: Mapping[str, Any]) -> Bot:
    """The bot to test; `UsageError` for anything else, or for spec settings given with a
    ready bot or callable (it carries its own)."""
    given = sorted(name for name in BOT_OPTIONS if options.get(name) is not None)
    timeout = options.get("timeout") or DEFAULT_TIMEOUT
    concurrency = options.get("bot_concurrency")
    if is_bot(bot):
        _refuse(given, "a Bot object carries its own settings")
        return cast(Bot, bot)
    if isinstance(bot, str):
        text = bot.strip()
        if text.lower().startswith("openai/"):
            return OpenAIBot(
                text.partition("/")[2],
                base_url=options.get("bot_base_url"),
                api_key_env=options.get("bot_api_key_env"),
                system_prompt=options.get("bot_system_prompt"),
                tools=options.get("bot_tools"),
                max_tokens=options.get("bot_max_tokens"),
                timeout=timeout,
                retry_budget=options.get("retry_budget"),
                concurrency=concurrency,
            )
        _refuse([n for n in given if n != "bot_api_key_env"], "they configure an openai/MODEL bot")
        if text.lower().startswith(("http://", "https://")):
            return HttpBot(
                text,
                api_key_env=options.get("bot_api_key_env"),
                timeout=timeout,
                retry_budget=options.get("retry_budget"),
                concurrency=concurrency,
            )
        _refuse(given, "they configure an openai/MODEL or HTTP bot")
        return CallableBot(import_callable(text), concurrency=concurrency)
    if callable(bot):
        _refuse(given, "a callable bot runs as it is")
        return CallableBot(bot, concurrency=concurrency)
    raise UsageError(f"cannot use {bot!r} as the bot; accepted: {BOT_FORMS}")


def _refuse(given: list[str], why: str) -> None:
    if given:
        raise UsageError(f"{', '.join(given)} cannot be used here: {why}")


def import_callable(spec: str) -> Callable[..., Any]:
    """The callable named by `module:attribute` (dotted attributes allowed), imported with the
    current directory on the path, as `python -m` would."""
    module_name, colon, attribute = spec.partition(":")
    if not colon or not module_name.strip() or not attribute.strip():
        raise UsageError(f"cannot use {spec!r} as the bot; accepted: {BOT_FORMS}")
    here = str(Path.cwd())
    if here not in sys.path:
        sys.path.insert(0, here)
    try:
        target: Any = importlib.import_module(module_name.strip())
    except ImportError as exc:
        raise UsageError(f"cannot import the bot's module {module_name!r}: {exc}") from exc
    for part in attribute.strip().split("."):
        if not hasattr(target, part):
            raise UsageError(f"the bot {spec!r}: {module_name} has no attribute {attribute!r}")
        target = getattr(target, part)
    if not callable(target):
        raise UsageError(f"the bot {spec!r} is a {type(target).__name__}, not a callable")
    return cast(Callable[..., Any], target)


def resolve_user(user_model: Any, options: Mapping[str, Any], concurrency: int) -> Judge:
    """The simulated user's judge: any LLM judge spec ('openai/MODEL') or Judge, with the
    judge options given (endpoint, key, seed, timeout, retry budget, cache, limit); a judge
    built from a spec keeps to `user_concurrency` requests in flight, else to `concurrency`
    (the conversations played at once)."""
    if user_model is None or (
        isinstance(user_model, str) and user_model.strip().lower() == "offline"
    ):
        raise UsageError(
            "the simulated user needs an LLM that writes messages: give user_model "
            "(--user-model) 'openai/MODEL' (any OpenAI-compatible server)"
        )
    judge_options = {
        "base_url": options.get("base_url"),
        "api_key": options.get("api_key"),
        "seed": options.get("seed"),
        "timeout": options.get("timeout"),
        "retry_budget": options.get("retry_budget"),
        "cache": options.get("cache"),
        "concurrency": options.get("user_concurrency"),
        "max_tokens": options.get("user_max_tokens"),
    }
    if not isinstance(user_model, str):
        named = sorted(k for k, v in judge_options.items() if v is not None and k != "seed")
        _refuse(named, "a Judge object carries its own settings")
    else:
        judge_options["concurrency"] = judge_options["concurrency"] or concurrency
    judge = resolve_judge(user_model, **judge_options)
    kind = judge.describe().get("kind") or judge.describe().get("judge")
    if kind == "offline":
        raise UsageError("the offline judge cannot play the user; give an LLM (openai/MODEL)")
    return judge
