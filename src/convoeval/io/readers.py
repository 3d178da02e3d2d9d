"""Read data files record by record: JSONL and CSV line by line, Parquet by record batches.

A bad record never stops reading: it comes back as a `Record` with its problems, so a validator
can report every bad line. Only a file that cannot be read at all raises `DataFileError`.
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Iterator
from typing import Any

from convoeval.io.errors import DataError, DataFileError
from convoeval.io.files import check_readable, file_kind, open_binary, open_text
from convoeval.io.records import Record, check_format, convert
from convoeval.io.tabular import row_to_record
from convoeval.schema.sample import MultiTurnSample

#: (line or position, parsed record, problems found before conversion)
_Row = tuple[int, Any, list[str]]


def read_records(path: str | os.PathLike[str], *, format: str = "auto") -> Iterator[Record]:
    """Yield one `Record` per record of a data file, lazily, bad records included.

    The file type comes from the suffix (.jsonl/.ndjson, .json, .csv, .parquet; .gz for the
    first three kinds). `Record.line` is the physical line where the record starts (JSONL, CSV),
    the 1-based element index (JSON array) or the 1-based row (Parquet). JSONL, CSV and Parquet
    are streamed; a JSON array is loaded whole. Blank lines are skipped. `format` forces a layout
    ("ragas", "openai", "deepeval") instead of detecting it per record ("auto").
    Raises `DataFileError` (naming the file) only when the file itself cannot be read.
    """
    check_format(format)
    source = os.fspath(path)
    kind, compressed = file_kind(source)
    check_readable(source)
    if kind == "jsonl":
        rows = _jsonl_rows(source, compressed)
    elif kind == "json":
        rows = _json_rows(source, compressed)
    elif kind == "csv":
        rows = _csv_rows(source, compressed)
    else:
        from convoeval.io.parquet_io import parquet_rows

        rows = parquet_rows(source)
    return _records(source, rows, format)


def read_samples(
    path: str | os.PathLike[str], *, format: str = "auto"
) -> Iterator[MultiTurnSample]:
    """Yield the samples of a data file, lazily; raises `DataError` at the first bad record.

    The error lists every problem of that record as `file:line: path: what is wrong`.
    """
    return _samples(read_records(path, format=format))


def _samples(records: Iterator[Record]) -> Iterator[MultiTurnSample]:
    for record in records:
        if not record.ok:
            raise DataError(record.problems())
        assert record.sample is not None
        yield record.sample


def _records(source: str, rows: Iterator[_Row], format: str) -> Iterator[Record]:
    """Convert parsed rows into Records (problems found while parsing win)."""
    for line, data, problems in rows:
        if problems:
            yield Record(source, line, None, problems)
            continue
        sample, errors, layout = convert(data, format)
        yield Record(source, line, sample, errors, layout)


def _jsonl_rows(source: str, compressed: bool) -> Iterator[_Row]:
    """One parsed JSON value per non-blank line, read one line at a time."""
    try:
        with open_binary(source, compressed) as handle:
            for number, raw in enumerate(handle, start=1):
                if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
                    raw = raw[3:]  # a UTF-8 byte order mark
                try:
                    text = raw.decode("utf-8").rstrip()
                except UnicodeDecodeError as exc:
                    yield number, None, [f"not UTF-8 text (byte {exc.start + 1} of the line)"]
                    continue
                if not text.strip():
                    continue
                try:
                    yield number, json.loads(text), []
                except json.JSONDecodeError as exc:
                    yield number, None, [f"invalid JSON: {exc.msg} (column {exc.colno})"]
    except (OSError, EOFError) as exc:
        raise DataFileError(source, f"cannot read: {exc}") from exc


def _json_rows(source: str, compressed: bool) -> Iterator[_Row]:
    """The elements of a JSON array (loaded whole); a single object counts as one record."""
    try:
        with open_text(source, compressed, "r") as handle:
            data = json.load(handle)
    except json.JSONDecodeError as exc:
        raise DataFileError(
            source, f"not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from exc
    except UnicodeDecodeError as exc:
        raise DataFileError(source, f"not UTF-8 text (byte {exc.start + 1})") from exc
    except (OSError, EOFError) as exc:
        raise DataFileError(source, f"cannot read: {exc}") from exc
    if isinstance(data, dict):
        data = [data]
    if not isinstance(data, list):
        raise DataFileError(
            source, f"a .json data file must hold an array of records, got {type(data).__name__}"
        )
    for position, item in enumerate(data, start=1):
        yield position, item, []


def _csv_rows(source: str, compressed: bool) -> Iterator[_Row]:
    """One record per CSV row (read row by row), numbered by the line where the row starts."""
    csv.field_size_limit(max(csv.field_size_limit(), 2**31 - 1))  # long conversations in a cell
    try:
        with open_text(source, compressed, "r") as handle:
            reader = csv.reader(handle)
            header: list[str] | None = None
            end = 0
            for cells in reader:
                start, end = end + 1, reader.line_num
                if not any(cells):
                    continue  # a blank line (or a row of empty cells)
                if header is None:
                    header = _header(source, cells)
                    continue
                yield start, *_csv_record(header, cells)
    except csv.Error as exc:
        raise DataFileError(source, f"line {reader.line_num}: not valid CSV: {exc}") from exc
    except UnicodeDecodeError as exc:
        raise DataFileError(source, f"not UTF-8 text (byte {exc.start + 1})") from exc
    except (OSError, EOFError) as exc:
        raise DataFileError(source, f"cannot read: {exc}") from exc


def _header(source: str, cells: list[str]) -> list[str]:
    """The column names; duplicates would make a row ambiguous."""
    names = [cell.strip() for cell in cells]
    duplicates = sorted({name for name in names if names.count(name) > 1})
    if duplicates:
        raise DataFileError(source, f"duplicate CSV columns: {', '.join(duplicates)}")
    return names


def _csv_record(header: list[str], cells: list[str]) -> tuple[dict[str, Any], list[str]]:
    """Decode one CSV row: empty cells are absent fields, JSON columns are parsed."""
    if len(cells) > len(header):
        return {}, [f"this row has {len(cells)} cells but the header has {len(header)} columns"]
    return row_to_record(dict(zip(header, cells, strict=False)), empty_is_absent=True)
