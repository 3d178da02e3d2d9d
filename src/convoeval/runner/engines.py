"""Where a run's records are scored: `local` (the runner's own loop) or another engine, found
through the `convoeval.engines` entry points (ours: `ray` -> `convoeval.engines.ray:ENGINE`; a
third party can add one the same way) or given to `register_engine`. The runner reaches engines
only through this registry, so its imports never point up (ARCHITECTURE.md §2)."""

from __future__ import annotations

import functools
from collections.abc import Iterator, Mapping, Sequence
from importlib.metadata import EntryPoint, PackageNotFoundError, distribution, entry_points
from typing import Any, Protocol

from convoeval.errors import UsageError
from convoeval.metrics import Metric
from convoeval.runner._plan import JudgePlan
from convoeval.runner._schedule import Job

LOCAL = "local"


class StartedEngine(Protocol):
    """An engine running for one run: it turns the run's jobs into jobs the writer awaits in
    input order, with `window` of them in flight; `describe` is what the run's sidecar records
    of it (its name and `startup_s`, the seconds it took to start)."""

    @property
    def window(self) -> int: ...

    def describe(self) -> dict[str, Any]: ...

    def blocks(self, jobs: Iterator[Any]) -> Iterator[Job]: ...

    async def close(self) -> None: ...


class EngineKind(Protocol):
    """An engine as registered: its own option names, their check, how a record to score is
    described to it (`pending`, called as the local scorer is) and how it starts (told how many
    records the run has to score)."""

    @property
    def options(self) -> tuple[str, ...]: ...

    def check(self, options: Mapping[str, Any]) -> None: ...

    def pending(self, *args: Any) -> Any: ...

    async def start(
        self,
        metrics: Sequence[Metric],
        plan: JudgePlan,
        options: Mapping[str, Any],
        records: int | None = None,
    ) -> StartedEngine: ...


_ENGINES: dict[str, EngineKind] = {}


#: The entry-point group engines are published under.
GROUP = "convoeval.engines"


def register_engine(name: str, kind: EngineKind) -> None:
    """Make `engine=name` (`--engine NAME`) available (besides the published entry points)."""
    _ENGINES[name] = kind


def _engines(name: str = LOCAL) -> dict[str, EngineKind]:
    """The registered engines and the published ones, loaded on first use: convoeval's own
    always, every installed distribution's only when `name` is none of those (scanning all
    their metadata takes 10-30 ms, which a local run need not pay: the options it refuses are
    `evaluate`'s own keywords, so only convoeval's engines can own them)."""
    points = _own()
    if name != LOCAL and name not in _ENGINES and name not in {p.name for p in points}:
        points = _published()
    for point in points:
        if point.name not in _ENGINES:
            _ENGINES[point.name] = point.load()
    return _ENGINES


@functools.cache
def _own() -> tuple[EntryPoint, ...]:
    """convoeval's own `convoeval.engines` entry points (none when it is not installed)."""
    try:
        return tuple(distribution("convoeval").entry_points.select(group=GROUP))
    except PackageNotFoundError:  # a source tree that was never installed
        return ()


@functools.cache
def _published() -> tuple[EntryPoint, ...]:
    """Every installed distribution's `convoeval.engines` entry points, found once per process."""
    return tuple(entry_points(group=GROUP))


def choose_engine(options: Mapping[str, Any]) -> EngineKind | None:
    """The run's engine, None for the local one; every engine option checked before anything
    is read (an option of an engine the run does not use is refused)."""
    name = options.get("engine") or LOCAL
    engines = _engines(name)
    if name != LOCAL and name not in engines:
        known = " or ".join(repr(n) for n in [LOCAL, *engines])
        raise UsageError(f"engine must be {known}, not {name!r}")
    kind = engines.get(name)
    foreign = [
        key
        for each in engines.values()
        if each is not kind
        for key in each.options
        if options.get(key) is not None
    ]
    if foreign:
        flags = ", ".join(f"{key} (--{key.replace('_', '-')})" for key in foreign)
        where = " or ".join(f"engine={n!r} (--engine {n})" for n in engines if n != name)
        raise UsageError(f"{flags}: only with {where}")
    if kind is not None:
        kind.check(options)
    return kind
