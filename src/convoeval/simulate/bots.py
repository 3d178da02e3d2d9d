"""The bot under test: what every bot does (`Bot`), a Python callable as a bot, and what a bot's
answer may be (text, an `AIMessage`, a list of the messages it added with its tool calls and
tool results, or the same as OpenAI chat message dicts).

The HTTP bots (an OpenAI-compatible chat endpoint, a plain JSON endpoint) are in `http_bots.py`;
`resolve_bot` (in `__init__.py` of this package) picks one from what the user gave.
"""

from __future__ import annotations

import asyncio
import inspect
import time
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from convoeval.errors import ConvoevalError
from convoeval.io.errors import ConversionError
from convoeval.io.openai_layout import from_openai_messages
from convoeval.judges.protocol.base import Usage
from convoeval.schema import AIMessage, Message, ToolMessage, Turn
from convoeval.schema.sample import check_conversation

#: What a bot may answer, said in every error about an answer that is none of these.
ANSWERS = (
    "text, an AIMessage, a list of the AIMessages and ToolMessages it added (tool calls and "
    "their results, then the reply), or the same as OpenAI chat message dicts"
)


class BotError(ConvoevalError):
    """The bot failed one turn (it raised, answered something unusable, or its endpoint failed
    after retries): that conversation is recorded as failed; the others go on."""


@dataclass(frozen=True)
class BotCall:
    """Which conversation a bot turn belongs to: `thread_id` (`SCENARIO_ID#TRIAL`, the same in
    every run), the scenario's id, the trial (from 1) and the seed to sample with (None: none)."""

    thread_id: str
    scenario: str
    trial: int
    seed: int | None


class Bot(Protocol):
    """The bot under test: answers the conversation so far with the messages it adds."""

    #: What names the bot in results and in a run's identity (`openai/MODEL`, a URL, a callable).
    name: str

    async def reply(self, messages: list[Message], call: BotCall, usage: Usage) -> list[Message]:
        """The messages the bot adds after `messages` (the last is its reply), counting what it
        spent into `usage`; raises `BotError`."""
        ...

    def describe(self) -> dict[str, Any]:
        """Kind, name and settings (never a key): part of a run's identity."""
        ...

    def endpoint(self) -> str | None:
        """The URL this bot sends to (checked reachable before a run), None for none."""
        ...

    async def aclose(self) -> None:
        """Release the connections opened on the running event loop."""
        ...


def answer_messages(answer: Any, where: str) -> list[Message]:
    """The messages a bot answer adds (see `ANSWERS`); `BotError` naming `where` otherwise."""
    if isinstance(answer, str):
        return [AIMessage(content=answer)]
    if isinstance(answer, AIMessage):
        return [answer]
    if isinstance(answer, Turn):
        return [_turn_message(answer, where)]
    if isinstance(answer, Mapping):
        return _openai([answer], where)
    if isinstance(answer, Sequence) and not isinstance(answer, bytes):
        items = list(answer)
        if items and all(isinstance(m, AIMessage | ToolMessage) for m in items):
            return items
        if items and all(isinstance(m, Mapping) for m in items):
            return _openai(items, where)
    raise BotError(f"{where} answered {_kind(answer)}; a bot answers {ANSWERS}")


def _turn_message(turn: Turn, where: str) -> Message:
    if turn.role != "assistant":
        raise BotError(f"{where} answered a {turn.role!r} turn; the bot's turn is 'assistant'")
    return turn.to_message()


def _openai(items: list[Any], where: str) -> list[Message]:
    try:
        return list(from_openai_messages(items).user_input)
    except ConversionError as exc:
        raise BotError(f"{where} answered messages that cannot be read: {exc}") from None


def _kind(value: Any) -> str:
    if isinstance(value, Sequence) and not isinstance(value, str | bytes):
        return "an empty list" if not value else f"a list of {type(value[0]).__name__}"
    return "None" if value is None else f"a {type(value).__name__}"


def extend(messages: list[Message], added: list[Message], where: str) -> list[Message]:
    """The conversation with the bot's messages added, checked: they are the bot's (assistant
    replies and tool results), end with an assistant message, and keep the tool-message rules."""
    if not added:
        raise BotError(f"{where} answered no message")
    wrong = [m.type for m in added if not isinstance(m, AIMessage | ToolMessage)]
    if wrong:
        raise BotError(f"{where} answered a {wrong[0]} message; a bot adds only {ANSWERS}")
    if not isinstance(added[-1], AIMessage):
        raise BotError(f"{where} answered a tool result last; its reply (an AIMessage) ends a turn")
    conversation = [*messages, *added]
    try:
        check_conversation(conversation)
    except ValueError as exc:
        raise BotError(f"{where} broke a tool-message rule: {exc}") from None
    return conversation


class CallableBot:
    """A Python function (sync or async) as the bot: called with a copy of the conversation so
    far (`list[Message]`), it answers as `answer_messages` takes. A sync function runs in a
    worker thread, so conversations go on side by side; `concurrency` bounds its calls at once."""

    def __init__(
        self,
        function: Callable[..., Any],
        *,
        concurrency: int | None = None,
        with_call: bool = False,
    ) -> None:
        if not callable(function):
            raise TypeError(f"the bot must be callable, not {type(function).__name__}")
        self.function = function
        #: Also pass the `BotCall` (thread id, trial, seed) as the second argument.
        self.with_call = with_call
        self.name = f"callable:{_qualified(function)}"
        self._async = inspect.iscoroutinefunction(function) or inspect.iscoroutinefunction(
            getattr(function, "__call__", None)  # noqa: B004 (an instance's async __call__)
        )
        self._slots = asyncio.Semaphore(concurrency) if concurrency else None

    def describe(self) -> dict[str, Any]:
        return {"kind": "callable", "name": self.name}

    def endpoint(self) -> str | None:
        return None

    async def aclose(self) -> None:
        return None

    async def reply(self, messages: list[Message], call: BotCall, usage: Usage) -> list[Message]:
        copies = [m.model_copy(deep=True) for m in messages]
        started = time.monotonic()
        usage.add(Usage(requests=1))
        try:
            if self._slots is not None:
                async with self._slots:
                    answer = await self._call(copies, call)
            else:
                answer = await self._call(copies, call)
        except BotError:
            raise
        except Exception as exc:
            raise BotError(f"the bot {self.name} raised {type(exc).__name__}: {exc}") from exc
        finally:
            usage.add(Usage(latency_s=time.monotonic() - started))
        return answer_messages(answer, f"the bot {self.name}")

    async def _call(self, messages: list[Message], call: BotCall) -> Any:
        args: tuple[Any, ...] = (messages, call) if self.with_call else (messages,)
        if self._async:
            return await self.function(*args)
        answer = await asyncio.to_thread(self.function, *args)
        return await answer if inspect.isawaitable(answer) else answer


def _qualified(function: Callable[..., Any]) -> str:
    module = getattr(function, "__module__", None) or "?"
    name = getattr(function, "__qualname__", None) or type(function).__qualname__
    return f"{module}:{name}"
