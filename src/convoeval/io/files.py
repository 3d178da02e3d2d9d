"""File kinds (from the suffix) and opening files, plain or gzip-compressed, as data files."""

from __future__ import annotations

import gzip
import io
import os
import stat
from typing import IO, Literal, cast

from convoeval.io.errors import DataFileError

Kind = Literal["jsonl", "json", "csv", "parquet"]
_SUFFIXES: tuple[tuple[str, Kind], ...] = (
    (".jsonl", "jsonl"),
    (".ndjson", "jsonl"),
    (".json", "json"),
    (".csv", "csv"),
    (".parquet", "parquet"),
)
SUPPORTED = ".jsonl, .ndjson, .json, .csv or .parquet (the first four also as .gz)"
#: The longest line a JSONL or CSV file may have (bytes); longer ones are reported, not read.
MAX_LINE_BYTES = 64 * 2**20


def line_too_long() -> str:
    """The problem of a line over `MAX_LINE_BYTES`."""
    size = MAX_LINE_BYTES
    shown = f"{size // 2**20} MiB" if size % 2**20 == 0 else f"{size} bytes"
    return f"line longer than {shown} (the limit for one line)"


def file_kind(path: str) -> tuple[Kind, bool]:
    """(kind, gzip-compressed) of a data file, from its name; `DataFileError` if unknown."""
    name = path.lower()
    compressed = name.endswith(".gz")
    if compressed:
        name = name[:-3]
    for suffix, kind in _SUFFIXES:
        if name.endswith(suffix) and not (compressed and kind == "parquet"):
            return kind, compressed
    raise DataFileError(path, f"unknown data file type: expected a {SUPPORTED} file")


def check_readable(path: str) -> None:
    """Fail early, naming the file, when it is missing, a directory, not a regular file (a FIFO,
    a device such as a link to /dev/zero, a socket: they can hang a reader or never end, and a
    run reads its input twice) or not readable."""
    try:
        mode = os.stat(path).st_mode
    except FileNotFoundError:
        raise DataFileError(path, "no such file") from None
    except OSError as exc:
        raise DataFileError(path, f"cannot read: {exc.strerror or exc}") from exc
    if stat.S_ISDIR(mode):
        raise DataFileError(path, "is a directory, not a data file")
    if not stat.S_ISREG(mode):
        what = "a named pipe (FIFO)" if stat.S_ISFIFO(mode) else "a device or socket"
        raise DataFileError(
            path, f"is {what}, not a regular file: save the data to a file and give that"
        )
    if not os.access(path, os.R_OK):
        raise DataFileError(path, "permission denied")


def open_binary(path: str, compressed: bool) -> IO[bytes]:
    """Open a file for reading bytes (gunzipping on the fly)."""
    if compressed:
        return cast(IO[bytes], gzip.GzipFile(path, "rb"))
    return open(path, "rb")


def open_text(path: str, compressed: bool, mode: Literal["r", "w"]) -> IO[str]:
    """Open a UTF-8 text file (BOM skipped when reading) with newline='' as csv/json need."""
    encoding = "utf-8-sig" if mode == "r" else "utf-8"
    if compressed:
        raw = gzip.GzipFile(path, mode + "b")
        return io.TextIOWrapper(raw, encoding=encoding, newline="")
    return open(path, mode, encoding=encoding, newline="")
