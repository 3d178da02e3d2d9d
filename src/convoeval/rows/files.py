"""Reading results files back: the sidecar `<results>.meta.json` (read and written atomically)
and the rows of the append-only JSONL results file, a partial last line (a run killed
mid-write) detected and cut off. Resume, the results object and the statistics read through here.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Protocol, cast

# Re-exported for the report, which reads rows and may not import the judges (ARCHITECTURE §2).
from convoeval.judges.protocol._redact import scrub as scrub
from convoeval.rows.row import ResultRow, ResultsFileError, RunMeta, parse_row


class RunLike(Protocol):
    """A finished run as the statistics read it: an `EvaluationResult`, or anything with its
    results file's `path`, sidecar `meta` and `rows()`."""

    @property
    def path(self) -> Path: ...

    @property
    def meta(self) -> RunMeta: ...

    def rows(self) -> Iterator[ResultRow]: ...


META_SUFFIX = ".meta.json"
#: The `format` marker of a sidecar meta file.
META_FORMAT = "convoeval-results"


def meta_path(results: str | os.PathLike[str]) -> Path:
    """The sidecar path of a results file: `results.jsonl` -> `results.jsonl.meta.json`."""
    return Path(os.fspath(results) + META_SUFFIX)


def read_meta(results: str | os.PathLike[str]) -> RunMeta | None:
    """The sidecar meta of a results file, or None when there is none."""
    path = meta_path(results)
    if not path.exists():
        return None
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError) as exc:
        raise ResultsFileError(f"{path}: unreadable results meta file: {exc}") from exc
    if not isinstance(data, dict) or data.get("format") != META_FORMAT:
        raise ResultsFileError(f"{path}: not a convoeval results meta file")
    return cast(RunMeta, data)


def require_meta(results: str | os.PathLike[str]) -> RunMeta:
    """The sidecar meta of an existing results file; `ResultsFileError` when either is missing
    (a results file is read together with the sidecar its run wrote)."""
    if not os.path.isfile(results):
        raise ResultsFileError(f"{os.fspath(results)}: no such results file")
    meta = read_meta(results)
    if meta is None:
        raise ResultsFileError(
            f"{os.fspath(results)}: its sidecar {os.fspath(results)}.meta.json is missing; a "
            "results file is read together with the sidecar its run wrote"
        )
    return meta


def write_meta(results: str | os.PathLike[str], meta: RunMeta) -> None:
    """Write the sidecar atomically (a temporary file renamed over it), scrubbed of every
    judge's key (a batch refused with an error naming it, say)."""
    path = meta_path(results)
    tmp = path.with_name(path.name + ".tmp")
    text = scrub(json.dumps(meta, indent=2, ensure_ascii=False))
    tmp.write_text(text + "\n", encoding="utf-8")
    os.replace(tmp, path)


class Done:
    """The record positions already in a results file: a contiguous prefix plus any others."""

    def __init__(self) -> None:
        self.prefix = 0
        self._extra: set[int] = set()

    def add(self, index: int) -> None:
        """Mark a record position as finished."""
        if index == self.prefix:
            self.prefix += 1
            while self.prefix in self._extra:
                self._extra.remove(self.prefix)
                self.prefix += 1
        elif index > self.prefix:
            self._extra.add(index)

    def __contains__(self, index: int) -> bool:
        return index < self.prefix or index in self._extra

    def __len__(self) -> int:
        return self.prefix + len(self._extra)


def read_rows(
    results: str | os.PathLike[str],
    on_row: Callable[[ResultRow], None],
    *,
    repair: bool = True,
) -> Done:
    """Read every complete row of a results file, calling `on_row` for each in file order.

    A last line without its newline (a run killed mid-write) is dropped, and with `repair` cut
    off the file so appending continues cleanly. Any complete line that is not a results row is
    `ResultsFileError` naming FILE:LINE.
    """
    done = Done()
    path = os.fspath(results)
    good_end = 0
    partial = False
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if not raw.endswith(b"\n"):
                partial = True  # only the last line can lack its newline
                break
            if raw.strip():
                row = parse_row(raw, f"{path}:{number}")
                done.add(row["index"])
                on_row(row)
            good_end += len(raw)
    if partial and repair:
        with open(path, "r+b") as handle:
            handle.truncate(good_end)
    return done


def iter_rows(results: str | os.PathLike[str]) -> Iterator[ResultRow]:
    """The complete rows of a results file in file order (a partial last line is skipped)."""
    path = os.fspath(results)
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if raw.strip() and raw.endswith(b"\n"):
                yield parse_row(raw, f"{path}:{number}")
