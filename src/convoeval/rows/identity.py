"""What differs between two runs' sidecars (a metric's class, options, prompts, judge and
threshold; the run options; the calibration and version), said once for the two readers: resume
refuses to continue another run's file, `compare` refuses or warns about two runs scored
differently."""

from __future__ import annotations

import json

from convoeval.rows.row import MetricRecord, RunMeta


def options_diff(was: MetricRecord, now: MetricRecord) -> str:
    """Changed options the way -m writes them: `strict_order=true -> strict_order=false`."""
    before, after = was.get("config") or {}, now.get("config") or {}
    keys = sorted(k for k in {*before, *after} if before.get(k) != after.get(k))
    return ", ".join(
        f"{k}={json.dumps(before.get(k))} -> {k}={json.dumps(after.get(k))}" for k in keys
    )


def metric_changes(name: str, was: MetricRecord, now: MetricRecord) -> dict[str, str]:
    """Each part of metric `name` that differs from `was` to `now`, as a phrase naming both
    sides: "class" (or else "options"), "prompts" (step fingerprints), "judge" (for a metric
    that asks one) and "threshold"."""
    changes: dict[str, str] = {}
    if was.get("class") != now.get("class"):
        changes["class"] = f"{name} is another class ({was.get('class')} -> {now.get('class')})"
    elif (was.get("config") or {}) != (now.get("config") or {}):
        changes["options"] = f"{name}'s options differ ({options_diff(was, now)})"
    if was.get("steps") != now.get("steps"):
        changes["prompts"] = f"{name}'s prompts or output schemas differ (step fingerprints)"
    asks = now.get("uses_judge") or was.get("uses_judge")
    if asks and was.get("judge") != now.get("judge"):
        changes["judge"] = f"{name}'s judge differs ({was.get('judge')} -> {now.get('judge')})"
    if was.get("threshold") != now.get("threshold"):
        changes["threshold"] = (
            f"{name}'s threshold differs ({was.get('threshold')} -> {now.get('threshold')})"
        )
    return changes


def option_changes(old: RunMeta, new: RunMeta) -> list[str]:
    """The run options (`meta.options`, e.g. `repeat`) that differ, as their flags:
    `--repeat differs (3 -> 5)`."""
    given, now = old.get("options") or {}, new.get("options") or {}
    return [
        f"--{key.replace('_', '-')} differs ({given.get(key)} -> {now.get(key)})"
        for key in sorted({*given, *now})
        if given.get(key) != now.get(key)
    ]


def setup_changes(old: RunMeta, new: RunMeta) -> list[str]:
    """The offline judge's calibration (when the new run has one) and the convoeval version,
    when they differ."""
    changes = []
    if old.get("calibration") != new.get("calibration") and new.get("calibration") is not None:
        changes.append(
            f"the offline judge's calibration differs ({old.get('calibration')} -> "
            f"{new.get('calibration')})"
        )
    if old.get("convoeval_version") != new.get("convoeval_version"):
        changes.append(
            f"the convoeval version differs ({old.get('convoeval_version')} -> "
            f"{new.get('convoeval_version')})"
        )
    return changes
