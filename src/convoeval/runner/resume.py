"""Resuming a run: the sidecar meta file, compatibility checks, and reading back finished rows.

The results file is append-only JSONL in input order; its sidecar `<results>.meta.json` says
what it was made from (data fingerprint, metrics, judge). A run that was killed mid-write leaves
at most one partial last line, which is detected and cut off before appending again.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from convoeval.errors import ConvoevalError

META_SUFFIX = ".meta.json"
#: The `format` marker of a sidecar meta file.
META_FORMAT = "convoeval-results"


class ResultsFileError(ConvoevalError, ValueError):
    """A results file that cannot be resumed into (other data, other metrics, corrupt rows)."""


def meta_path(results: str | os.PathLike[str]) -> Path:
    """The sidecar path of a results file: `results.jsonl` -> `results.jsonl.meta.json`."""
    return Path(os.fspath(results) + META_SUFFIX)


def read_meta(results: str | os.PathLike[str]) -> dict[str, Any] | None:
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
    return data


def write_meta(results: str | os.PathLike[str], meta: dict[str, Any]) -> None:
    """Write the sidecar atomically (a temporary file renamed over it)."""
    path = meta_path(results)
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(meta, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    os.replace(tmp, path)


def _metric_keys(meta: dict[str, Any]) -> list[tuple[Any, Any, Any]]:
    return [(m.get("name"), m.get("class"), m.get("config")) for m in meta.get("metrics", [])]


def conflict(old: dict[str, Any], new: dict[str, Any], results: str) -> str | None:
    """Why `results` (made as described by `old`) cannot be resumed by a run like `new`."""
    hint = (
        "pass overwrite=True (--overwrite on the command line) to start again, "
        "or choose another output file (-o)"
    )
    if old.get("data_fingerprint") != new.get("data_fingerprint") or old.get("format_option") != (
        new.get("format_option")
    ):
        return (
            f"{results} holds results for another data file ({old.get('data')}, "
            f"{old.get('records')} records), not for {new.get('data')}; {hint}"
        )
    if _metric_keys(old) != _metric_keys(new):
        before = ", ".join(str(m.get("name")) for m in old.get("metrics", []))
        now = ", ".join(str(m.get("name")) for m in new.get("metrics", []))
        same_names = before == now
        what = "the same metrics with other options" if same_names else f"metrics {now}"
        return f"{results} holds results of metrics {before}; this run asks for {what}; {hint}"
    if new.get("uses_judge") and old.get("judge_identity") != new.get("judge_identity"):
        return (
            f"{results} was scored by judge {old.get('judge_identity')}; this run uses "
            f"{new.get('judge_identity')}; {hint}"
        )
    return None


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
    on_row: Callable[[dict[str, Any]], None],
    *,
    repair: bool = True,
) -> Done:
    """Read every complete row of a results file, calling `on_row` for each in file order.

    A partial or unparsable *last* line (a run killed mid-write) is dropped, and with `repair`
    cut off the file so appending continues cleanly. A bad line before the end is corruption:
    `ResultsFileError` names it.
    """
    done = Done()
    path = os.fspath(results)
    good_end = 0
    bad: tuple[int, int] | None = None  # (byte offset, line number) of an unparsable line
    with open(path, "rb") as handle:
        for number, raw in enumerate(handle, start=1):
            if bad is not None:
                if raw.strip():
                    raise ResultsFileError(f"{path}:{bad[1]}: corrupt results row")
                continue
            if not raw.strip():
                good_end += len(raw)
                continue
            row = _parse(raw) if raw.endswith(b"\n") else None
            if row is None:
                bad = (good_end, number)
                continue
            good_end += len(raw)
            done.add(row["index"])
            on_row(row)
    if bad is not None and repair:
        with open(path, "r+b") as handle:
            handle.truncate(good_end)
    return done


def _parse(raw: bytes) -> dict[str, Any] | None:
    try:
        row = json.loads(raw)
    except ValueError:
        return None
    if not isinstance(row, dict) or not isinstance(row.get("index"), int):
        return None
    if not isinstance(row.get("scores"), dict):
        return None
    return row
