"""Resuming a run: the sidecar meta file, what must match to continue a results file, and reading
back finished rows.

The results file is append-only JSONL in input order; its sidecar `<results>.meta.json` says
what it was made from. A run killed mid-write leaves at most one partial last line, which is
detected and cut off before appending again.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Iterator
from datetime import UTC, datetime
from pathlib import Path

from convoeval.rows.files import (
    Done,
    meta_path,
    read_meta,
    read_rows,
)
from convoeval.rows.identity import metric_changes, option_changes, setup_changes
from convoeval.rows.row import MetricRecord, ResultRow, ResultsFileError, RunMeta
from convoeval.runner._schedule import Job, Writer, run_jobs

_HINT = "use --overwrite (overwrite=True in Python) to start again, or another output file (-o)"


def _by_name(meta: RunMeta) -> dict[str, MetricRecord]:
    return {m["name"]: m for m in meta.get("metrics", [])}


def _changes(old: RunMeta, new: RunMeta) -> list[str]:
    """What differs between the run that made a results file and this one (metric order aside)."""
    changes = option_changes(old, new)
    if not changes and (old.get("data_fingerprint"), old.get("format_option")) != (
        new["data_fingerprint"],
        new["format_option"],
    ):
        changes.append(
            f"the data differ (the file holds {old.get('records')} records of {old.get('data')})"
        )
    before, now = _by_name(old), _by_name(new)
    if set(before) != set(now):
        changes.append(f"the metrics differ ({', '.join(before)} before, {', '.join(now)} now)")
        return changes
    for name, entry in now.items():  # a threshold may change on resume
        found = metric_changes(name, before[name], entry)
        changes += [text for part, text in found.items() if part != "threshold"]
    return changes + setup_changes(old, new)


def conflict(old: RunMeta, new: RunMeta, results: str) -> str | None:
    """Why `results` (made as `old` describes) cannot be continued by a run like `new`."""
    changes = _changes(old, new)
    if not changes:
        return None
    return f"{results} cannot be resumed by this run: {'; '.join(changes)}; {_HINT}"


class RowPlan:
    """What a run does with an existing results file: start it, append to it (resume), or
    rewrite it with its failed pairs re-scored (`retry_failed`, atomic: the old file stays whole
    until the new one is complete)."""

    def __init__(self, retry: bool = False) -> None:
        self.retry = retry
        self.done = Done()
        self.redo: dict[int, ResultRow] = {}

    @property
    def kept(self) -> int:
        """Rows kept as they are (already finished, not to be re-scored)."""
        return len(self.done) - len(self.redo)

    def is_kept(self, index: int) -> bool:
        """Whether the row of record `index` is kept as it is."""
        return index in self.done and index not in self.redo

    def to_score(self, valid: int) -> bool:
        """Whether any (record, metric) pair remains to be scored."""
        return bool(self.redo) or len(self.done) < valid

    def finished(self, valid: int) -> bool:
        """Whether every row is kept as read (a resumed run with nothing left to score): no
        scoring pass is needed. A retry rewrites the file, so it is never finished here."""
        return not self.retry and not self.to_score(valid)

    def read(self, path: Path, on_row: Callable[[ResultRow], None]) -> None:
        """Take in the rows of an existing results file."""

        def take(row: ResultRow) -> None:
            if self.retry and row.get("errors"):
                self.redo[row["index"]] = row
            elif not self.retry:
                on_row(row)

        self.done = read_rows(path, take)

    async def run(
        self,
        path: Path,
        jobs: Iterator[Job],
        on_row: Callable[[ResultRow], None],
        *,
        window: int,
    ) -> None:
        """Write the rows of `jobs` in order: appended, or into a new file renamed over `path`."""
        target = path.with_name(path.name + ".retry.tmp") if self.retry else path
        try:
            with open(target, "w" if self.retry else "a", encoding="utf-8") as handle:
                await run_jobs(jobs, Writer(handle, on_row), window=window)
            if self.retry:
                os.replace(target, path)
        finally:
            if self.retry:
                target.unlink(missing_ok=True)


def prepare(
    path: Path,
    meta: RunMeta,
    on_row: Callable[[ResultRow], None],
    *,
    resume: bool,
    overwrite: bool,
    retry_failed: bool,
) -> RowPlan:
    """Start a fresh results file, or check an existing one against its sidecar and take in its
    rows (resume or retry)."""
    has_rows = path.exists() and path.stat().st_size > 0
    if retry_failed and (overwrite or not has_rows):
        raise ResultsFileError(
            f"nothing to retry: {path} holds no results yet"
            if not overwrite
            else "--retry-failed and --overwrite cannot be used together"
        )
    if overwrite or not has_rows:
        if not overwrite:
            _keep_batches(path, meta)  # killed before its first row, with batches in flight
        path.write_bytes(b"")
        return RowPlan()
    if not resume and not retry_failed:
        raise ResultsFileError(f"{path} already holds results; {_HINT}, or resume it")
    old = read_meta(path)
    if old is None:
        raise ResultsFileError(
            f"{path} holds rows but no {meta_path(path).name}, so it cannot be continued "
            f"safely; {_HINT}"
        )
    problem = conflict(old, meta, str(path))
    if problem is not None:
        raise ResultsFileError(problem)
    meta["started"] = old.get("started", meta["started"])
    meta["resumed"] = now()
    _keep_batches(path, meta, old)
    plan = RowPlan(retry=retry_failed)
    plan.read(path, on_row)
    return plan


def _keep_batches(path: Path, meta: RunMeta, old: RunMeta | None = None) -> None:
    """Carry the Batch API batches of the run that made `path` (same identity) into `meta`, so
    the batches it left in flight are collected, not sent again (judges/openai/batch.py)."""
    if old is None:
        try:
            old = read_meta(path)
        except ResultsFileError:
            return
        if old is None or conflict(old, meta, str(path)) is not None:
            return
    if old.get("batches"):
        meta["batches"] = old["batches"]


def now() -> str:
    return datetime.now(UTC).isoformat(timespec="seconds")
