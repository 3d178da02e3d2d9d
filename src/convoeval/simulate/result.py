"""`SimulationResult`: the simulated conversations (a list of `MultiTurnSample`s) with what the
run recorded beside them: the failed conversations, the scenarios a cap left unplayed, what the
user model and the bot spent, and the output file (None for a temporary one)."""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path
from typing import Any

from convoeval._text import plural
from convoeval.schema import MultiTurnSample


class SimulationResult(list[MultiTurnSample]):
    """The conversations, in (scenario, trial) order; a plain list of samples to everything
    that takes one (`evaluate`, the metrics)."""

    def __init__(
        self, conversations: Iterable[MultiTurnSample], *, path: Path | None, meta: dict[str, Any]
    ) -> None:
        super().__init__(conversations)
        self.path = path
        self.meta = meta

    @property
    def failures(self) -> list[dict[str, Any]]:
        """The failed conversations: scenario, trial, where, which side failed and the error."""
        return list(self.meta.get("failed", []))

    @property
    def unplayed(self) -> int:
        """Conversations this run did not start because a spending cap was reached."""
        return int(self.meta.get("last_run", {}).get("unplayed", 0))

    @property
    def usage(self) -> dict[str, Any]:
        """What this run spent: `{"user": {...}, "bot": {...}}` (requests, tokens, seconds)."""
        return dict(self.meta.get("last_run", {}).get("usage", {}))

    @property
    def cost(self) -> float | None:
        """US dollars this run spent (None when a paid side had no price)."""
        value = self.meta.get("last_run", {}).get("cost_usd")
        return value if isinstance(value, int | float) else None

    def stops(self) -> dict[str, int]:
        """How many conversations ended for each reason (`simulation.stop`)."""
        counts: dict[str, int] = {}
        for sample in self:
            stop = ((sample.metadata or {}).get("simulation") or {}).get("stop", "?")
            counts[stop] = counts.get(stop, 0) + 1
        return counts

    def failure_text(self) -> str:
        """One line per failed conversation, after a count."""
        lines = [f"{len(self.failures)} {plural(len(self.failures), 'conversation')} failed:"]
        lines += [
            f"  {f['scenario']} trial {f['trial']} ({f['where']}): {f['error']['message']}"
            for f in self.failures
        ]
        return "\n".join(lines)

    def __repr__(self) -> str:
        stops = ", ".join(f"{n} {name}" for name, n in sorted(self.stops().items()))
        return (
            f"SimulationResult({len(self)} {plural(len(self), 'conversation')}"
            + (f": {stops}" if stops else "")
            + f"; {len(self.failures)} failed, {self.unplayed} unplayed)"
        )
