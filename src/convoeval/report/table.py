"""The end-of-run summary as rich renderables: a table per metric and a usage line."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from rich.table import Table

from convoeval._text import plural
from convoeval.runner.results import EvaluationResult


def _num(value: float | None, digits: int = 3) -> str:
    return "-" if value is None else f"{value:.{digits}f}"


def _pass_rate(stats: dict[str, Any]) -> str:
    if stats["threshold"] is None:
        return "no threshold"
    if stats["pass_rate"] is None:
        return f"- (>= {stats['threshold']:g})"
    return f"{100 * stats['pass_rate']:.0f}% (>= {stats['threshold']:g})"


def summary_table(result: EvaluationResult) -> Table:
    """One row per metric: mean, std, scored / unscored / failed counts, pass rate; a repeated
    run adds the bootstrap 95% interval of the mean after it."""
    repeated = result.repeat > 1
    title = f"convoeval: {len(result)} {plural(len(result), 'record')}"
    table = Table(title=title + (f", {result.repeat} repeats" if repeated else ""))
    table.add_column("metric")
    for name in ("mean", *(["95% CI"] if repeated else []), "std", "scored", "unscored", "failed"):
        table.add_column(name, justify="right")
    table.add_column("pass rate", justify="right")
    for name, stats in result.summary().items():
        table.add_row(
            name,
            _num(stats["mean"]),
            *([interval(stats)] if repeated else []),
            _num(stats["std"]),
            str(stats["scored"]),
            str(stats["unscored"]),
            str(stats["failed"]),
            _pass_rate(stats),
        )
    return table


def interval(stats: Mapping[str, Any]) -> str:
    """A summary's bootstrap 95% interval as `low-high` ("-" when there is none)."""
    if stats.get("ci_low") is None:
        return "-"
    return f"{stats['ci_low']:.3f}-{stats['ci_high']:.3f}"


def judge_label(judge: Mapping[str, Any] | None) -> str:
    """A short human name of the run's judge: kind and model."""
    if not judge:
        return "none (no metric asked a judge)"
    name = judge.get("name") or judge.get("judge") or judge.get("kind") or "?"
    model = judge.get("model")
    endpoint = judge.get("endpoint")
    text = str(name)
    if model and str(model) not in text:
        text += f" ({model})"
    if endpoint:
        text += f" at {endpoint}"
    return text


def usage_text(result: EvaluationResult) -> str:
    """`judge X: N requests (M from cache), T tokens; cost ...` in one line."""
    usage = result.usage
    judge = result.meta.get("judge")
    label = judge_label(judge)
    if judge is None:
        return f"judge: {label}"
    cost, note = result.cost()
    money = f"cost ${cost:.4f} ({note})" if cost is not None else f"cost unknown: {note}"
    if (judge.get("judge") or judge.get("kind")) == "offline":
        return f"judge {label}: ran locally, no requests sent; cost $0"
    tokens = usage.prompt_tokens + usage.completion_tokens
    return (
        f"judge {label}: {usage.requests} requests ({usage.cached} answered from cache), "
        f"{tokens} tokens ({usage.prompt_tokens} prompt + {usage.completion_tokens} completion); "
        f"{money}"
    )
