"""File kinds (from the suffix) and opening files, plain or gzip-compressed, as data files."""

from __future__ import annotations

import gzip
import io
import os
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
    """Fail early, naming the file, when it is missing, a directory or not readable."""
    if not os.path.exists(path):
        raise DataFileError(path, "no such file")
    if os.path.isdir(path):
        raise DataFileError(path, "is a directory, not a data file")
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
