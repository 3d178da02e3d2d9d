"""Read data files record by record: JSONL and CSV line by line, Parquet by record batches.

A bad record never stops reading: it comes back as a `Record` with its problems, so a validator
can report every bad line. Only a file that cannot be read at all raises `DataFileError`.
"""

from __future__ import annotations

import csv
import itertools
import json
import os
from collections.abc import Iterator, Mapping
from typing import IO, Any, AnyStr

from convoeval.io import files, strict_json
from convoeval.io.errors import DataError, DataFileError, OptionError
from convoeval.io.files import check_readable, file_kind, open_binary, open_text
from convoeval.io.otel import is_trace, trace_records
from convoeval.io.records import Record, check_format, convert_parsed
from convoeval.io.remap import Remap, make_remap
from convoeval.io.strict_json import problems_of
from convoeval.io.tabular import row_to_record
from convoeval.schema.sample import MultiTurnSample

#: The problem of `--format otel` given for a file that cannot hold a trace export.
TRACES_ARE_JSON = (
    "--format otel reads trace exports as OTLP JSON (.json) or JSON lines (.jsonl, .ndjson), "
    "also gzipped"
)
#: The keys under which a .json file's one object may hold the records (`{"data": [...]}`).
WRAPPER_KEYS = ("data", "records", "conversations", "samples")
#: Keys that make an object one record (a conversation or a logged call), never a wrapper.
_RECORD_KEYS = frozenset({"user_input", "messages", "turns", "request"})
#: The problem of a data file that holds no record at all.
NO_RECORDS = "no records: the file holds no conversation (nothing to check or score)"
#: (line or position, parsed record, problems found before conversion,
#: and whether it is known to be within the limits of strict JSON already (see `convert_parsed`)
_Row = tuple[int, Any, list[str], bool]


def read_records(
    path: str | os.PathLike[str],
    *,
    format: str = "auto",
    messages_field: str | None = None,
    fields: Mapping[str, str] | None = None,
) -> Iterator[Record]:
    """Yield one `Record` per record of a data file, lazily, bad records included.

    The file type comes from the suffix (.jsonl/.ndjson, .json, .csv, .parquet; .gz for the
    first three kinds). `Record.line` is the physical line where the record starts (JSONL, CSV),
    the 1-based element index (JSON array) or the 1-based row (Parquet). JSONL, CSV and Parquet
    are streamed; a JSON array is loaded whole. Blank lines are skipped. `format` forces a layout
    ("ragas", "openai", "deepeval") instead of detecting it per record ("auto"); "otel" reads a
    trace export (.json/.jsonl, detected by "auto" too), one record per conversation, whose
    `Record.line` is where its first span is (docs/traces.md).
    `messages_field` (a dotted path to the conversation) and `fields` (sample field or
    `metadata.KEY` -> dotted path) read other layouts; see `convoeval.io.remap`.
    Raises `DataFileError` (naming the file) when the file itself cannot be read, and at the end
    when it holds no record at all; `OptionError` (a `ValueError`) for a bad option.
    """
    check_format(format)
    options = make_remap(messages_field, fields)
    source = os.fspath(path)
    kind, compressed = file_kind(source)
    check_readable(source)
    wrapper: list[str] = []  # the key of a .json file's list of records, once it is read
    if format == "otel" and kind not in ("jsonl", "json"):
        raise DataFileError(source, TRACES_ARE_JSON)
    if format == "otel" and options is not None:
        raise OptionError("--messages-field and --field do not apply to --format otel")
    return _records(
        source, _rows(source, kind, compressed, wrapper), format, kind, options, wrapper
    )


def read_objects(path: str | os.PathLike[str]) -> Iterator[tuple[str, Any, list[str]]]:
    """Yield `(where, value, problems)` per record of a JSONL, JSON, CSV or Parquet file, parsed
    under the strict JSON rules but not converted into a conversation (for files of other
    records, such as the simulator's scenarios). `where` is `file:line` (`file: [i]` for element
    i of a JSON array); a record with problems comes with value None. Raises `DataFileError`
    when the file cannot be read."""
    source = os.fspath(path)
    kind, compressed = file_kind(source)
    check_readable(source)
    for line, data, problems, checked in _rows(source, kind, compressed, []):
        found = problems or ([] if checked else problems_of(data))
        where = Record(source, line, None, element=kind == "json").where
        yield where, None if found else data, found


def _rows(source: str, kind: str, compressed: bool, wrapper: list[str]) -> Iterator[_Row]:
    """The parsed records of a file of this kind, with the problems found while parsing
    (`wrapper` names the key of a .json file's list of records once it is read)."""
    if kind == "jsonl":
        return _jsonl_rows(source, compressed)
    if kind == "json":
        return _json_rows(source, compressed, wrapper)
    if kind == "csv":
        return _csv_rows(source, compressed)
    from convoeval.io.parquet_io import parquet_rows

    return (
        (row, record, problems or problems_of(record), True)
        for row, record, problems in parquet_rows(source)
    )


def read_samples(
    path: str | os.PathLike[str],
    *,
    format: str = "auto",
    messages_field: str | None = None,
    fields: Mapping[str, str] | None = None,
) -> Iterator[MultiTurnSample]:
    """Yield the samples of a data file, lazily; raises `DataError` at the first bad record.

    The error lists every problem of that record as `file:line: path: what is wrong`.
    """
    records = read_records(path, format=format, messages_field=messages_field, fields=fields)
    return _samples(records)


def _samples(records: Iterator[Record]) -> Iterator[MultiTurnSample]:
    for record in records:
        if not record.ok:
            raise DataError(record.problems())
        assert record.sample is not None
        yield record.sample


def _records(
    source: str,
    rows: Iterator[_Row],
    format: str,
    kind: str,
    options: Remap | None,
    wrapper: list[str],
) -> Iterator[Record]:
    """Convert parsed rows into Records (problems found while parsing win); a file without a
    single record raises `DataFileError` at the end: there is nothing to check or score. A
    trace export (`format="otel"`, or "auto" when its first record is one) is read whole by
    `io.otel`, which groups its spans into conversations. The records of a .json file that
    wraps them (`wrapper` names the key once the first row is read) are placed as `KEY[i]`."""
    element = kind == "json"
    if format in ("auto", "otel") and kind in ("jsonl", "json"):
        first = next(rows, None)
        if first is not None:
            rows = itertools.chain([first], rows)
            if format == "otel" or (not first[2] and is_trace(first[1]) and options is None):
                yield from trace_records(source, rows, element)
                return
    empty = True
    for line, data, problems, checked in rows:
        empty = False
        if problems:
            at = f"{wrapper[0]}[{line - 1}]" if wrapper else None
            yield Record(source, line, None, problems, element=element, at=at)
            continue
        sample, errors, layout = convert_parsed(data, format, options, checked=checked)
        at = f"{wrapper[0]}[{line - 1}]" if wrapper else None
        yield Record(source, line, sample, errors, layout, element, at)
    if empty:
        raise DataFileError(source, NO_RECORDS)


def _jsonl_rows(source: str, compressed: bool) -> Iterator[_Row]:
    """One parsed JSON value per non-blank line, read one bounded line at a time."""
    try:
        with open_binary(source, compressed) as handle:
            for number, raw in enumerate(_lines(handle), start=1):
                if raw is None:
                    yield number, None, [files.line_too_long()], True
                    continue
                if number == 1 and raw.startswith(b"\xef\xbb\xbf"):
                    raw = raw[3:]  # a UTF-8 byte order mark
                try:
                    text = raw.decode("utf-8").rstrip()
                except UnicodeDecodeError as exc:
                    problem = f"not UTF-8 text (byte {exc.start + 1} of the line)"
                    yield number, None, [problem], True
                    continue
                if not text.strip():
                    continue
                try:
                    yield number, strict_json.loads(text), [], strict_json.shallow(text)
                except json.JSONDecodeError as exc:
                    yield number, None, [f"invalid JSON: {exc.msg} (column {exc.colno})"], True
                except strict_json.StrictJSONError as exc:
                    yield number, None, [str(exc)], True
    except (OSError, EOFError) as exc:
        raise DataFileError(source, f"cannot read: {exc}") from exc


def _lines(handle: IO[AnyStr]) -> Iterator[AnyStr | None]:
    """The lines of a file, each at most `MAX_LINE_BYTES` long; None for a longer line (which
    is skipped without being held in memory)."""
    limit = files.MAX_LINE_BYTES
    while line := handle.readline(limit + 1):
        if len(line) <= limit:
            yield line
            continue
        while line and line[-1:] not in ("\n", b"\n"):
            line = handle.readline(1 << 16)
        yield None


def _json_rows(source: str, compressed: bool, wrapper: list[str]) -> Iterator[_Row]:
    """The elements of a JSON array (the file is read whole, its elements parsed one at a time);
    a single object counts as one record, unless it wraps the records (`wrapped`). A bad
    element is reported by its index."""
    try:
        with open_text(source, compressed, "r") as handle:
            text = handle.read()
    except UnicodeDecodeError as exc:
        raise DataFileError(source, f"not UTF-8 text (byte {exc.start + 1})") from exc
    except (OSError, EOFError) as exc:
        raise DataFileError(source, f"cannot read: {exc}") from exc
    try:
        elements = strict_json.array_elements(text)
        for position, (item, problem, shallow) in enumerate(elements, start=1):
            if position == 1 and problem is None and text.lstrip("\ufeff \t\r\n")[:1] == "{":
                key, records, problem = wrapped(item)
                if key is not None:  # the one object wraps the records: read those
                    wrapper.append(key)
                    for place, record in enumerate(records, start=1):
                        yield place, record, [], shallow
                    return
            yield position, item, [problem] if problem else [], shallow
    except json.JSONDecodeError as exc:
        at = f"[{exc.element}]: " if isinstance(exc, strict_json.ElementError) else ""
        raise DataFileError(
            source, f"{at}not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from exc
    except strict_json.StrictJSONError as exc:
        raise DataFileError(source, str(exc)) from exc


def wrapped(value: Any) -> tuple[str | None, list[Any], str | None]:
    """For the one object of a .json file: (key, records) when it wraps its records under one of
    `WRAPPER_KEYS`; else the problem of an object that holds a list of objects under another key
    (it is a wrapper, not a conversation); else nothing (a record, or a trace export)."""
    if not isinstance(value, Mapping) or _RECORD_KEYS & value.keys() or is_trace(value):
        return None, [], None
    for key in WRAPPER_KEYS:
        if isinstance(value.get(key), list):
            return key, value[key], None
    for key, items in value.items():
        if isinstance(items, list) and items and all(isinstance(i, Mapping) for i in items):
            names = ", ".join(repr(k) for k in WRAPPER_KEYS[:-1]) + f" or {WRAPPER_KEYS[-1]!r}"
            return (
                None,
                [],
                (
                    f"this file is one JSON object whose {str(key)!r} holds a list of {len(items)} "
                    f"objects, not a conversation: name that list {names} to read its objects as "
                    "the records, or save the list alone as a JSON array"
                ),
            )
    return None, [], None


def _csv_rows(source: str, compressed: bool) -> Iterator[_Row]:
    """One record per CSV row (read row by row), numbered by the line where the row starts."""
    csv.field_size_limit(max(csv.field_size_limit(), 2**31 - 1))  # a cell may span lines
    try:
        with open_text(source, compressed, "r") as handle:
            reader = csv.reader(_csv_lines(source, handle))
            header: list[str] | None = None
            end = 0
            for cells in reader:
                start, end = end + 1, reader.line_num
                if not any(cells):
                    continue  # a blank line (or a row of empty cells)
                if header is None:
                    header = _header(source, cells)
                    continue
                yield start, *_csv_record(header, cells), False
    except csv.Error as exc:
        raise DataFileError(source, f"line {reader.line_num}: not valid CSV: {exc}") from exc
    except UnicodeDecodeError as exc:
        raise DataFileError(source, f"not UTF-8 text (byte {exc.start + 1})") from exc
    except (OSError, EOFError) as exc:
        raise DataFileError(source, f"cannot read: {exc}") from exc


def _csv_lines(source: str, handle: IO[str]) -> Iterator[str]:
    """The lines of a CSV file; a line over the limit stops reading (a row cannot be resynced)."""
    for number, line in enumerate(_lines(handle), start=1):
        if line is None:
            raise DataFileError(source, f"line {number}: {files.line_too_long()}")
        yield line


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
