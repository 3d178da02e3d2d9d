"""Planning a run before any record is scored: metrics from instances, names or `NAME:key=value`
specs (checked against the constructor), the judge each metric uses, the offline-judge check, and
the identity of a metric that resume compares.
"""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from convoeval._text import plural
from convoeval.errors import ConvoevalError, UsageError, check_limit
from convoeval.judges import Judge, JudgeCache, JudgePanel, resolve_judge
from convoeval.metrics import METRICS, Metric, as_metric, get_metric
from convoeval.metrics._registry import metric_class
from convoeval.rows.row import JudgeDescription, MetricRecord
from convoeval.runner._metric_options import OptionValueError, convert, parameters, python_only

OFFLINE_HINT = (
    "--judge openai/MODEL or --judge gguf:PATH on the command line, judge='openai/MODEL' or "
    "'gguf:PATH' in Python"
)


class OfflineJudgeError(ConvoevalError, ValueError):
    """A metric that needs an LLM judge was asked to run with the offline judge."""


def _metric_class(name: str) -> type[Any]:
    """The metric class of any name it answers to (`metric_class`), else a `UsageError` with
    the nearest column name."""
    cls = metric_class(name)
    if cls is None:
        near = difflib.get_close_matches(name, list(METRICS), n=1)
        hint = f" (did you mean {near[0]!r}?)" if near else ""
        raise UsageError(
            f"unknown metric {name!r}{hint}; known metrics: {', '.join(sorted(METRICS))}"
        )
    return cls


def by_column(limits: Mapping[str, object], what: str) -> dict[str, object]:
    """Limits given under any name of a metric (column, class, DeepEval class), keyed by its
    results column; a name no metric answers to is kept as given (the caller says it is not in
    the run). Two names of one metric are a `UsageError` naming both."""
    out: dict[str, object] = {}
    given: dict[str, str] = {}
    for name, value in limits.items():
        cls = metric_class(name)
        column = cls.name if cls is not None else name
        if column in given:
            raise UsageError(
                f"{what} names metric {column} twice, as {given[column]!r} and {name!r}: "
                "give one limit per metric"
            )
        given[column] = name
        out[column] = value
    return out


def parse_metric_spec(spec: str, threshold: float | None = None) -> Metric:
    """A metric from `NAME` or `NAME:key=value,key=value`, options checked against its
    constructor; `threshold` (from --threshold) applies unless the spec sets one."""
    name, _, rest = spec.partition(":")
    cls = _metric_class(name.strip())
    params = parameters(cls)
    accepted = [p for p, info in params.items() if not python_only(info)]
    options: dict[str, Any] = {}
    for part in filter(None, (p.strip() for p in rest.split(","))):
        key, sep, text = part.partition("=")
        key = key.strip()
        if sep and key in params and key not in accepted:
            raise UsageError(
                f"metric {cls.name}: {key} takes a function, so it can only be set in Python "
                f"({cls.__name__}({key}=...)), not on the command line"
            )
        if not sep or key not in accepted:
            what = f"no option {key!r}" if sep else f"an option must be key=value, got {part!r}"
            raise UsageError(
                f"metric {cls.name}: {what}; accepted options: {', '.join(accepted) or 'none'}"
            )
        try:
            options[key] = convert(key, text.strip(), params[key])
        except OptionValueError as exc:
            raise UsageError(f"metric {cls.name}: {exc}") from None
    if threshold is not None:
        options.setdefault("threshold", threshold)
    try:
        return as_metric(cls(**options))
    except (TypeError, ValueError) as exc:
        raise UsageError(f"metric {cls.name}: {exc}") from exc


def score_range(metric: Metric) -> tuple[float, float] | None:
    """The range a metric's scores lie in: [0, 1] unless the metric declares its own (a
    `score_range` attribute) or keeps its own scale (RubricsScore without `normalize`)."""
    declared = getattr(metric, "score_range", None)
    if declared is not None:
        low, high = declared
        return float(low), float(high)
    if getattr(metric, "normalize", True) is False:
        return None
    return (0.0, 1.0)


def metric_ranges(metrics: Sequence[Metric]) -> dict[str, tuple[float, float] | None]:
    """Each metric's score range by name (`score_range`), what its gate limits lie within."""
    return {metric.name: score_range(metric) for metric in metrics}


def build_metrics(
    metrics: Iterable[Metric | str | Any] | Metric | str | Any,
    thresholds: Mapping[str, float] | None = None,
) -> list[Metric]:
    """Metric cores from one or many instances, facades (unwrapped), names or `NAME:key=value`
    specs; `thresholds[name]` sets the pass mark of a metric given by name. Names must be unique
    and every threshold within its metric's score range."""
    limits = by_column(thresholds or {}, "thresholds")
    items = (
        list(metrics)
        if isinstance(metrics, Iterable) and not isinstance(metrics, str)
        else [metrics]
    )
    built: list[Metric] = []
    for item in items:
        if isinstance(item, str):
            column = _metric_class(item.partition(":")[0].strip()).name
            built.append(parse_metric_spec(item, cast("float | None", limits.get(column))))
        else:
            try:
                built.append(as_metric(item))
            except TypeError as exc:
                raise UsageError(str(exc)) from exc
    if not built:
        raise UsageError("no metrics to run: give at least one metric")
    names = [m.name for m in built]
    duplicates = sorted({n for n in names if names.count(n) > 1})
    if duplicates:
        raise UsageError(f"a metric can run once per run (one results column): {duplicates}")
    by_name = {m.name for m, item in zip(built, items, strict=True) if isinstance(item, str)}
    unknown = sorted(set(limits) - by_name)
    if unknown:
        raise UsageError(
            f"thresholds name metrics that are not in this run by name: {unknown} (a metric "
            "given as an object takes its threshold= in its constructor)"
        )
    for metric in built:
        if metric.threshold is not None:
            check_limit(metric.threshold, score_range(metric), f"the threshold of {metric.name}")
    return built


def check_gates(
    limits: Mapping[str, object], ranges: Mapping[str, tuple[float, float] | None]
) -> dict[str, float]:
    """`--fail-under` limits by metric name, each checked by `check_limit` against the range of
    a metric of the run (`ranges`, by name); a name not in the run is a `UsageError`."""
    limits = by_column(limits, "--fail-under")
    unknown = sorted(set(limits) - set(ranges))
    if unknown:
        raise UsageError(f"--fail-under names metrics not in this run: {unknown}")
    return {
        name: check_limit(value, ranges[name], f"the --fail-under limit of {name}")
        for name, value in limits.items()
    }


def candidates(offline: bool) -> tuple[list[Metric], dict[str, str]]:
    """Every registered metric the judge can run (default options), and why the others not:
    an LLM-only metric with the offline judge, or one that names an option it cannot run
    without (`needs_option`, e.g. conversational_geval's criteria)."""
    chosen: list[Metric] = []
    skipped: dict[str, str] = {}
    for name in sorted(METRICS):
        metric = as_metric(get_metric(name))
        needs = getattr(metric, "needs_option", None)
        if metric.needs_llm and offline:
            skipped[name] = f"needs an LLM judge ({OFFLINE_HINT.split(' on ')[0]})"
        elif needs:
            skipped[name] = str(needs)
        else:
            chosen.append(metric)
    return chosen, skipped


#: What `evaluate(judge=...)` accepts: a Judge, a spec, a list of them (a panel), or None.
JudgeSpec = Judge | str | Sequence[Judge | str] | None


def is_offline(judge: Judge | str | None) -> bool:
    """Whether a judge (or a spec) is the offline judge."""
    if judge is None:
        return True
    if isinstance(judge, str):
        return judge.strip().lower() == "offline"
    return describe(judge).get("kind") == "offline" or getattr(judge, "name", None) == "offline"


def members(judge: JudgeSpec) -> list[Judge | str | None]:
    """The judges that answer for `judge`: a panel's (or a list's) members, else the judge."""
    if judge is None or isinstance(judge, str):
        return [judge]
    if isinstance(judge, JudgePanel):
        return [m for one in judge.members for m in members(one)]
    if isinstance(judge, Sequence):
        return [m for one in judge for m in members(one)]
    return [judge]


def close_made(judges: Iterable[Judge | str | None]) -> None:
    """Close judge objects made from specs, when their user is done: `close()` where a judge
    has one (a `gguf:` judge's llama.cpp server stops), else its answer cache's file."""
    for judge in judges:
        close = getattr(judge, "close", None)
        cache = getattr(judge, "cache", None)
        if callable(close):
            close()
        elif isinstance(cache, JudgeCache):
            cache.close()


def offline_member(judge: JudgeSpec) -> str | None:
    """How to name the offline judge among the judges answering for `judge` (None: there is
    none): "the judge" alone, "panel member 'offline'" in a panel."""
    found = [m for m in members(judge) if is_offline(m)]
    if not found:
        return None
    if len(members(judge)) == 1:
        return "the judge"
    return "panel member 'offline'"


def describe(judge: Judge) -> JudgeDescription:
    """A judge's description with the normalised `kind` key (never a key)."""
    try:
        desc = judge.describe()
    except Exception as exc:  # a third-party judge's describe must not stop the run
        return {"name": getattr(judge, "name", "?"), "describe_error": str(exc)}
    if not isinstance(desc, Mapping):
        return {"name": getattr(judge, "name", "?")}
    out: dict[str, Any] = dict(desc)
    if "kind" not in out and "judge" in out:
        out["kind"] = out.pop("judge")
    return cast(JudgeDescription, out)


@dataclass
class JudgePlan:
    """The judge given to the run (resolved once) and the judge each metric will use: the
    run's, or the metric's own when the run is given none (None: the metric asks no judge)."""

    main: Judge | None
    per_metric: list[Judge | None]

    def describe(self) -> JudgeDescription | None:
        """The main judge's description, or None when no metric asks a judge."""
        return describe(self.main) if self.main is not None else None

    def identity(self, metric: Metric, judge: Judge | None) -> str | None:
        """A short identity of the judge a metric scores with, the run's or the metric's own
        (spec name, model, endpoint; a panel's members in order), for resume checks."""
        if not metric.uses_judge or judge is None:
            return None
        if isinstance(judge, JudgePanel):
            return "panel: " + "; ".join(str(self.identity(metric, m)) for m in judge.members)
        desc = describe(judge)
        parts = (getattr(judge, "name", "default"), desc.get("model"), desc.get("endpoint"))
        return " ".join(str(p) for p in parts if p)

    def calibration(self) -> str | None:
        """The offline judge's calibration version when a metric uses the offline judge (the
        run's or its own)."""
        if not any(j is not None and offline_member(j) for j in self.per_metric):
            return None
        from convoeval.judges.offline import calibration

        return calibration.CALIBRATION_VERSION

    def judges(self) -> list[Judge]:
        """Every distinct judge this run may ask, the metrics' own and the members of a
        panel included (a panel's endpoints are its members')."""
        found = {id(j): j for j in (self.main, *self.per_metric) if j is not None}
        for judge in list(found.values()):
            for member in members(judge):
                if member is not None and not isinstance(member, str):
                    found.setdefault(id(member), member)
        return list(found.values())

    async def close_clients(self) -> None:
        """Close the HTTP clients the run's judges opened on this event loop (it ends next)."""
        for judge in self.judges():
            if isinstance(judge, JudgePanel):
                continue  # its members are in the list too
            close = getattr(judge, "aclose", None)
            if close is not None:
                await close()


def plan_judges(
    metrics: Sequence[Metric], judge: JudgeSpec, options: Mapping[str, Any]
) -> JudgePlan:
    """Resolve the run's judge once (only if a metric asks one) and check the offline judge.

    A metric with its own judge keeps it when the run is given none (resolved here, so the
    run's identity names it and its endpoint is checked with the others). A metric that needs an
    LLM judge, paired with the offline judge (alone or as a member of a judge panel, which
    answers only what every member can), is an `OfflineJudgeError` naming the option to use (or
    the member). `options` configure a judge built from a spec (the caller refuses them with an
    object); a list of specs is a judge panel.
    """
    given = {k: v for k, v in options.items() if v is not None}
    askers = [m for m in metrics if m.uses_judge]
    main: Judge | None = None
    if askers and (judge is not None or any(m.judge is None for m in askers)):
        main = resolve_judge(judge, **given)
    per_metric: list[Judge | None] = []
    blocked = []
    offline_name = "the judge"
    for metric in metrics:
        if not metric.uses_judge:
            per_metric.append(None)
            continue
        own = metric.own_judge() if judge is None else None
        chosen = own if own is not None else main
        offline = offline_member(chosen)
        if metric.needs_llm and offline:
            blocked.append(metric.name)
            offline_name = offline
        per_metric.append(chosen)
    if blocked:
        advice = (
            f"choose an LLM judge ({OFFLINE_HINT})"
            if offline_name == "the judge"
            else "leave the offline judge out of the panel"
        )
        raise OfflineJudgeError(
            f"{plural(len(blocked), 'metric')} {', '.join(blocked)} "
            f"{'needs' if len(blocked) == 1 else 'need'} an LLM judge, and "
            f"{offline_name} is the offline one, which cannot answer "
            f"{'its' if len(blocked) == 1 else 'their'} steps; {advice}, or leave "
            f"{'it' if len(blocked) == 1 else 'them'} out"
        )
    return JudgePlan(main, per_metric)


def metric_entry(metric: Metric, judge_identity: str | None) -> MetricRecord:
    """The sidecar description of a metric: what shapes its scores, the judge it uses and the
    range of its scores."""
    return {
        "name": metric.name,
        "class": type(metric).__name__,
        "config": metric.config(),
        "steps": [step.fingerprint() for step in metric.steps],
        "threshold": metric.threshold,
        "uses_judge": metric.uses_judge,
        "needs_llm": metric.needs_llm,
        "judge": judge_identity,
        "score_range": list(bounds) if (bounds := score_range(metric)) is not None else None,
    }
