"""One simulated conversation: the simulated user and the bot take turns until the user stops
(goal reached, gave up), the turn cap, a spending cap, or a bot tool call that nothing here can
run ends it; every stop is recorded with why.

A conversation whose bot failed (it raised, or its endpoint failed after retries) or whose user
model gave no valid answer after its re-ask is a failure: recorded, never written as a
conversation (a cut-off conversation would be scored as if it were whole).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any, Literal

from convoeval.judges.ensembles.repeat import repeat_scope
from convoeval.judges.protocol.base import Judge, JudgeError, Usage
from convoeval.schema import AIMessage, HumanMessage, Message, MultiTurnSample
from convoeval.schema.scenario import Scenario
from convoeval.simulate.bots import Bot, BotCall, BotError, extend
from convoeval.simulate.budget import Budget
from convoeval.simulate.user import USER_TURN, user_turn_input

#: Why a conversation ended (recorded as `simulation.stop`).
STOPS = ("goal_reached", "gave_up", "max_turns", "max_tokens", "max_cost", "tool_call")


@dataclass(frozen=True)
class Settings:
    """What every conversation of a run shares."""

    max_turns: int
    language: str | None
    opening_message: str | None
    user_seed: int | None
    bot_seed: int | None
    user_samples: int
    repeat: int


@dataclass
class Slot:
    """One conversation to play: scenario `index` (from 0) and `trial` (from 0)."""

    index: int
    trial: int
    scenario_id: str
    where: str
    scenario: Scenario


@dataclass
class Outcome:
    """What playing a slot gave: a conversation, a failure, or nothing (a cap was reached
    before its first turn)."""

    slot: Slot
    kind: Literal["conversation", "failed", "unplayed"]
    record: dict[str, Any] = field(default_factory=dict)

    def key(self) -> list[int]:
        return [self.slot.index, self.slot.trial]


def seeds(settings: Settings, trial: int) -> tuple[int | None, int | None]:
    """The (user model, bot) seeds of trial `trial`: the run's, offset per trial as a repeated
    judge run offsets them (judges/ensembles/repeat.py)."""
    user = settings.user_seed
    bot = settings.bot_seed
    return (
        None if user is None else user + trial * settings.user_samples,
        None if bot is None else bot + trial,
    )


async def play(slot: Slot, bot: Bot, user: Judge, settings: Settings, budget: Budget) -> Outcome:
    """Play one conversation (inside its trial's repeat scope: fresh user samples per trial)."""
    with repeat_scope(slot.trial):
        return await _play(slot, bot, user, settings, budget)


async def _play(slot: Slot, bot: Bot, user: Judge, settings: Settings, budget: Budget) -> Outcome:
    if budget.reached():
        return Outcome(slot, "unplayed")
    with budget.track() as (user_usage, bot_usage):
        return await _talk(slot, bot, user, settings, budget, user_usage, bot_usage)


async def _talk(
    slot: Slot,
    bot: Bot,
    user: Judge,
    settings: Settings,
    budget: Budget,
    user_usage: Usage,
    bot_usage: Usage,
) -> Outcome:
    """The turns of one conversation, its spending counted into the two usages."""
    scenario = slot.scenario
    cap = scenario.max_turns or settings.max_turns
    user_seed, bot_seed = seeds(settings, slot.trial)
    trial = slot.trial + 1
    call = BotCall(f"{slot.scenario_id}#{trial}", slot.scenario_id, trial, bot_seed)
    messages: list[Message] = []
    if settings.opening_message:
        messages.append(AIMessage(content=settings.opening_message))
    turns, stop, detail = 0, "", ""
    try:
        while True:
            if turns >= cap:
                stop, detail = "max_turns", f"the turn cap ({cap}) was reached"
                break
            reached = budget.reached()
            if reached:
                stop, detail = reached, f"the run's {reached} cap was reached"
                break
            if turns == 0 and scenario.first_user_message:
                text = scenario.first_user_message
            else:
                inputs = user_turn_input(
                    scenario.scenario,
                    scenario.user_description,
                    scenario.expected_outcome,
                    messages,
                    turn=turns + 1,
                    max_turns=cap,
                    language=settings.language,
                )
                answer = (await user.run(USER_TURN, inputs, usage=user_usage)).output
                if answer.decision != "continue":
                    stop, detail = answer.decision, answer.reason
                    break
                text = answer.message
            messages.append(HumanMessage(content=text))
            turns += 1
            added = await bot.reply(list(messages), call, bot_usage)
            messages = extend(messages, added, f"the bot ({bot.name})")
            last = messages[-1]
            if isinstance(last, AIMessage) and last.tool_calls:
                stop = "tool_call"
                detail = "the bot's reply calls tools that were not run, so the user cannot answer"
                break
    except (BotError, JudgeError) as exc:
        side = "bot" if isinstance(exc, BotError) else "user model"
        return Outcome(
            slot,
            "failed",
            _failure(slot, side, exc, turns, user_usage, bot_usage, user.name, bot.name),
        )
    if turns == 0 and stop in ("max_tokens", "max_cost"):
        return Outcome(slot, "unplayed")
    block = {
        **_where(slot, settings),
        "stop": stop,
        "stop_detail": detail,
        "turns": turns,
        "max_turns": cap,
        "seeds": {"user": user_seed, "bot": bot_seed},
        "user_model": user.name,
        "bot": bot.name,
        "usage": {"user": user_usage.as_dict(), "bot": bot_usage.as_dict()},
    }
    sample = MultiTurnSample(
        user_input=messages,
        id=slot.scenario_id if settings.repeat == 1 else f"{slot.scenario_id}#{trial}",
        metadata={**(scenario.metadata or {}), "simulation": block},
        **scenario.sample_fields(),
    )
    return Outcome(slot, "conversation", sample.to_dict())


def _where(slot: Slot, settings: Settings) -> dict[str, Any]:
    return {
        "scenario": slot.scenario_id,
        "index": slot.index,
        "trial": slot.trial + 1,
        "trials": settings.repeat,
        "where": slot.where,
    }


def _failure(
    slot: Slot,
    side: str,
    exc: Exception,
    turns: int,
    user_usage: Usage,
    bot_usage: Usage,
    user_name: str,
    bot_name: str,
) -> dict[str, Any]:
    return {
        "scenario": slot.scenario_id,
        "index": slot.index,
        "trial": slot.trial + 1,
        "where": slot.where,
        "failed": side,
        "error": {"type": type(exc).__name__, "message": str(exc)},
        "turns": turns,
        "user_model": user_name,
        "bot": bot_name,
        "usage": {"user": user_usage.as_dict(), "bot": bot_usage.as_dict()},
    }
