"""`simulate` / `asimulate`: play every scenario (N trials each) against the bot, conversations
side by side, and stream each finished one to the conversations file in input order.

Before anything is sent: the options and every scenario are checked (`FILE:LINE` problems),
the prices `max_cost` needs are known, the output file is writable and locked, and an existing
one resumes only a simulation with the same identity; then the bot's and the user model's
endpoints are checked reachable, unless nothing is left to play (a finished simulation run
again sends nothing).
"""

from __future__ import annotations

import asyncio
import os
import shutil
import tempfile
import warnings
from collections.abc import Awaitable, Callable, Iterable, Iterator, Mapping
from pathlib import Path
from typing import IO, Any, TypedDict, Unpack, cast

from convoeval._sync import run_sync
from convoeval._version import VERSION
from convoeval.errors import UsageError
from convoeval.io.scenarios import PlacedScenario, read_scenarios, scenarios_from
from convoeval.judges.core.endpoints import run_scope
from convoeval.judges.protocol.base import Judge
from convoeval.rows.files import meta_path
from convoeval.runner._lock import RunLock, check_writable
from convoeval.runner._resume import now
from convoeval.runner._schedule import Job, Writer, run_jobs
from convoeval.schema.scenario import Scenario
from convoeval.simulate._http import check_reachable
from convoeval.simulate.bots import Bot
from convoeval.simulate.budget import Budget
from convoeval.simulate.files import (
    SIMULATION_FORMAT,
    fingerprint,
    prepare,
    read_conversations,
    user_identity,
    write_sidecar,
)
from convoeval.simulate.play import Outcome, Settings, Slot, play
from convoeval.simulate.resolve import resolve_bot, resolve_user
from convoeval.simulate.result import SimulationResult
from convoeval.simulate.user import USER_TURN

#: Conversations in flight or waiting to be written per conversation played at once.
WINDOW_FACTOR = 4
DEFAULT_MAX_TURNS = 10
DEFAULT_CONCURRENCY = 4
#: The kinds of bot that are sent the run's seed.
_SEEDED = ("openai", "http")
ScenariosLike = str | os.PathLike[str] | Iterable[Scenario | Mapping[str, Any]]


class SimulateOptions(TypedDict, total=False):
    """The keyword options of `simulate` / `asimulate` (see `asimulate`)."""

    max_turns: int
    max_tokens: int | None
    max_cost: float | None
    prices: Mapping[str, tuple[float, float]] | None
    seed: int | None
    repeat: int
    concurrency: int
    output: str | os.PathLike[str] | None
    overwrite: bool
    retry_failed: bool
    base_url: str | None
    api_key: str | None
    timeout: float | None
    retry_budget: float | None
    cache: bool | None
    user_concurrency: int | None
    user_max_tokens: int | None
    bot_base_url: str | None
    bot_api_key_env: str | None
    bot_system_prompt: str | None
    bot_tools: list[dict[str, Any]] | None
    bot_max_tokens: int | None
    bot_concurrency: int | None
    language: str | None
    opening_message: str | None
    on_conversation: Callable[[dict[str, Any]], None] | None


def simulate(
    scenarios: ScenariosLike, bot: Any, user_model: Judge | str, **options: Unpack[SimulateOptions]
) -> SimulationResult:
    """Play every scenario against `bot` with a simulated user; see `asimulate`."""
    return run_sync(lambda: asimulate(scenarios, bot, user_model, **options))


async def asimulate(
    scenarios: ScenariosLike, bot: Any, user_model: Judge | str, **options: Unpack[SimulateOptions]
) -> SimulationResult:
    """Play every scenario (`repeat` trials each) against `bot`, with `user_model` as the user.

    `scenarios`: a JSONL/JSON/CSV/Parquet file or `Scenario`s / dicts of its fields. `bot`: a
    callable (sync or async) taking the conversation so far (`list[Message]`) and answering text,
    an `AIMessage` or the messages it added; a `Bot` (`OpenAIBot`, `HttpBot`); or a spec:
    'openai/MODEL' (with `bot_base_url`, `bot_api_key_env`, `bot_system_prompt`, `bot_tools`),
    an http(s) URL, 'module:function'. `user_model`: an LLM judge spec or judge (`base_url`,
    `api_key`, `timeout`, `retry_budget`, `cache`, `user_concurrency`, `user_max_tokens`
    configure one built from a spec). Each conversation ends when the user stops (goal reached,
    gave up), at `max_turns` user messages (a scenario's own `max_turns` wins), or when the run
    reaches `max_tokens` or `max_cost` (USD; `prices` as in `evaluate`). `seed` seeds the user
    model and the bot, offset per trial. `concurrency` conversations play at once
    (`bot_concurrency` bounds the bot's requests apart). With `output` the conversations go to
    that JSONL file as each ends, in input order, and a rerun resumes it (`overwrite` starts
    again, `retry_failed` plays failed conversations again); without it a temporary file is used.
    Returns the conversations as `MultiTurnSample`s (`result.failures` lists the failed ones,
    which also raise a `RuntimeWarning`). Raises a `ConvoevalError` before anything is sent when
    the input, options or output file are wrong, or an endpoint cannot be reached.
    """
    max_turns = _whole(options.get("max_turns", DEFAULT_MAX_TURNS), "max_turns", 1)
    repeat = _whole(options.get("repeat", 1), "repeat", 1)
    concurrency = _whole(options.get("concurrency", DEFAULT_CONCURRENCY), "concurrency", 1)
    for name in ("max_tokens", "bot_concurrency", "user_concurrency"):
        if options.get(name) is not None:
            _whole(options.get(name), name, 1)
    for name in ("max_cost", "timeout", "retry_budget"):
        value = options.get(name)
        if value is not None and (not isinstance(value, int | float) or value <= 0):
            raise UsageError(f"{name} must be a positive number, not {value!r}")
    placed, label = _scenarios(scenarios)
    user = resolve_user(user_model, options, concurrency)
    chosen = resolve_bot(bot, options)
    budget = Budget(
        max_tokens=options.get("max_tokens"),
        max_cost=options.get("max_cost"),
        user=user.describe(),
        bot=chosen.describe(),
        prices=options.get("prices"),
    )
    budget.require_prices()
    described = user.describe()
    settings = Settings(
        max_turns=max_turns,
        language=options.get("language"),
        opening_message=options.get("opening_message"),
        user_seed=described.get("seed") if isinstance(described.get("seed"), int) else None,
        # Only a bot behind HTTP is sent a seed; a Python bot samples as it will.
        bot_seed=options.get("seed") if chosen.describe().get("kind") in _SEEDED else None,
        user_samples=int(described.get("samples") or 1),
        repeat=repeat,
    )
    with run_scope():
        return await _run(placed, label, chosen, user, settings, budget, concurrency, options)


def _whole(value: Any, name: str, least: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int) or value < least:
        raise UsageError(f"{name} must be a whole number of at least {least}, not {value!r}")
    return value


def _scenarios(scenarios: ScenariosLike) -> tuple[list[PlacedScenario], str]:
    """The scenarios and where they came from (their file, or "(in memory)")."""
    if isinstance(scenarios, str | os.PathLike):
        return read_scenarios(scenarios), os.fspath(scenarios)
    if isinstance(scenarios, Mapping | Scenario):
        raise UsageError("give the scenarios as a list (or a file path), not one scenario")
    return scenarios_from(scenarios), "(in memory)"


def _identity(
    placed: list[PlacedScenario], bot: Bot, user: Judge, settings: Settings
) -> dict[str, Any]:
    records = [{"id": p.id, **p.scenario.model_dump(exclude_none=True)} for p in placed]
    return {
        "scenarios": fingerprint(records),
        "bot": bot.describe(),
        "user_model": user_identity(user.describe()),
        "user_step": USER_TURN.fingerprint(),
        "max_turns": settings.max_turns,
        "bot_seed": settings.bot_seed,
        "repeat": settings.repeat,
        "language": settings.language,
        "opening_message": settings.opening_message,
    }


async def _run(
    placed: list[PlacedScenario],
    label: str,
    bot: Bot,
    user: Judge,
    settings: Settings,
    budget: Budget,
    concurrency: int,
    options: SimulateOptions,
) -> SimulationResult:
    owned = None
    output = options.get("output")
    if output is None:
        owned = tempfile.mkdtemp(prefix="convoeval-simulation-")
        output = os.path.join(owned, "conversations.jsonl")
    path = Path(output)
    meta: dict[str, Any] = {
        "format": SIMULATION_FORMAT,
        "version": 1,
        "convoeval_version": VERSION,
        "scenarios_file": label,
        "identity": _identity(placed, bot, user, settings),
        "started": now(),
        "completed": None,
    }
    try:
        for target, what in (
            (path, "conversations file"),
            (meta_path(path), "conversations sidecar"),
        ):
            check_writable(target, what)
        with RunLock(path):
            existing = prepare(
                path,
                meta,
                overwrite=options.get("overwrite", False),
                retry_failed=options.get("retry_failed", False),
            )
            meta["failed"] = list(existing.failed.values())
            write_sidecar(path, meta)
            slots = [
                Slot(i, trial, one.id, one.where, one.scenario)
                for i, one in enumerate(placed)
                for trial in range(settings.repeat)
                if not existing.done((i, trial))
            ]
            try:
                if slots:
                    await _reach(bot, user)
                    await _play_all(
                        slots,
                        path,
                        meta,
                        (bot, user),
                        settings,
                        budget,
                        concurrency,
                        options.get("on_conversation"),
                    )
                meta["completed"] = now()
            finally:
                _totals(meta, budget)
                write_sidecar(path, meta)
                await _close(bot, user)
        conversations = read_conversations(path)
    finally:
        if owned is not None:
            shutil.rmtree(owned, ignore_errors=True)
    result = SimulationResult(
        conversations,
        path=None if owned is not None else path,
        meta=meta,
    )
    if result.failures:
        warnings.warn(result.failure_text(), RuntimeWarning, stacklevel=3)
    return result


async def _reach(bot: Bot, user: Judge) -> None:
    endpoint = user.describe().get("endpoint")
    if isinstance(endpoint, str):
        await check_reachable(
            endpoint,
            f"the user model {user.name}",
            "Check that the server runs and --base-url (OPENAI_BASE_URL) points at it",
        )
    url = bot.endpoint()
    if url is not None:
        await check_reachable(
            url, f"the bot {bot.name}", "Check that the bot runs and its URL is right"
        )


async def _play_all(
    slots: list[Slot],
    path: Path,
    meta: dict[str, Any],
    sides: tuple[Bot, Judge],
    settings: Settings,
    budget: Budget,
    concurrency: int,
    on_conversation: Callable[[dict[str, Any]], None] | None,
) -> None:
    """Play the slots, `concurrency` at once, and write each outcome in slot order."""
    gate = asyncio.Semaphore(concurrency)
    bot, user = sides

    async def one(slot: Slot) -> Outcome:
        async with gate:
            return await play(slot, bot, user, settings, budget)

    def jobs() -> Iterator[Awaitable[Outcome]]:
        for slot in slots:
            yield one(slot)

    with open(path, "a", encoding="utf-8") as handle:
        sink = _Sink(handle, path, meta, on_conversation)
        await run_jobs(cast(Iterator[Job], jobs()), sink, window=WINDOW_FACTOR * concurrency)


class _Sink(Writer):
    """Writes each conversation as one flushed line; records failures in the sidecar (written
    at once) and counts the slots a cap left unplayed."""

    def __init__(
        self,
        handle: IO[str],
        path: Path,
        meta: dict[str, Any],
        on_conversation: Callable[[dict[str, Any]], None] | None,
    ) -> None:
        super().__init__(handle, lambda row: None)
        self.path = path
        self.meta = meta
        self.meta["unplayed"] = 0
        self.tell = on_conversation

    def write(self, row: Any) -> None:
        outcome = cast(Outcome, row)
        if outcome.kind == "conversation":
            super().write(cast(Any, outcome.record))
            block = outcome.record["metadata"]["simulation"]
            summary = {k: block[k] for k in ("scenario", "trial", "stop", "turns")}
        elif outcome.kind == "failed":
            self.meta["failed"].append(outcome.record)
            write_sidecar(self.path, self.meta)
            record = outcome.record
            summary = {k: record[k] for k in ("scenario", "trial", "turns")}
            summary.update(stop="failed", error=record["error"]["message"])
        else:
            self.meta["unplayed"] += 1
            summary = {"scenario": outcome.slot.scenario_id, "trial": outcome.slot.trial + 1}
            summary["stop"] = "unplayed"
        if self.tell is not None:
            self.tell(summary)


def _totals(meta: dict[str, Any], budget: Budget) -> None:
    user, bot = budget.totals()
    meta["last_run"] = {
        "usage": {"user": user.as_dict(), "bot": bot.as_dict()},
        "cost_usd": budget.cost(),
        "unplayed": meta.pop("unplayed", 0),
        "cap_reached": budget.reached(),
    }


async def _close(bot: Bot, user: Judge) -> None:
    await bot.aclose()
    closer = getattr(user, "aclose", None)
    if closer is not None:
        await closer()
