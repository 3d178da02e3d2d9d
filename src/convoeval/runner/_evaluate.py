"""`evaluate` / `aevaluate`: check everything, then score every (record, metric) pair and stream
rows to disk in input order.

Before any judge call: options and metrics are checked, every record is validated against the
metrics' required fields in one scan (which also picks the metrics when none are given), every
output path is checked writable, the results file is locked, and an LLM judge's endpoint is
checked reachable. A run with the same output file resumes; `retry_failed` re-scores only the
failed pairs of an earlier run and replaces the file atomically.
"""

from __future__ import annotations

import os
import shutil
import tempfile
import time
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from contextlib import AbstractContextManager, nullcontext
from functools import partial
from pathlib import Path
from typing import Any, TypedDict, Unpack, cast

from convoeval._sync import run_sync
from convoeval._version import VERSION
from convoeval.errors import UsageError
from convoeval.judges.core.endpoints import run_scope
from convoeval.judges.pricing import check_prices
from convoeval.metrics import Metric
from convoeval.rows.files import META_FORMAT, iter_rows, meta_path, write_meta
from convoeval.rows.row import ResultRow, RunMeta
from convoeval.runner import _batch_run
from convoeval.runner._inputs import IN_MEMORY, Item, SamplesLike, Scan, Source
from convoeval.runner._lock import RunLock, check_writable
from convoeval.runner._options import check_options
from convoeval.runner._plan import (
    JudgePlan,
    JudgeSpec,
    build_metrics,
    candidates,
    metric_entry,
    metric_ranges,
    offline_member,
    plan_judges,
)
from convoeval.runner._reach_judges import check_judges
from convoeval.runner._resume import RowPlan, now, prepare
from convoeval.runner._schedule import score_record
from convoeval.runner.engines import EngineKind, choose_engine
from convoeval.runner.progress import Progress, make_progress
from convoeval.runner.results import Aggregates, EvaluationResult

#: Records in flight per unit of `max_concurrency` (a slow record never stalls the others).
WINDOW_FACTOR = 4
DEFAULT_CONCURRENCY = 16
#: evaluate() keyword -> resolve_judge option, for a judge given as a spec.
_JUDGE_OPTIONS = {
    "base_url": "base_url",
    "api_key": "api_key",
    "max_concurrency": "concurrency",
    "cache": "cache",
    "timeout": "timeout",
    "retry_budget": "retry_budget",
    "reason_first": "reason_first",
    "judge_samples": "judge_samples",
    "batch": "batch",
}


class RunOptions(TypedDict, total=False):
    """The keyword options of `evaluate` / `aevaluate` (see `aevaluate`)."""

    dataset: SamplesLike
    test_cases: SamplesLike
    max_concurrency: int | None
    concurrency: int | None  # an alias of max_concurrency (README.md, "One name per concept")
    cache: bool | None
    timeout: float | None
    retry_budget: float | None
    reason_first: bool | None
    judge_samples: int | None
    batch: bool | None
    base_url: str | None
    api_key: str | None
    show_progress: bool
    progress: Progress | None
    raise_exceptions: bool
    output: str | os.PathLike[str] | None
    resume: bool
    overwrite: bool
    retry_failed: bool
    format: str
    messages_field: str | None
    fields: Mapping[str, str] | None
    limit: int | None
    skip_invalid: bool
    reference_topics: Sequence[str] | None
    thresholds: Mapping[str, float] | None
    repeat: int | None
    prices: Mapping[str, tuple[float, float]] | None
    engine: str
    ray_address: str | None
    ray_workers: int | None
    ray_block_size: int | None


def evaluate(
    samples: SamplesLike | None = None,
    metrics: Iterable[Metric | str | Any] | Metric | str | None = None,
    judge: JudgeSpec = None,
    **options: Unpack[RunOptions],
) -> EvaluationResult:
    """Score samples (a data file, a list or any iterable) with metrics; see `aevaluate`."""
    return run_sync(lambda: aevaluate(samples, metrics, judge, **options))


async def aevaluate(
    samples: SamplesLike | None = None,
    metrics: Iterable[Metric | str | Any] | Metric | str | None = None,
    judge: JudgeSpec = None,
    **options: Unpack[RunOptions],
) -> EvaluationResult:
    """Score every record with every metric and stream one results row per record to `output`.

    `samples` (or Ragas's `dataset=`, DeepEval's `test_cases=`): a data file path (JSONL, JSON,
    CSV, Parquet; any layout) or an iterable of `MultiTurnSample`, `ConversationalTestCase` or
    dicts. `metrics`: instances, names or `NAME:key=value,...` specs; None picks every metric the
    data and the judge support. `judge`: a Judge, a spec ('offline', 'openai/MODEL'), None, or
    a list of them: a judge panel (majority vote; `result.panel_agreement()`).
    `max_concurrency` (alias `concurrency`), `cache`, `timeout`, `retry_budget`, `reason_first`,
    `judge_samples` (N answers per step, majority vote), `batch` (send every round through the
    Batch API, docs/scale.md), `base_url`, `api_key` configure a judge built from a spec
    (refused with a Judge object, which carries its own); options are checked as their CLI
    twins are (runner/_options.py).
    `format`, `messages_field`, `fields` say how to read records; `limit` keeps the first N;
    `reference_topics` is given to every record that has none; `skip_invalid` scores the valid
    records and lists the others in `result.meta["invalid"]`. `thresholds` sets pass marks by
    metric name. `repeat=N` scores every record N times with fresh judge samples: `scores`
    holds the means, each row's `repeats` the spread, `result.intervals()` the bootstrap
    confidence intervals (runner/_repeats.py, docs/repeats.md). Without `output` rows go to
    a temporary file, kept while the result, its `path` or a reader of its rows is held; with
    it an interrupted run resumes (`resume=True`), `overwrite=True` starts again and
    `retry_failed` re-scores only the failed (record, metric) pairs. `engine="ray"` scores the
    records on Ray workers (`ray_address`, `ray_workers`, `ray_block_size`; docs/scale.md), the
    rows written here as in a local run.
    An unknown keyword raises `UsageError` naming the nearest valid one; Ragas's `llm=` is the
    judge; the peers' other evaluate() keywords (`PEER_KEYWORDS`) are accepted with no effect and
    named in the run's sidecar (`peer_keywords`).
    Raises a `ConvoevalError` (bad data, options or results file, unreachable judge) before any
    judge call; a pair whose judge fails gives a failed result, unless `raise_exceptions`,
    which raises the first failure. Any other exception (a bug in a metric) is raised as it
    is, the rows written before it kept.
    """
    peers = check_options(cast(dict[str, Any], options), RunOptions.__annotations__)
    if peers.get("llm") is not None:
        if judge is not None and judge != peers["llm"]:
            raise UsageError("give the judge once: judge= or llm= (Ragas's name), not both")
        judge = peers["llm"]
    given = [
        v for v in (samples, options.get("dataset"), options.get("test_cases")) if v is not None
    ]
    if len(given) != 1:
        raise UsageError("give the samples once: samples, dataset= or test_cases=")
    data = getattr(given[0], "samples", given[0])  # a Ragas EvaluationDataset holds .samples
    check_prices(options.get("prices"))  # a bad price is refused before anything is scored
    engine = choose_engine(options)
    if not options.get("batch"):
        options.pop("batch", None)  # batch=False is the default, not a judge setting
    elif engine is not None:
        raise UsageError(
            f"batch=True (--batch) runs on the local engine only, not engine={options['engine']!r}"
        )
    named = sorted(name for name in _JUDGE_OPTIONS if options.get(name) is not None)
    specs = judge if isinstance(judge, list | tuple) else [judge]
    if named and any(one is not None and not isinstance(one, str) for one in specs):
        raise UsageError(
            f"{', '.join(named)} {'configures' if len(named) == 1 else 'configure'} a judge "
            "built from a spec; a Judge object carries "
            "its own settings (e.g. OpenAIJudge(model, concurrency=4, cache=False))"
        )
    source = Source(
        data,
        format=options.get("format", "auto"),
        limit=options.get("limit"),
        reference_topics=options.get("reference_topics"),
        read_options={
            k: v for k in ("messages_field", "fields") if (v := options.get(k)) is not None
        },
    )
    try:
        with run_scope():  # what the judges learn about endpoints lasts for this run
            return await _evaluate(source, metrics, judge, options, engine, sorted(peers))
    finally:
        source.close()


def _choose(
    source: Source,
    metrics: Iterable[Metric | str | Any] | Metric | str | None,
    judge: JudgeSpec,
    options: RunOptions,
) -> tuple[list[Metric], Scan, dict[str, str], dict[str, str]]:
    """The run's metrics and the scan of the data (one read: checks, choice, fingerprint), with
    why metrics were skipped and which chosen ones leave some records unscored (no `-m`)."""
    skip_invalid = options.get("skip_invalid", False)
    if metrics is not None:
        chosen = build_metrics(metrics, options.get("thresholds"))
        return chosen, source.scan(chosen, skip_invalid=skip_invalid), {}, {}
    pool, skipped = candidates(offline=offline_member(judge) is not None)
    scan = source.scan(pool, select=True, skip_invalid=skip_invalid)
    chosen, partial = [], {}
    for metric in pool:
        lacking = scan.lacking[metric.name]
        if any(n >= scan.valid for n in lacking.values()):  # no record can feed it
            what = ", ".join(
                f"{f} ({n} of {scan.valid} records lack it)" for f, n in lacking.items()
            )
            skipped[metric.name] = f"the data does not set {what}"
            continue
        chosen.append(metric)
        if lacking:  # scored where the fields are set; the others unscored (score_pair)
            what = ", ".join(f"{n} of {scan.valid} records lack {f}" for f, n in lacking.items())
            partial[metric.name] = f"{what}: those are unscored"
    if not chosen:
        reasons = "; ".join(f"{name} {why}" for name, why in sorted(skipped.items()))
        raise UsageError(f"no metric can run on this data with this judge: {reasons}")
    names = [m.name for m in chosen]
    source.admit(scan, names, skip_invalid=skip_invalid)
    return build_metrics(names, options.get("thresholds")), scan, skipped, partial


async def _evaluate(
    source: Source,
    metrics: Iterable[Metric | str | Any] | Metric | str | None,
    judge: JudgeSpec,
    options: RunOptions,
    engine: EngineKind | None,
    peer_keywords: list[str],
) -> EvaluationResult:
    chosen, scan, skipped, partial = _choose(source, metrics, judge, options)
    concurrency = options.get("max_concurrency")
    judge_options = {key: options.get(name) for name, key in _JUDGE_OPTIONS.items()}
    plan = plan_judges(chosen, judge, judge_options)
    owned = None
    try:
        output = options.get("output")
        if output is None:
            owned = tempfile.mkdtemp(prefix="convoeval-results-")
            output = os.path.join(owned, "results.jsonl")
        path = Path(output)
        for target, what in ((path, "results file"), (meta_path(path), "results sidecar")):
            check_writable(target, what)
        meta = _meta(source, scan, chosen, plan, skipped, options)
        if partial:
            meta["partial_metrics"] = partial
        if peer_keywords:  # the peers' evaluate() keywords given, accepted with no effect here
            meta["peer_keywords"] = peer_keywords
        aggregates = Aggregates(
            [m.name for m in chosen], {m.name: m.threshold for m in chosen}, metric_ranges(chosen)
        )
        with RunLock(path):
            rows = prepare(
                path,
                meta,
                aggregates.add_row,
                resume=options.get("resume", True),
                overwrite=options.get("overwrite", False),
                retry_failed=options.get("retry_failed", False),
            )
            write_meta(path, meta)
            batching = _batch_run.batching(plan.judges())
            _batch_run.track(batching, path, meta, options.get("show_progress", True), write_meta)
            if rows.to_score(scan.valid):  # a batch server is reached when a batch is sent
                left = await check_judges([j for j in plan.judges() if j not in batching])
                if left:  # a panel scores with the members it can reach
                    meta["panel_left_out"] = left
                    write_meta(path, meta)
            shown = options.get("progress") or make_progress(options.get("show_progress", True))
            shown.start(scan.valid, rows.kept)

            def on_row(row: ResultRow) -> None:
                aggregates.add_row(row)
                if not rows.is_kept(row["index"]):
                    shown.advance()

            try:
                # engine options were checked once, in aevaluate
                if rows.finished(scan.valid):
                    pass  # every row was read back by `prepare`: the data is not read again
                elif engine is not None:
                    records = scan.valid - rows.kept
                    runner = (rows, path, source, chosen, plan, options, on_row)
                    meta["engine"] = await _elsewhere(engine, *runner, records)
                else:
                    with _quiet_loading(judge, options):
                        await rows.run(
                            path,
                            _jobs(source.items(), rows, path, chosen, plan, options),
                            on_row,
                            window=_batch_run.window(batching) or _window(concurrency, plan),
                        )
            finally:
                shown.close()
            meta["completed"] = now()
            agreement = aggregates.panel_agreement()
            if agreement:
                meta["panel_agreement"] = agreement
            write_meta(path, meta)
    except BaseException:
        if owned is not None:  # nobody can reach a temporary results file of a failed run
            shutil.rmtree(owned, ignore_errors=True)
        raise
    finally:
        await plan.close_clients()
    return EvaluationResult(path, meta, aggregates, prices=options.get("prices"), owned_dir=owned)


async def _elsewhere(
    kind: EngineKind,
    rows: RowPlan,
    path: Path,
    source: Source,
    metrics: Sequence[Metric],
    plan: JudgePlan,
    options: RunOptions,
    on_row: Callable[[ResultRow], None],
    records: int,
) -> dict[str, Any]:
    """Score on another engine (Ray workers): the same jobs, each record to score sent there.
    Returns the engine's description with its start-up and scoring seconds apart."""
    engine = await kind.start(metrics, plan, options, records)
    began = time.perf_counter()
    try:
        jobs = _jobs(source.items(), rows, path, metrics, plan, options, kind.pending)
        await rows.run(path, engine.blocks(jobs), on_row, window=engine.window)
    finally:
        await engine.close()
    return {**engine.describe(), "scoring_s": round(time.perf_counter() - began, 3)}


def _quiet_loading(judge: JudgeSpec, options: RunOptions) -> AbstractContextManager[None]:
    """`show_progress=False` with the offline judge: no "loading the offline judge" line either
    (its module loads only when the run uses it)."""
    if options.get("show_progress", True) or offline_member(judge) is None:
        return nullcontext()
    from convoeval.judges.offline.loading import loading_quietly

    return loading_quietly()


def _plain(value: Any) -> Any:
    """An option as JSON: mappings as dicts, sequences as lists."""
    if isinstance(value, Mapping):
        return dict(value)
    if isinstance(value, Sequence) and not isinstance(value, str):
        return list(value)
    return value


def _window(concurrency: int | None, plan: JudgePlan) -> int:
    """Records in flight or waiting to be written: a few per concurrent judge request."""
    limit = concurrency or (plan.describe() or {}).get("concurrency")
    return max(2, WINDOW_FACTOR * (limit if isinstance(limit, int) else DEFAULT_CONCURRENCY))


def _meta(
    source: Source,
    scan: Scan,
    metrics: Sequence[Metric],
    plan: JudgePlan,
    skipped: dict[str, str],
    options: RunOptions,
) -> RunMeta:
    return {
        "format": META_FORMAT,
        "version": 2,
        "convoeval_version": VERSION,
        "data": source.label,
        "format_option": source.format if source.label != IN_MEMORY else "auto",
        "data_fingerprint": scan.fingerprint,
        "records": scan.count,
        "metrics": [
            metric_entry(m, plan.identity(m, j))
            for m, j in zip(metrics, plan.per_metric, strict=True)
        ],
        "skipped_metrics": skipped,
        "judge": plan.describe(),
        "calibration": plan.calibration(),
        "uses_judge": any(m.uses_judge for m in metrics),
        "options": {
            key: value
            for key in (
                "limit",
                "reference_topics",
                "messages_field",
                "fields",
                "skip_invalid",
                "repeat",
            )
            if (value := _plain(options.get(key))) not in (None, False)
            and (key != "repeat" or value != 1)  # one repeat is an ordinary run
        },
        "invalid": [*scan.problems, *scan.missing],
        "started": now(),
        "completed": None,
        "rows": "one JSON object per record in input order; 'sample' holds the conversation",
    }


def _jobs(
    items: Iterator[Item],
    rows: RowPlan,
    path: Path,
    metrics: Sequence[Metric],
    plan: JudgePlan,
    options: RunOptions,
    score: Callable[..., Any] | None = None,
) -> Iterator[Any]:
    """Per record to write: its kept row, or the scoring of all or only its failed metrics
    (by `score`, default the local scorer)."""
    raising = options.get("raise_exceptions", False)
    repeat = options.get("repeat") or 1
    if score is None and repeat > 1:
        from convoeval.runner._repeats import score_repeated  # numpy loads only for repeats

        score = partial(score_repeated, repeat=repeat)
    score = score or score_record
    old = iter_rows(path) if rows.retry else iter(())
    for item in items:
        previous = rows.redo.get(item.index)
        if previous is not None:
            redo = [
                (m, j)
                for m, j in zip(metrics, plan.per_metric, strict=True)
                if m.name in previous["errors"]
            ]
            yield score(item, [m for m, _ in redo], [j for _, j in redo], raising, previous)
        elif item.index in rows.done:
            if rows.retry:
                yield next(row for row in old if row["index"] == item.index)
        else:
            yield score(item, metrics, plan.per_metric, raising)
