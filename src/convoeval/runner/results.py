"""`EvaluationResult`: running per-metric aggregates over a results file, and lazy access to rows.

Only aggregates live in memory (Welford mean and variance, counts, min and max); rows are read
back from the results JSONL on demand, so a run of any size has a small result object.
"""

from __future__ import annotations

import json
import math
import os
import shutil
import weakref
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from convoeval.judges.base import Usage
from convoeval.runner.pricing import estimate_cost
from convoeval.runner.resume import read_meta, read_rows


@dataclass
class MetricStats:
    """Running statistics of one metric: counts, Welford mean/variance, min/max, passes."""

    threshold: float | None = None
    scored: int = 0
    unscored: int = 0
    failed: int = 0
    passed: int = 0
    mean: float = 0.0
    m2: float = 0.0
    low: float | None = None
    high: float | None = None

    def add(self, value: float | None, failed: bool) -> None:
        """Count one record's outcome for this metric."""
        if value is None:
            if failed:
                self.failed += 1
            else:
                self.unscored += 1
            return
        self.scored += 1
        delta = value - self.mean
        self.mean += delta / self.scored
        self.m2 += delta * (value - self.mean)
        self.low = value if self.low is None else min(self.low, value)
        self.high = value if self.high is None else max(self.high, value)
        if self.threshold is not None and value >= self.threshold:
            self.passed += 1

    def summary(self) -> dict[str, Any]:
        """mean, std (sample, n-1), counts, and pass rate over scored records at the threshold."""
        has = self.scored > 0
        return {
            "mean": self.mean if has else None,
            "std": math.sqrt(self.m2 / (self.scored - 1)) if self.scored > 1 else None,
            "min": self.low,
            "max": self.high,
            "scored": self.scored,
            "unscored": self.unscored,
            "failed": self.failed,
            "threshold": self.threshold,
            "passed": self.passed if self.threshold is not None else None,
            "pass_rate": self.passed / self.scored if has and self.threshold is not None else None,
        }


class Aggregates:
    """Aggregates of every metric and the total usage, fed one results row at a time."""

    def __init__(self, metrics: Sequence[str], thresholds: Mapping[str, float | None]) -> None:
        self.stats = {name: MetricStats(threshold=thresholds.get(name)) for name in metrics}
        self.usage = Usage()
        self.rows = 0

    def add_row(self, row: Mapping[str, Any]) -> None:
        """Count one results row."""
        self.rows += 1
        scores = row.get("scores") or {}
        errors = row.get("errors") or {}
        for name, stats in self.stats.items():
            value = scores.get(name)
            stats.add(float(value) if value is not None else None, name in errors)
        used = row.get("usage") or {}
        self.usage.add(
            Usage(
                requests=int(used.get("requests", 0)),
                prompt_tokens=int(used.get("prompt_tokens", 0)),
                completion_tokens=int(used.get("completion_tokens", 0)),
                latency_s=float(used.get("latency_s", 0.0)),
                cached=int(used.get("cached", 0)),
            )
        )


class EvaluationResult:
    """The outcome of `evaluate`: per-metric summaries, total usage and cost, rows on demand."""

    def __init__(
        self,
        path: str | os.PathLike[str],
        meta: dict[str, Any],
        aggregates: Aggregates,
        *,
        prices: Mapping[str, tuple[float, float]] | None = None,
        owned_dir: str | None = None,
    ) -> None:
        self.path = Path(path)
        self.meta = meta
        self._aggregates = aggregates
        self._prices = dict(prices) if prices else None
        if owned_dir is not None:
            # A run without `output=` writes to a temporary directory that lives as long as this.
            weakref.finalize(self, shutil.rmtree, owned_dir, True)

    @classmethod
    def from_file(
        cls, path: str | os.PathLike[str], prices: Mapping[str, tuple[float, float]] | None = None
    ) -> EvaluationResult:
        """Aggregate a saved results file (with its sidecar meta) without holding its rows."""
        meta = read_meta(path)
        if meta is None:
            raise FileNotFoundError(f"{path}: no sidecar {os.fspath(path)}.meta.json found")
        names = [m["name"] for m in meta.get("metrics", [])]
        thresholds = {m["name"]: m.get("threshold") for m in meta.get("metrics", [])}
        aggregates = Aggregates(names, thresholds)
        read_rows(path, aggregates.add_row, repair=False)
        return cls(path, meta, aggregates, prices=prices)

    @property
    def metric_names(self) -> list[str]:
        """The metrics of this run, in the order they were given."""
        return list(self._aggregates.stats)

    @property
    def usage(self) -> Usage:
        """Total judge usage over every row (requests, tokens, seconds, cache hits)."""
        return self._aggregates.usage

    def __len__(self) -> int:
        return self._aggregates.rows

    def cost(self) -> tuple[float | None, str]:
        """(cost in USD or None when no price is known, a note saying which)."""
        return estimate_cost(self.meta.get("judge"), self.usage, self._prices)

    def summary(self) -> dict[str, dict[str, Any]]:
        """Per metric: mean, std, min, max, scored, unscored, failed, threshold, pass rate."""
        return {name: stats.summary() for name, stats in self._aggregates.stats.items()}

    def usage_summary(self) -> dict[str, Any]:
        """Total usage plus the cost estimate and its note."""
        cost, note = self.cost()
        return {**self.usage.as_dict(), "cost_usd": cost, "cost_note": note}

    def rows(self) -> Iterator[dict[str, Any]]:
        """Every results row, in input order, read lazily from the results file."""
        with open(self.path, encoding="utf-8") as handle:
            for line in handle:
                if not line.endswith("\n"):
                    return  # a partial last line of a run killed mid-write (dropped on resume)
                if line.strip():
                    row: dict[str, Any] = json.loads(line)
                    yield row

    def to_jsonl(self, path: str | os.PathLike[str]) -> Path:
        """Copy the results rows to `path` (JSONL, one row per record) and return it."""
        target = Path(path)
        if target.resolve() != self.path.resolve():
            shutil.copyfile(self.path, target)
        return target

    def to_pandas(self) -> Any:
        """A DataFrame, one row per record: index, id, each metric's score, reason and error."""
        try:
            import pandas as pd
        except ImportError as exc:
            raise ImportError(
                'EvaluationResult.to_pandas() needs pandas: pip install "convoeval[pandas]"'
            ) from exc
        names = self.metric_names
        records = []
        for row in self.rows():
            record: dict[str, Any] = {"index": row["index"], "id": row.get("id")}
            for name in names:
                record[name] = row["scores"].get(name)
            for name in names:
                record[f"{name}_reason"] = (row.get("reasons") or {}).get(name)
                error = (row.get("errors") or {}).get(name)
                record[f"{name}_error"] = (
                    f"{error['type']}: {error['message']}" if error is not None else None
                )
            records.append(record)
        columns = ["index", "id", *names]
        columns += [f"{n}_{s}" for n in names for s in ("reason", "error")]
        return pd.DataFrame.from_records(records, columns=columns)

    def __repr__(self) -> str:
        parts = []
        for name, s in self.summary().items():
            mean = "n/a" if s["mean"] is None else f"{s['mean']:.4f}"
            parts.append(
                f"{name}: mean={mean} scored={s['scored']} unscored={s['unscored']} "
                f"failed={s['failed']}"
            )
        body = "; ".join(parts) or "no metrics"
        return f"EvaluationResult({len(self)} records; {body}; results={str(self.path)!r})"
