"""The records of two runs, paired for `compare` (docs/compare.md): by id, else (records without
one) by the fingerprint of the conversation's user side; what pairs with nothing is listed. Also
what the two sidecars say differs: metric options refuse the comparison, the rest is a warning.

A pair's outcome for a metric is one of "scored" (with its value: a repeated run's mean over the
repeats), "failed" or "unscored"; only pairs scored on both sides enter the statistics.
"""

from __future__ import annotations

import hashlib
import json
import os
from collections import deque
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from convoeval.errors import ConvoevalError
from convoeval.rows.files import RunLike, iter_rows, require_meta
from convoeval.rows.identity import metric_changes, option_changes, setup_changes
from convoeval.rows.row import ResultRow, RunMeta

#: The fields a record is scored against (what the user asked for, not what the bot did): a
#: paired record whose fields differ is another task, and comparing it is refused.
TASK_FIELDS = (
    "reference",
    "reference_tool_calls",
    "reference_topics",
    "rubrics",
    "expected_outcome",
    "scenario",
    "user_description",
    "context",
)
SCORED, FAILED, UNSCORED = "scored", "failed", "unscored"


class CompareError(ConvoevalError, ValueError):
    """Two runs that cannot be compared (nothing pairs, other references, other metric
    options, an unknown metric), saying what differs."""


@dataclass(frozen=True)
class RecordRef:
    """Where a record is in its run: its row position, id and source line."""

    index: int
    id: str | None
    where: str

    @classmethod
    def of(cls, row: Mapping[str, Any]) -> RecordRef:
        """Where a results row's record is."""
        return cls(int(row["index"]), row.get("id"), str(row.get("where") or ""))

    @property
    def label(self) -> str:
        """The record's id, else its position (`#3`)."""
        return str(self.id) if self.id is not None else f"#{self.index}"


@dataclass(frozen=True)
class Entry:
    """One record of a run as the comparison keeps it: where it is, its keys, and per compared
    metric its (state, value)."""

    ref: RecordRef
    #: Digest of the user's messages and the task fields (None when the row holds no sample).
    user_side: str | None
    #: Digest of the task fields alone.
    task: str | None
    outcomes: tuple[tuple[str, float | None], ...]


class Run:
    """A results file (path) or a `RunLike` read for comparing: its label, sidecar and rows."""

    def __init__(self, run: RunLike | str | os.PathLike[str]) -> None:
        if isinstance(run, str | os.PathLike):
            path = os.fspath(run)
            self.label = path
            self.meta: RunMeta = require_meta(path)
            self._rows: Callable[[], Iterator[ResultRow]] = lambda: iter_rows(path)
        else:
            self.label = str(run.path)
            self.meta = run.meta
            self._rows = run.rows

    def rows(self) -> Iterator[ResultRow]:
        """The run's rows, read again from the start."""
        return self._rows()

    def metric_names(self) -> list[str]:
        """The run's metrics in their order."""
        return [m["name"] for m in self.meta.get("metrics", [])]

    def thresholds(self) -> dict[str, float | None]:
        """Each metric's threshold in this run."""
        return {m["name"]: m.get("threshold") for m in self.meta.get("metrics", [])}

    def entries(self, metrics: Sequence[str]) -> list[Entry]:
        """One `Entry` per row, in file order."""
        return [_entry(row, metrics) for row in self.rows()]


def outcome(row: Mapping[str, Any], metric: str) -> tuple[str, float | None]:
    """A row's (state, value) for `metric`: failed when it has an error (whatever its score),
    else scored with the repeats' mean (a repeated run) or the score, else unscored."""
    if metric in (row.get("errors") or {}):
        return FAILED, None
    entry = (row.get("repeats") or {}).get(metric)
    value = entry.get("mean") if entry else (row.get("scores") or {}).get(metric)
    return (UNSCORED, None) if value is None else (SCORED, float(value))


def fingerprint(sample: Mapping[str, Any] | None, user_side: bool) -> str | None:
    """The one record fingerprint: a digest of the task fields, with `user_side` also of the
    user's messages (what the bot did not write); None when the row holds no conversation."""
    if not sample:
        return None
    part: dict[str, Any] = {key: sample.get(key) for key in TASK_FIELDS}
    if user_side:
        messages = sample.get("user_input") or []
        part["user"] = [m.get("content") for m in messages if m.get("type") == "human"]
    text = json.dumps(part, sort_keys=True, ensure_ascii=False, default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


def _entry(row: ResultRow, metrics: Sequence[str]) -> Entry:
    sample = row.get("sample")
    outcomes = tuple(outcome(row, m) for m in metrics)
    return Entry(RecordRef.of(row), fingerprint(sample, True), fingerprint(sample, False), outcomes)


@dataclass(frozen=True)
class Pairing:
    """The records of two runs: the pairs (base entry, new entry) in NEW's order, how many of
    them paired by fingerprint, and the records of each run that paired with nothing."""

    pairs: list[tuple[Entry, Entry]]
    by_fingerprint: int
    only_base: list[RecordRef]
    only_new: list[RecordRef]


def pair(base: Sequence[Entry], new: Sequence[Entry]) -> Pairing:
    """Pair records by id; records without an id by the fingerprint of their user side. The
    k-th record of a repeated key pairs with the k-th of the other run."""
    waiting: dict[tuple[str, str], deque[Entry]] = {}
    for entry in base:
        key = _key(entry)
        if key is not None:
            waiting.setdefault(key, deque()).append(entry)
    pairs: list[tuple[Entry, Entry]] = []
    only_new: list[RecordRef] = []
    by_fingerprint = 0
    for entry in new:
        key = _key(entry)
        queue = waiting.get(key) if key is not None else None
        if queue:
            pairs.append((queue.popleft(), entry))
            by_fingerprint += key is not None and key[0] == "user side"
        else:
            only_new.append(entry.ref)
    paired = {b.ref.index for b, _ in pairs}
    only_base = [e.ref for e in base if e.ref.index not in paired]
    return Pairing(pairs, by_fingerprint, only_base, only_new)


def _key(entry: Entry) -> tuple[str, str] | None:
    if entry.ref.id is not None:
        return "id", str(entry.ref.id)
    return ("user side", entry.user_side) if entry.user_side is not None else None


def other_tasks(pairs: Sequence[tuple[Entry, Entry]]) -> list[RecordRef]:
    """The paired records (NEW's side) whose task fields differ from BASE's (both stored)."""
    return [n.ref for b, n in pairs if None not in (b.task, n.task) and b.task != n.task]


def run_differences(
    base: RunMeta, new: RunMeta, metrics: Sequence[str]
) -> tuple[list[str], list[str]]:
    """What the sidecars say differs, as (refusals, warnings): a compared metric of another
    class or other options is refused (its scores measure something else); other prompts,
    judge or threshold, the offline calibration, the convoeval version and the run options
    (`--repeat`) are warnings."""
    refusals: list[str] = []
    warnings: list[str] = []
    before = {m["name"]: m for m in base.get("metrics", [])}
    after = {m["name"]: m for m in new.get("metrics", [])}
    for name in metrics:
        for part, text in metric_changes(name, before[name], after[name]).items():
            (refusals if part in ("class", "options") else warnings).append(text)
    return refusals, warnings + setup_changes(base, new) + option_changes(base, new)
