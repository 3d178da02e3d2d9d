"""Scoring records concurrently and writing their rows in input order, each as soon as it and
every row before it are done (a kill loses only what is in flight).

A bounded window of records is in flight or waiting to be written; the judge layer enforces the
endpoint limit on requests. A (record, metric) pair whose judge failed (`JudgeError`) becomes a
failed result, unless the run raises exceptions, in which case the first failure ends the run.
Any other exception is a bug: it ends the run at once, the rows written before it kept.
"""

from __future__ import annotations

import asyncio
import inspect
import json
from collections.abc import Awaitable, Callable, Iterator, Sequence
from typing import IO

from convoeval.judges.protocol._redact import scrub
from convoeval.judges.protocol.base import Judge, JudgeAuthError, JudgeError, Usage
from convoeval.metrics import Metric, MetricFailedError, MetricResult
from convoeval.rows.row import ResultRow, usage_entry, usage_of
from convoeval.runner._inputs import Item
from convoeval.schema import MultiTurnSample

#: A job is a row already known (kept from an earlier run) or one still to score.
Job = ResultRow | Awaitable[ResultRow]


class Writer:
    """Appends rows, one flushed line each, then tells `on_row` (aggregates, progress)."""

    def __init__(self, handle: IO[str], on_row: Callable[[ResultRow], None]) -> None:
        self.handle = handle
        self.on_row = on_row

    def write(self, row: ResultRow) -> None:
        """Write one row, scrubbed of every judge's key, and flush it, so it is on disk before
        the next one is awaited."""
        self.handle.write(scrub(json.dumps(row, ensure_ascii=False, default=str)) + "\n")
        self.handle.flush()
        self.on_row(row)


class _Ordered:
    """Holds finished rows until every earlier one is written; frees a window slot per row."""

    def __init__(self, writer: Writer, slots: asyncio.Semaphore) -> None:
        self.writer = writer
        self.slots = slots
        self.next = 0
        self.ready: dict[int, ResultRow] = {}
        self.running: dict[int, Awaitable[ResultRow]] = {}

    def finish(self, seq: int, row: ResultRow) -> None:
        self.running.pop(seq, None)
        self.ready[seq] = row
        while self.next in self.ready:
            self.writer.write(self.ready.pop(self.next))
            self.slots.release()
            self.next += 1

    async def complete(self, seq: int, job: Awaitable[ResultRow]) -> None:
        self.finish(seq, await job)

    def start(self, group: asyncio.TaskGroup, seq: int, job: Awaitable[ResultRow]) -> None:
        self.running[seq] = job
        group.create_task(self.complete(seq, job))

    def close_unstarted(self) -> None:
        """Close the jobs a failed run cancelled before they began (no "never awaited")."""
        for job in self.running.values():
            if inspect.iscoroutine(job) and inspect.getcoroutinestate(job) == inspect.CORO_CREATED:
                job.close()


async def run_jobs(jobs: Iterator[Job], writer: Writer, *, window: int) -> None:
    """Run jobs with at most `window` rows in flight or unwritten; rows leave in job order.

    Each new job runs up to its first wait (its first judge request) before the next record is
    read, so the first requests go out at once, not after the whole window was read and prepared.
    """
    slots = asyncio.Semaphore(window)
    order = _Ordered(writer, slots)
    try:
        async with asyncio.TaskGroup() as group:
            for seq, job in enumerate(jobs):
                try:
                    await slots.acquire()
                except BaseException:  # the run failed while this job waited for a slot
                    if inspect.iscoroutine(job):
                        job.close()  # never started: no "never awaited" warning
                    raise
                if isinstance(job, dict):
                    order.finish(seq, job)
                else:
                    order.start(group, seq, job)
                    await asyncio.sleep(0)  # the new job runs up to its first wait
    except BaseExceptionGroup as group_error:
        first = group_error.exceptions[0]
        raise first from first.__cause__
    finally:
        order.close_unstarted()


async def score_pair(
    metric: Metric, sample: MultiTurnSample, judge: Judge | None, raise_exceptions: bool
) -> MetricResult:
    """One (record, metric) result; a judge failure becomes a failed result unless raising,
    anything else (a bug in the metric) is raised as it is. A record without a field the metric
    needs (a metric chosen from data that only some records can feed) is unscored, saying which."""
    missing = metric.missing_fields(sample)
    if missing:
        return MetricResult.unscored(f"this record has no {' or '.join(missing)}")
    try:
        result = await metric.score(sample, judge=judge)
    except JudgeAuthError:
        raise  # the credentials were refused: the run stops (nothing more is sent)
    except JudgeError as exc:
        if raise_exceptions:
            raise
        return MetricResult.failure(type(exc).__name__, str(exc) or repr(exc))
    if raise_exceptions and result.failed:
        raise MetricFailedError(metric.name, result)  # e.g. the judge answered 401
    return result


async def score_record(
    item: Item,
    metrics: Sequence[Metric],
    judges: Sequence[Judge | None],
    raise_exceptions: bool,
    previous: ResultRow | None = None,
) -> ResultRow:
    """Score a record with `metrics`; with `previous`, only these metrics are re-scored and the
    other columns of the earlier row are kept."""
    results = await asyncio.gather(
        *(
            score_pair(metric, item.sample, judge, raise_exceptions)
            for metric, judge in zip(metrics, judges, strict=True)
        )
    )
    return build_row(item, metrics, results, previous)


def build_row(
    item: Item,
    metrics: Sequence[Metric],
    results: Sequence[MetricResult],
    previous: ResultRow | None = None,
) -> ResultRow:
    """The self-contained results row of one record (DESIGN §1), conversation included."""
    usage = usage_of(previous["usage"]) if previous is not None else Usage()
    row: ResultRow = {
        "index": item.index,
        "id": item.sample.id,
        "where": item.where,
        "scores": {},
        "reasons": {},
        "details": {},
        "errors": {},
        "usage": usage_entry(usage),
        "sample": item.sample.to_dict(),
    }
    if previous is not None:
        row["scores"].update(previous["scores"])
        row["reasons"].update(previous.get("reasons") or {})
        row["details"].update(previous.get("details") or {})
        row["errors"].update(previous.get("errors") or {})
    for metric, result in zip(metrics, results, strict=True):
        row["scores"][metric.name] = result.value
        row["reasons"][metric.name] = result.reason
        row["details"][metric.name] = result.details
        row["errors"].pop(metric.name, None)
        if result.error is not None:
            row["errors"][metric.name] = {
                "type": result.error["type"],
                "message": result.error["message"],
            }
        usage.add(result.usage)
    row["usage"] = usage_entry(usage)
    return row
