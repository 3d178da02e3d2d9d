"""`evaluate` / `aevaluate`: score every (record, metric) pair, streaming rows to disk in order.

Before any judge call every record is validated and checked against every metric's required
fields. Pairs then run concurrently (the judge layer enforces the endpoint limit) over a bounded
window of records; finished records wait in a reorder buffer so rows are written in input
order, one flushed line each. A run with the same output file resumes where it stopped.
"""

from __future__ import annotations

import asyncio
import json
import os
import tempfile
from collections import deque
from collections.abc import Iterable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from pathlib import Path
from typing import IO, Any

from convoeval._sync import run_sync
from convoeval.judges.base import Judge, Usage
from convoeval.metrics import Metric, MetricResult
from convoeval.runner.inputs import Item, SamplesLike, Source
from convoeval.runner.plan import JudgePlan, build_metrics, metric_entry, plan_judges
from convoeval.runner.progress import Progress, make_progress
from convoeval.runner.results import Aggregates, EvaluationResult
from convoeval.runner.resume import (
    META_FORMAT,
    Done,
    ResultsFileError,
    conflict,
    meta_path,
    read_meta,
    read_rows,
    write_meta,
)

#: Records in flight per unit of `max_concurrency` (a slow record never stalls the others).
WINDOW_FACTOR = 4


def evaluate(
    samples: SamplesLike,
    metrics: Iterable[Metric | str] | Metric | str,
    judge: Judge | str | None = None,
    *,
    max_concurrency: int = 16,
    cache: bool = True,
    show_progress: bool = True,
    raise_exceptions: bool = False,
    output: str | os.PathLike[str] | None = None,
    resume: bool = True,
    overwrite: bool = False,
    format: str = "auto",
    base_url: str | None = None,
    api_key: str | None = None,
    prices: Mapping[str, tuple[float, float]] | None = None,
    progress: Progress | None = None,
) -> EvaluationResult:
    """Score samples (a data file, a list or any iterable) with metrics; see `aevaluate`."""
    return run_sync(
        lambda: aevaluate(
            samples,
            metrics,
            judge,
            max_concurrency=max_concurrency,
            cache=cache,
            show_progress=show_progress,
            raise_exceptions=raise_exceptions,
            output=output,
            resume=resume,
            overwrite=overwrite,
            format=format,
            base_url=base_url,
            api_key=api_key,
            prices=prices,
            progress=progress,
        )
    )


async def aevaluate(
    samples: SamplesLike,
    metrics: Iterable[Metric | str] | Metric | str,
    judge: Judge | str | None = None,
    *,
    max_concurrency: int = 16,
    cache: bool = True,
    show_progress: bool = True,
    raise_exceptions: bool = False,
    output: str | os.PathLike[str] | None = None,
    resume: bool = True,
    overwrite: bool = False,
    format: str = "auto",
    base_url: str | None = None,
    api_key: str | None = None,
    prices: Mapping[str, tuple[float, float]] | None = None,
    progress: Progress | None = None,
) -> EvaluationResult:
    """Score every record with every metric and stream one results row per record to `output`.

    `samples`: a data file path (JSONL, JSON, CSV, Parquet; any layout) or an iterable of
    `MultiTurnSample`, `ConversationalTestCase` or dicts. `metrics`: instances or names.
    `judge`: a Judge, a spec ('offline', 'openai/MODEL') or None (offline, unless a metric has
    its own); `base_url`, `api_key`, `max_concurrency` (the endpoint limit) and `cache` are
    passed to `resolve_judge` for a spec. Without `output` rows go to a temporary file owned by
    the result. With `output` an interrupted run resumes (`resume=True`); `overwrite=True`
    starts again. Raises `DataError` / `RequiredFieldsError` (every bad record) or
    `OfflineJudgeError` before any judge call; a metric that raises gives a failed result
    unless `raise_exceptions`.
    """
    if max_concurrency < 1:
        raise ValueError("max_concurrency must be >= 1")
    chosen = build_metrics([metrics] if isinstance(metrics, Metric | str) else metrics)
    options = {"base_url": base_url, "api_key": api_key, "concurrency": max_concurrency}
    options["cache"] = cache
    plan = plan_judges(chosen, judge, options)
    source = Source(samples, format=format)
    try:
        scan = source.scan(chosen)
        owned = None
        if output is None:
            owned = tempfile.mkdtemp(prefix="convoeval-results-")
            output = os.path.join(owned, "results.jsonl")
        path = Path(output)
        meta = _meta(source, scan.fingerprint, scan.count, chosen, plan)
        thresholds = {m.name: m.threshold for m in chosen}
        aggregates = Aggregates([m.name for m in chosen], thresholds)
        done = _prepare(path, meta, aggregates, resume=resume, overwrite=overwrite)
        write_meta(path, meta)
        shown = progress if progress is not None else make_progress(show_progress)
        shown.start(scan.count, len(done))
        try:
            with open(path, "a", encoding="utf-8") as handle:
                await _run(
                    source.items(),
                    done,
                    chosen,
                    plan,
                    _Writer(handle, aggregates, shown),
                    window=max(2, WINDOW_FACTOR * max_concurrency),
                    raise_exceptions=raise_exceptions,
                )
        finally:
            shown.close()
        meta["completed"] = _now()
        write_meta(path, meta)
    finally:
        source.close()
        await plan.close_clients(chosen)
    return EvaluationResult(path, meta, aggregates, prices=prices, owned_dir=owned)


def _now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")


def _meta(
    source: Source, fingerprint: str, count: int, metrics: Sequence[Metric], plan: JudgePlan
) -> dict[str, Any]:
    from convoeval import __version__  # at call time: the package imports this module

    identities = plan.identity(metrics)
    return {
        "format": META_FORMAT,
        "version": 1,
        "convoeval_version": __version__,
        "data": source.label,
        "format_option": source.format if source.label != "<python objects>" else "auto",
        "data_fingerprint": fingerprint,
        "records": count,
        "metrics": [metric_entry(m, i) for m, i in zip(metrics, identities, strict=True)],
        "judge": plan.describe(),
        "judge_identity": [i for i in identities if i is not None],
        "uses_judge": any(m.uses_judge for m in metrics),
        "started": _now(),
        "completed": None,
        "rows": "one JSON object per record in input order; 'sample' holds the conversation",
    }


def _prepare(
    path: Path, meta: dict[str, Any], aggregates: Aggregates, *, resume: bool, overwrite: bool
) -> Done:
    """Start a fresh results file or resume an existing one (checked against its meta)."""
    has_rows = path.exists() and path.stat().st_size > 0
    if overwrite or not has_rows:
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(b"")
        return Done()
    if not resume:
        raise ResultsFileError(
            f"{path} already holds results; pass resume=True to continue it or overwrite=True "
            "(--overwrite) to start again"
        )
    old = read_meta(path)
    if old is None:
        raise ResultsFileError(
            f"{path} already holds rows but has no {meta_path(path).name}, so it cannot be "
            "resumed safely; pass overwrite=True (--overwrite) or choose another output file"
        )
    problem = conflict(old, meta, str(path))
    if problem is not None:
        raise ResultsFileError(problem)
    meta["started"] = old.get("started", meta["started"])
    meta["resumed"] = _now()
    return read_rows(path, aggregates.add_row)


class _Writer:
    """Writes rows in order, one flushed line each, and feeds the aggregates and the progress."""

    def __init__(self, handle: IO[str], aggregates: Aggregates, progress: Progress) -> None:
        self.handle = handle
        self.aggregates = aggregates
        self.progress = progress

    def write(self, row: dict[str, Any]) -> None:
        self.handle.write(json.dumps(row, ensure_ascii=False, default=str) + "\n")
        self.handle.flush()
        self.aggregates.add_row(row)
        self.progress.advance()


async def _run(
    items: Iterator[Item],
    done: Done,
    metrics: Sequence[Metric],
    plan: JudgePlan,
    writer: _Writer,
    *,
    window: int,
    raise_exceptions: bool,
) -> None:
    """Score records over a bounded window; write each row once all earlier ones are written."""
    queue: deque[asyncio.Task[dict[str, Any]]] = deque()
    try:
        for item in items:
            if item.index in done:
                continue
            queue.append(asyncio.create_task(_score_record(item, metrics, plan, raise_exceptions)))
            while len(queue) >= window or (queue and queue[0].done()):
                writer.write(await queue.popleft())
        while queue:
            writer.write(await queue.popleft())
    finally:
        for task in queue:
            task.cancel()
        if queue:
            await asyncio.gather(*queue, return_exceptions=True)


async def _score_pair(
    metric: Metric, sample: Any, judge: Judge | None, raise_exceptions: bool
) -> MetricResult:
    try:
        # The unbound base method: a DeepEval-style `measure()` may have shadowed `.score`.
        return await Metric.score(metric, sample, judge=judge)
    except Exception as exc:
        if raise_exceptions:
            raise
        return MetricResult.failure(type(exc).__name__, str(exc) or repr(exc))


async def _score_record(
    item: Item, metrics: Sequence[Metric], plan: JudgePlan, raise_exceptions: bool
) -> dict[str, Any]:
    results = await asyncio.gather(
        *(
            _score_pair(metric, item.sample, judge, raise_exceptions)
            for metric, judge in zip(metrics, plan.per_metric, strict=True)
        )
    )
    return build_row(item, metrics, results)


def build_row(
    item: Item, metrics: Sequence[Metric], results: Sequence[MetricResult]
) -> dict[str, Any]:
    """The self-contained results row of one record (DESIGN §1), conversation included."""
    usage = Usage()
    row: dict[str, Any] = {
        "index": item.index,
        "id": item.sample.id,
        "where": item.where,
        "scores": {},
        "reasons": {},
        "details": {},
        "errors": {},
    }
    for metric, result in zip(metrics, results, strict=True):
        row["scores"][metric.name] = result.value
        row["reasons"][metric.name] = result.reason
        row["details"][metric.name] = result.details
        if result.error is not None:
            row["errors"][metric.name] = dict(result.error)
        usage.add(result.usage)
    row["usage"] = usage.as_dict()
    row["sample"] = item.sample.to_dict()
    return row
