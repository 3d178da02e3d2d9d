"""`ConversationSimulator`: DeepEval's simulator habit over `simulate`.

`ConversationSimulator(model_callback=cb).simulate(conversational_goldens=[...],
max_user_simulations=10)` returns `ConversationalTestCase`s as DeepEval's does. The callback is
called with the arguments it names among `input` (the user's last message), `turns` (the
conversation so far as `Turn`s, the last message included) and `thread_id`, sync or async, and
answers a `Turn`, text, or anything a convoeval bot may answer. Goldens are DeepEval
`ConversationalGolden`s (read by attribute), dicts or `Scenario`s.
"""

from __future__ import annotations

import asyncio
import inspect
from collections.abc import Callable, Iterable, Mapping
from typing import Any

from convoeval._sync import run_sync
from convoeval.errors import UsageError
from convoeval.judges.protocol.base import Judge
from convoeval.schema import AIMessage, ConversationalTestCase, HumanMessage, Message, Turn
from convoeval.schema.scenario import Scenario
from convoeval.simulate.bots import BotCall, BotError, CallableBot
from convoeval.simulate.result import SimulationResult
from convoeval.simulate.run import asimulate

#: The user model when none is given (DeepEval's default is an OpenAI model too).
DEFAULT_SIMULATOR_MODEL = "openai/gpt-4o-mini"
_GOLDEN_FIELDS = ("scenario", "expected_outcome", "user_description", "context")


class ConversationSimulator:
    """Simulated users for `model_callback`, with DeepEval's constructor: `simulator_model` (a
    judge spec or judge; default `openai/gpt-4o-mini`), `opening_message` (the chatbot's first
    message), `max_concurrent`, `async_mode` (False: one conversation at a time) and
    `language`. Other keyword options go to `simulate()` (seed, output, max_cost, ...)."""

    def __init__(
        self,
        model_callback: Callable[..., Any],
        simulator_model: Judge | str | None = None,
        opening_message: str | None = None,
        max_concurrent: int = 5,
        async_mode: bool = True,
        language: str = "English",
        **options: Any,
    ) -> None:
        if not callable(model_callback):
            raise UsageError("model_callback must be a function that answers the user")
        self.model_callback = model_callback
        self.simulator_model = simulator_model or DEFAULT_SIMULATOR_MODEL
        self.opening_message = opening_message
        self.max_concurrent = max_concurrent if async_mode else 1
        self.async_mode = async_mode
        self.language = language
        self.options = options
        self.simulated_conversations: list[ConversationalTestCase] = []
        #: The run behind the last `simulate()`: its failures, usage and stops.
        self.result: SimulationResult | None = None

    def simulate(
        self, conversational_goldens: Iterable[Any], max_user_simulations: int = 10
    ) -> list[ConversationalTestCase]:
        """One conversation per golden, at most `max_user_simulations` user messages each."""
        return run_sync(lambda: self.a_simulate(conversational_goldens, max_user_simulations))

    async def a_simulate(
        self, conversational_goldens: Iterable[Any], max_user_simulations: int = 10
    ) -> list[ConversationalTestCase]:
        """The async twin of `simulate`."""
        scenarios = [_scenario(golden, i) for i, golden in enumerate(conversational_goldens)]
        result = await asimulate(
            scenarios,
            CallableBot(_Callback(self.model_callback), with_call=True),
            self.simulator_model,
            **{
                "max_turns": max_user_simulations,
                "concurrency": self.max_concurrent,
                "language": self.language,
                "opening_message": self.opening_message,
                **self.options,
            },
        )
        self.result = result
        self.simulated_conversations = [ConversationalTestCase.from_sample(s) for s in result]
        return self.simulated_conversations


def _scenario(golden: Any, index: int) -> Scenario | Mapping[str, Any]:
    """A golden as a scenario: a `Scenario` or dict as it is; otherwise its attributes."""
    if isinstance(golden, Scenario | Mapping):
        return golden
    if getattr(golden, "turns", None):
        raise UsageError(
            f"conversational_goldens[{index}] has turns: a simulation starts from none; give "
            "the user's first message as first_user_message instead"
        )
    fields = {name: getattr(golden, name, None) for name in _GOLDEN_FIELDS}
    if fields["scenario"] is None:
        raise UsageError(f"conversational_goldens[{index}] has no scenario")
    name = getattr(golden, "name", None)
    metadata = getattr(golden, "additional_metadata", None)
    fields.update(id=name, metadata=dict(metadata) if metadata else None)
    return {k: v for k, v in fields.items() if v is not None}


class _Callback:
    """A DeepEval model callback as a convoeval bot callable: it gets the arguments it names."""

    def __init__(self, callback: Callable[..., Any]) -> None:
        self.callback = callback
        self.__qualname__ = getattr(callback, "__qualname__", type(callback).__qualname__)
        self.__module__ = getattr(callback, "__module__", __name__)
        try:
            params = inspect.signature(callback).parameters
        except (TypeError, ValueError):
            params = {}  # type: ignore[assignment]
        self.wants = {name for name in ("turns", "thread_id") if name in params} | (
            {"turns", "thread_id"}
            if any(p.kind is inspect.Parameter.VAR_KEYWORD for p in params.values())
            else set()
        )

    async def __call__(self, messages: list[Message], call: BotCall) -> Any:
        last = next((m for m in reversed(messages) if isinstance(m, HumanMessage)), None)
        kwargs: dict[str, Any] = {}
        if "turns" in self.wants:
            kwargs["turns"] = [Turn.from_message(m) for m in messages]
        if "thread_id" in self.wants:
            kwargs["thread_id"] = call.thread_id
        text = last.content if last else ""
        if inspect.iscoroutinefunction(self.callback):
            answer = await self.callback(text, **kwargs)
        else:  # a sync callback runs in a worker thread: conversations go on side by side
            answer = await asyncio.to_thread(self.callback, text, **kwargs)
        if inspect.isawaitable(answer):
            answer = await answer
        return _plain_turn(answer)


def _plain_turn(answer: Any) -> Any:
    """A DeepEval `Turn` (read by attribute) as an AIMessage; anything else as it is."""
    if isinstance(answer, Turn | AIMessage | str) or not hasattr(answer, "content"):
        return answer
    role = getattr(answer, "role", "assistant")
    if role != "assistant":
        raise BotError(f"the model_callback answered a {role!r} turn; it answers 'assistant'")
    return AIMessage(content=str(answer.content))
