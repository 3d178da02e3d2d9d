"""The metric registry: every metric class by its results-column name, for the CLI and runner.

A metric registers itself by decorating its class with `@register`; its module must also be
imported in `convoeval/metrics/__init__.py` so that importing the package fills `METRICS`.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

from convoeval.metrics._base import Metric

M = TypeVar("M", bound=type[Metric])

#: Every registered metric class, by name (the results column).
METRICS: dict[str, type[Metric]] = {}
#: The compatibility facade (a DeepEval-named class with a `.core`) of a metric, by metric name.
FACADES: dict[str, type[Any]] = {}


def register(cls: M) -> M:
    """Class decorator: add a metric class to `METRICS` under its `name` (names are unique)."""
    name = getattr(cls, "name", None)
    if not isinstance(name, str) or not name:
        raise TypeError(f"{cls.__name__} needs a non-empty class attribute `name` to register")
    known = METRICS.get(name)
    if known is not None and known is not cls:
        raise ValueError(
            f"metric name {name!r} is already used by {known.__module__}.{known.__qualname__}"
        )
    METRICS[name] = cls
    return cls


F = TypeVar("F", bound=type[Any])


def facade_of(core: type[Metric]) -> Callable[[F], F]:
    """Class decorator: record the facade as the public class users know the registered metric
    `core` by (e.g. DeepEval's `ConversationRelevancyMetric` over `ConversationRelevancy`)."""
    if METRICS.get(core.name) is not core:
        raise TypeError(f"{core.__name__} is not a registered metric")

    def record(facade: F) -> F:
        FACADES[core.name] = facade
        return facade

    return record


def metric_class(name: str) -> type[Metric] | None:
    """The registered metric class a name means: its results column, its class name or its
    facade's (DeepEval's) class name; None when no metric answers to it. The one resolver of
    every place a metric is named (`-m`, `--threshold`, `--fail-under`, `evaluate`, `gate`)."""
    cls = METRICS.get(name)
    if cls is not None:
        return cls
    for column, core in METRICS.items():
        facade = FACADES.get(column)
        if name == core.__name__ or (facade is not None and name == facade.__name__):
            return core
    return None


def get_metric(name: str, **options: Any) -> Metric:
    """A new metric instance by name (or class name), with defaults unless options are given.

    A facade's class name (e.g. "ConversationRelevancyMetric") gives the core it would wrap,
    built with the core's own options."""
    cls = metric_class(name)
    if cls is None:
        known = ", ".join(sorted(METRICS)) or "none"
        raise ValueError(f"unknown metric {name!r}; known metrics: {known}")
    return cls(**options)


def describe_metrics() -> list[dict[str, Any]]:
    """One row per registered metric, sorted by name: what it needs and whether it needs an LLM."""
    rows = []
    for name in sorted(METRICS):
        cls = METRICS[name]
        doc = (cls.__doc__ or "").strip()
        rows.append(
            {
                "name": name,
                "class": FACADES.get(name, cls).__name__,
                "required": list(cls.required),
                "needs_llm": cls.needs_llm,
                "uses_judge": cls.uses_judge,
                "threshold": cls.default_threshold,
                "description": doc.splitlines()[0] if doc else "",
            }
        )
    return rows
