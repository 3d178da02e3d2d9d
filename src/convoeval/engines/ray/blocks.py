"""What travels between the Ray driver and its workers: a record to score (`Pending`) and the
reports coming back (`Scored`). The worker imports this module and the driver imports both, so the
arrows go one way."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from convoeval.judges.protocol.base import Judge
from convoeval.metrics import Metric
from convoeval.rows.row import ResultRow
from convoeval.runner._inputs import Item


@dataclass(frozen=True, slots=True)
class Pending:
    """A record to score on a worker: the metrics to score (by name) and its earlier row when
    only its failed metrics are re-scored."""

    item: Item
    names: tuple[str, ...]
    previous: ResultRow | None = None


#: What a worker streams back from a block, every few hundredths of a second: the rows finished
#: since (each with its record's position in the block) and, per position of a record still
#: running, the requests sent for it so far.
Scored = tuple[list[tuple[int, ResultRow]], dict[int, int]]


def pending(
    item: Item,
    metrics: Sequence[Metric],
    judges: Sequence[Judge | None],
    raise_exceptions: bool,
    previous: ResultRow | None = None,
) -> Pending:
    """What the run's job list holds for a record the Ray engine scores (same call as
    `score_record`, so the runner's choice of records and metrics is the local one)."""
    return Pending(item, tuple(m.name for m in metrics), previous)
