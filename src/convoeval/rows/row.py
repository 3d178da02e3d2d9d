"""The typed shapes that cross parts: a results row, the run metadata (the results sidecar) and a
judge's description. The writer, resume, the summaries, the report and `to_pandas` all use these.
"""

from __future__ import annotations

import json
from typing import Any, NotRequired, TypedDict, cast

from convoeval.errors import ConvoevalError
from convoeval.judges.protocol.base import Usage


class ResultsFileError(ConvoevalError, ValueError):
    """A results file that cannot be read, resumed or written (other run, corrupt row, locked)."""


class ErrorEntry(TypedDict):
    """Why a (record, metric) pair failed: the exception type name and its message."""

    type: str
    message: str


class UsageEntry(TypedDict):
    """Judge usage of one row (or a whole run)."""

    requests: int
    prompt_tokens: int
    completion_tokens: int
    latency_s: float
    cached: int


def usage_entry(usage: Usage) -> UsageEntry:
    """The JSON form of a `Usage`."""
    return {
        "requests": usage.requests,
        "prompt_tokens": usage.prompt_tokens,
        "completion_tokens": usage.completion_tokens,
        "latency_s": round(usage.latency_s, 6),
        "cached": usage.cached,
    }


def usage_of(entry: Any) -> Usage:
    """A `Usage` back from its JSON form (missing counts are 0)."""
    entry = entry if isinstance(entry, dict) else {}
    return Usage(
        requests=int(entry.get("requests", 0)),
        prompt_tokens=int(entry.get("prompt_tokens", 0)),
        completion_tokens=int(entry.get("completion_tokens", 0)),
        latency_s=float(entry.get("latency_s", 0.0)),
        cached=int(entry.get("cached", 0)),
    )


class RepeatEntry(TypedDict):
    """One metric of a record in a repeated run: every repeat's value (None: failed or
    unscored) and their spread; `pass_rate` is the share of the repeats at the threshold."""

    values: list[float | None]
    mean: float | None
    min: float | None
    max: float | None
    std: float | None
    pass_rate: float | None


class ResultRow(TypedDict):
    """One results line: a record's scores, reasons, details and failures, self-contained.
    A repeated run's row (runner/_repeats.py) holds the mean over the repeats in `scores` and
    each metric's spread in `repeats`."""

    index: int
    id: str | None
    where: str
    scores: dict[str, float | None]
    reasons: dict[str, str | None]
    details: dict[str, Any]
    errors: dict[str, ErrorEntry]
    usage: UsageEntry
    sample: dict[str, Any]
    repeats: NotRequired[dict[str, RepeatEntry]]


class JudgeDescription(TypedDict, total=False):
    """What a judge says about itself (`Judge.describe()`); never a key."""

    kind: str
    name: str
    model: str
    endpoint: str
    calibration: str
    concurrency: int
    batch: bool
    describe_error: str


#: A metric as the sidecar records it: what shapes its scores (class, config, step
#: fingerprints), the judge it used and its scores' range. Functional form: "class" is a keyword.
MetricRecord = TypedDict(
    "MetricRecord",
    {
        "name": str,
        "class": str,
        "config": dict[str, Any],
        "steps": list[str],
        "threshold": float | None,
        "uses_judge": bool,
        "needs_llm": bool,
        "judge": str | None,
        #: [low, high] of its scores (None: its own scale); gate limits are checked against it.
        "score_range": NotRequired[list[float] | None],
    },
)


class RunMeta(TypedDict):
    """The sidecar `<results>.meta.json`: what a results file was made from, so it can resume."""

    format: str
    version: int
    convoeval_version: str
    data: str
    format_option: str
    data_fingerprint: str
    records: int
    metrics: list[MetricRecord]
    skipped_metrics: dict[str, str]
    judge: JudgeDescription | None
    calibration: str | None
    uses_judge: bool
    options: dict[str, Any]
    invalid: list[str]
    started: str
    completed: str | None
    resumed: NotRequired[str]
    #: Per metric scored by a judge panel: Fleiss' kappa between its members (when completed).
    panel_agreement: NotRequired[dict[str, dict[str, Any]]]
    #: Judge panel members this run left out (unreachable when it started), by label: why.
    panel_left_out: NotRequired[dict[str, str]]
    #: Metrics chosen from the data that some records cannot feed (those are unscored): why.
    partial_metrics: NotRequired[dict[str, str]]
    #: The Ragas / DeepEval evaluate() keywords a run was given that mean nothing here.
    peer_keywords: NotRequired[list[str]]
    #: Batch API batches of the run (judges/openai/batch.py): id, input file, requests, status.
    batches: NotRequired[list[dict[str, Any]]]
    #: The engine that scored a run away from the runner's loop (Ray): its name, workers, and
    #: its start-up and scoring seconds apart (`startup_s`, `scoring_s`).
    engine: NotRequired[dict[str, Any]]
    rows: str


def parse_row(raw: bytes | str, where: str) -> ResultRow:
    """A results row from one JSON line, or `ResultsFileError` naming `where` (FILE:LINE)."""
    try:
        data = json.loads(raw)
    except ValueError as exc:
        raise ResultsFileError(f"{where}: not a JSON results row ({exc})") from exc
    if not isinstance(data, dict):
        raise ResultsFileError(f"{where}: a results row must be a JSON object")
    if not isinstance(data.get("index"), int):
        raise ResultsFileError(f"{where}: a results row needs an integer 'index'")
    for key in ("scores", "errors"):
        if not isinstance(data.get(key, {}), dict) or (key == "scores" and key not in data):
            raise ResultsFileError(f"{where}: a results row needs a '{key}' object")
    return cast(ResultRow, data)
