"""pytest integration: `assert_conversation` gates a bot's conversation on metric thresholds.

Use it in your own test suite: it scores one conversation with each metric and raises an
`AssertionError` listing every failing metric (score below threshold, unscored or failed, with
why), so a CI run shows at once what regressed. `convoeval_cases("data.jsonl")` runs a test
once per conversation of a data file; the `convoeval_judge` fixture comes from the plugin
(`convoeval.pytest_plugin`, loaded by pytest automatically).
"""

from __future__ import annotations

import asyncio
import os
import sys
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from convoeval._sync import run_sync
from convoeval.judges.ensembles.repeat import repeat_scope
from convoeval.judges.protocol.base import Judge
from convoeval.metrics import Metric, MetricResult
from convoeval.metrics._base import SampleLike, as_sample
from convoeval.runner._plan import JudgePlan, build_metrics, close_made, members, plan_judges
from convoeval.runner._reach import JudgeUnreachableError
from convoeval.runner._reach_judges import ReachCache, check_judges
from convoeval.runner._repeats import combine_repeats
from convoeval.stats.repeats import bootstrap_ci, parse_gate, spread

__all__ = ["assert_conversation", "assert_test", "convoeval_cases"]


def _verdict(metric: Metric, result: MetricResult) -> str | None:
    """Why this result fails the gate, or None when it passes."""
    threshold = "none" if metric.threshold is None else f"{metric.threshold:g}"
    if result.error is not None:
        return (
            f"{metric.name}: failed ({result.error['type']}: {result.error['message']}); "
            f"threshold {threshold}"
        )
    if result.value is None:
        return f"{metric.name}: not scored ({result.reason}); threshold {threshold}"
    if metric.threshold is not None and result.value < metric.threshold:
        return (
            f"{metric.name}: score {result.value:.4g} < threshold {threshold}; "
            f"reason: {result.reason}"
        )
    return None


def session_reach_cache() -> ReachCache | None:
    """The judge endpoints this pytest session checked (None outside a session): the plugin
    holds it, so each endpoint is checked once per session. Read from the plugin only when
    pytest has loaded it (this module never imports pytest)."""
    plugin = sys.modules.get("convoeval.pytest_plugin")
    cache: ReachCache | None = getattr(plugin, "reach_cache", None)
    return cache


async def check_reachable_once(judges: Sequence[Judge]) -> None:
    """Check the judges' endpoints reachable, as a run does before scoring (a panel leaves out
    the members it cannot reach while the others form a majority): once per endpoint in a pytest
    session, else at every call. Raises `JudgeUnreachableError` at once, where scoring would
    wait out every step's retry budget before failing."""
    await check_judges(judges, session_reach_cache())


async def _score_all(
    sample: Any, metrics: Sequence[Metric], judges: Sequence[Judge | None]
) -> list[MetricResult]:
    return list(
        await asyncio.gather(
            *(m.score(sample, judge=j) for m, j in zip(metrics, judges, strict=True))
        )
    )


async def _score_repeats(
    sample: Any, metrics: Sequence[Metric], judges: Sequence[Judge | None], repeat: int
) -> list[list[MetricResult]]:
    """Per metric, its results over `repeat` repeats (each with fresh judge samples)."""

    async def one(index: int) -> list[MetricResult]:
        with repeat_scope(index):
            return await _score_all(sample, metrics, judges)

    runs = await asyncio.gather(*(one(index) for index in range(repeat)))
    return [[run[k] for run in runs] for k in range(len(metrics))]


def _repeated_verdict(
    metric: Metric, results: list[MetricResult], mode: str, rate: float | None
) -> tuple[MetricResult, str | None]:
    """The combined result over the repeats (its details gain the spread under `repeats`) and
    why it fails the gate: the mean, the interval's lower bound, or the pass rate."""
    combined = combine_repeats(results)
    entry = spread([r.value for r in results], metric.threshold)
    combined.details["repeats"] = entry
    problem = _verdict(metric, combined)
    if problem is not None or metric.threshold is None or mode == "mean":
        return combined, problem
    values = [v for v in entry["values"] if v is not None]
    n = len(results)
    if mode == "lower-bound":
        low, high = bootstrap_ci(values) or (0.0, 0.0)
        if low < metric.threshold:
            return combined, (
                f"{metric.name}: 95% interval lower bound {low:.4g} < threshold "
                f"{metric.threshold:g} (mean {combined.value:.4g} over {n} repeats, "
                f"interval {low:.4g}-{high:.4g})"
            )
    elif rate is not None and (entry["pass_rate"] or 0.0) < rate:
        reached = sum(1 for v in values if v >= metric.threshold)
        return combined, (
            f"{metric.name}: reached threshold {metric.threshold:g} in {reached} of {n} repeats, "
            f"below the pass rate {rate:.0%} (scores {', '.join(f'{v:.4g}' for v in values)})"
        )
    return combined, None


def _close_made(given: Judge | str | None, plan: JudgePlan) -> None:
    """Close the judges this call made from specs (the caller's own judge objects stay open):
    each call makes its own, and would otherwise leave its cache file open, or its llama.cpp
    server running (a `gguf:` judge's `close()` stops it)."""
    theirs = {id(m) for m in members(given) if isinstance(m, Judge)}
    close_made(m for m in members(plan.main) if id(m) not in theirs)


def assert_conversation(
    sample_or_case: SampleLike,
    metrics: Iterable[Metric | str] | Metric | str,
    judge: Judge | str | None = None,
    *,
    thresholds: Mapping[str, float] | None = None,
    repeat: int = 1,
    gate: str = "mean",
) -> dict[str, MetricResult]:
    """Score one conversation; raise `AssertionError` naming every metric that does not pass.

    A metric passes when it scored at or above its threshold (a metric without a threshold
    passes whenever it scored). Unscored and failed results count as failing, with the reason.
    Returns the results by metric name when all pass. Names get `thresholds[name]` if given.
    An LLM judge that cannot be reached raises `JudgeUnreachableError` before anything is
    scored (its endpoint checked once per pytest session).

    `repeat=N` scores the conversation N times with fresh judge samples; the result is the
    mean, its details hold the spread under `repeats`, and `gate` says what must reach the
    threshold: "mean", "lower-bound" (of the bootstrap 95% interval of the mean over the
    repeats) or "pass-rate=P" (at least a share P of the repeats), as `--gate` does.
    """
    __tracebackhide__ = True  # pytest shows the failure list, not this function's source
    if isinstance(metrics, str) or not isinstance(metrics, Iterable):
        metrics = [metrics]  # one metric, a metric facade (e.g. DeepEval-named) or a name
    chosen = build_metrics(metrics, thresholds)
    sample = as_sample(sample_or_case)
    for metric in chosen:
        metric.check(sample)
    mode, rate = parse_gate(gate)
    if isinstance(repeat, bool) or not isinstance(repeat, int) or repeat < 1:
        raise ValueError(f"repeat must be a whole number of at least 1, not {repeat!r}")
    if repeat == 1 and mode != "mean":
        raise ValueError(f"gate={gate!r} reads the spread of repeats: give repeat=N (N > 1)")
    plan = plan_judges(chosen, judge, {})
    try:
        try:
            run_sync(lambda: check_reachable_once(plan.judges()))
        except JudgeUnreachableError as exc:  # raised here: the test's line, then why
            raise JudgeUnreachableError(str(exc)) from None
        if repeat == 1:
            results = run_sync(lambda: _score_all(sample, chosen, plan.per_metric))
            problems = [p for m, r in zip(chosen, results, strict=True) if (p := _verdict(m, r))]
        else:
            runs = run_sync(lambda: _score_repeats(sample, chosen, plan.per_metric, repeat))
            verdicts = [
                _repeated_verdict(m, r, mode, rate) for m, r in zip(chosen, runs, strict=True)
            ]
            results = [combined for combined, _ in verdicts]
            problems = [p for _, p in verdicts if p is not None]
    finally:
        _close_made(judge, plan)
    if problems:
        who = f" {sample.id!r}" if sample.id is not None else ""
        lines = "\n".join(f"  - {p}" for p in problems)
        raise AssertionError(
            f"conversation{who} failed {len(problems)} of {len(chosen)} metrics:\n{lines}"
        )
    return {m.name: r for m, r in zip(chosen, results, strict=True)}


def convoeval_cases(
    path: str | os.PathLike[str], *, argname: str = "conversation", format: str = "auto"
) -> Any:
    """Decorator: run the test once per conversation of a data file, as `argname`.

    Any layout `evaluate()` reads (JSONL, JSON, CSV, Parquet; Ragas, OpenAI chat, DeepEval);
    test ids are the record ids. A relative path is looked up next to the test file, then from
    pytest's rootdir, then from where pytest runs. Needs pytest (the plugin does the work).
    """
    from convoeval.pytest_plugin import cases_marker

    return cases_marker(os.fspath(path), argname=argname, format=format)


def assert_test(
    test_case: SampleLike,
    metrics: Iterable[Metric | str | Any] | Metric | str,
    run_async: bool = True,
) -> None:
    """DeepEval's pytest path: `assert_test(test_case, [metric, ...])` raises `AssertionError`
    listing every failing metric with its score, threshold and reason: `assert_conversation`
    with each metric's own judge. `run_async` is accepted (the metrics are always scored at
    once); the metrics' `.score` is left as it was (call `measure()` for that)."""
    __tracebackhide__ = True
    if not isinstance(run_async, bool):
        raise TypeError(f"run_async must be True or False, not {run_async!r}")
    assert_conversation(test_case, metrics)
