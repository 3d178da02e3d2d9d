"""Planning a run before any record is scored: metrics by name, the judge each one uses, the
offline-judge check, metric signatures for resuming, and which metrics a data file supports.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from convoeval.errors import ConvoevalError
from convoeval.judges import Judge, resolve_judge
from convoeval.metrics import METRICS, Metric, get_metric

#: Attributes that do not change a metric's scores (DeepEval state and display switches).
_NOT_CONFIG = frozenset(
    {"threshold", "judge", "reason", "success", "verdicts", "error", "score", "verbose_mode"}
)
_ADDRESS = re.compile(r" at 0x[0-9a-fA-F]+")
OFFLINE_HINT = "--judge openai/MODEL on the command line, judge='openai/MODEL' in Python"


class OfflineJudgeError(ConvoevalError, ValueError):
    """A metric that needs an LLM judge was asked to run with the offline judge."""


def build_metrics(
    metrics: Iterable[Metric | str], thresholds: Mapping[str, float] | None = None
) -> list[Metric]:
    """Metric instances from instances or names; names get `thresholds[name]` when given."""
    built: list[Metric] = []
    for item in metrics:
        if isinstance(item, str):
            options = {}
            if thresholds and item in thresholds:
                options["threshold"] = thresholds[item]
            built.append(get_metric(item, **options))
        elif isinstance(item, Metric):
            built.append(item)
        else:
            raise TypeError(f"a metric must be a Metric instance or a name, not {item!r}")
    if not built:
        raise ValueError("no metrics to run: give at least one metric")
    names = [m.name for m in built]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise ValueError(f"metric names must be unique in a run (results columns): {duplicates}")
    return built


def is_offline(judge: Judge | str | None) -> bool:
    """Whether a judge (or a spec) is the offline judge."""
    if judge is None:
        return True
    if isinstance(judge, str):
        return judge.strip().lower() == "offline"
    return getattr(judge, "name", None) == "offline"


@dataclass
class JudgePlan:
    """The judge given to the run (resolved once) and the judge each metric will use."""

    main: Judge | None
    per_metric: list[Judge | None]

    def describe(self) -> dict[str, Any] | None:
        """The main judge's description (never a key), or None when no metric asks a judge."""
        return _describe(self.main) if self.main is not None else None

    def identity(self, metrics: Sequence[Metric]) -> list[str | None]:
        """Per metric, a short identity of its judge (name and model), for resume checks."""
        out: list[str | None] = []
        for metric, judge in zip(metrics, self.per_metric, strict=True):
            if not metric.uses_judge:
                out.append(None)
                continue
            desc = _describe(judge) if judge is not None else {}
            model = desc.get("model")
            endpoint = desc.get("endpoint")
            name = getattr(judge, "name", "default") if judge is not None else "metric's own"
            out.append(" ".join(str(p) for p in (name, model, endpoint) if p))
        return out

    async def close_clients(self, metrics: Sequence[Metric]) -> None:
        """Close the HTTP clients the run's judges opened on this event loop (it ends next)."""
        judges = {id(j): j for j in (self.main, *self.per_metric) if j is not None}
        for metric in metrics:
            own = getattr(metric, "_resolved_own", None)
            if own is not None:
                judges[id(own)] = own
        for judge in judges.values():
            close = getattr(judge, "aclose", None)
            if close is not None:
                await close()


def _describe(judge: Judge) -> dict[str, Any]:
    try:
        desc = judge.describe()
    except Exception as exc:  # a third-party judge's describe must not stop the run
        return {"name": getattr(judge, "name", "?"), "describe_error": str(exc)}
    return dict(desc) if isinstance(desc, Mapping) else {"name": getattr(judge, "name", "?")}


def plan_judges(
    metrics: Sequence[Metric], judge: Judge | str | None, options: Mapping[str, Any]
) -> JudgePlan:
    """Resolve the run's judge once (only if a metric asks one) and check the offline judge.

    A metric with its own judge keeps it when the run is given none. A metric that needs an LLM
    judge, paired with the offline judge, is an `OfflineJudgeError` naming the option to use.
    """
    askers = [m for m in metrics if m.uses_judge]
    main: Judge | None = None
    if askers and (judge is not None or any(m.judge is None for m in askers)):
        main = resolve_judge(judge, **{k: v for k, v in options.items() if v is not None})
    per_metric: list[Judge | None] = []
    blocked = []
    for metric in metrics:
        if not metric.uses_judge:
            per_metric.append(None)
            continue
        own = metric.judge if judge is None else None
        chosen: Judge | None = main if own is None else None
        effective: Judge | str | None = chosen if chosen is not None else own
        if metric.needs_llm and is_offline(effective):
            blocked.append(metric.name)
        per_metric.append(chosen)
    if blocked:
        raise OfflineJudgeError(
            f"metric(s) {', '.join(blocked)} need an LLM judge, and the judge is the offline "
            f"one; choose an LLM judge ({OFFLINE_HINT}), or leave these metrics out"
        )
    return JudgePlan(main, per_metric)


def _plain(value: Any) -> Any:
    """A JSON-ready, process-independent form of a metric option."""
    if value is None or isinstance(value, bool | int | float | str):
        return value
    if isinstance(value, Mapping):
        return {str(k): _plain(v) for k, v in sorted(value.items(), key=lambda kv: str(kv[0]))}
    if isinstance(value, list | tuple):
        return [_plain(v) for v in value]
    if callable(value):
        return f"{getattr(value, '__module__', '?')}.{getattr(value, '__qualname__', repr(value))}"
    return _ADDRESS.sub("", repr(value))


def metric_entry(metric: Metric, judge_identity: str | None) -> dict[str, Any]:
    """The sidecar description of a metric: name, class, options that shape its scores."""
    config = {
        k: _plain(v)
        for k, v in sorted(vars(metric).items())
        if not k.startswith("_") and k not in _NOT_CONFIG
    }
    return {
        "name": metric.name,
        "class": type(metric).__name__,
        "config": config,
        "threshold": metric.threshold,
        "uses_judge": metric.uses_judge,
        "needs_llm": metric.needs_llm,
        "judge": judge_identity,
    }


def select_metrics(
    records: Iterable[Any],
    offline: bool,
    factory: Callable[[str], Metric] = get_metric,
) -> tuple[list[str], dict[str, str]]:
    """Which registered metrics the records support: (chosen names, {skipped name: why}).

    A metric is chosen when every valid record sets its required fields and, if it needs an LLM
    judge, the judge is not the offline one. `records` yields samples (None for invalid ones).
    """
    candidates = {name: factory(name) for name in sorted(METRICS)}
    skipped: dict[str, str] = {}
    for name, metric in list(candidates.items()):
        if metric.needs_llm and offline:
            skipped[name] = f"needs an LLM judge ({OFFLINE_HINT.split(' on ')[0]})"
            del candidates[name]
    lacking: dict[str, dict[str, int]] = {name: {} for name in candidates}
    total = 0
    for sample in records:
        if sample is None:
            continue
        total += 1
        for name, metric in candidates.items():
            for field in metric.missing_fields(sample):
                lacking[name][field] = lacking[name].get(field, 0) + 1
    chosen = []
    for name in candidates:
        if lacking[name]:
            what = ", ".join(
                f"{f} ({n} of {total} records lack it)" for f, n in lacking[name].items()
            )
            skipped[name] = f"the data does not set {what}"
        else:
            chosen.append(name)
    return chosen, skipped
