"""Parquet reading (by record batches) and writing (string columns, JSON for nested values).

pyarrow is optional (`pip install "convoeval[parquet]"`); it is imported only when a Parquet file
is read or written. Written files use one string column per `MultiTurnSample` field, so rows with
different fields and arbitrarily nested tool arguments survive exactly.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from convoeval.io.errors import DataFileError
from convoeval.io.records import ensure_sample
from convoeval.io.tabular import COLUMNS, row_to_record, sample_to_row
from convoeval.schema.sample import MultiTurnSample

_BATCH = 256  # rows per record batch: bounded memory even for long conversations
_MISSING = 'Parquet support needs pyarrow: pip install "convoeval[parquet]"'


def _pyarrow(path: str) -> tuple[Any, Any]:
    """(pyarrow, pyarrow.parquet), or a clear error naming the extra to install."""
    try:
        import pyarrow
        import pyarrow.parquet
    except ImportError as exc:
        raise DataFileError(path, _MISSING) from exc
    return pyarrow, pyarrow.parquet


def parquet_rows(source: str) -> Iterator[tuple[int, Any, list[str]]]:
    """(1-based row, record, problems) for each row, read one record batch at a time."""
    _, parquet = _pyarrow(source)
    try:
        handle = parquet.ParquetFile(source)
    except (OSError, ValueError) as exc:
        raise DataFileError(source, f"not a readable Parquet file: {exc}") from exc
    row = 0
    with handle:
        for batch in handle.iter_batches(batch_size=_BATCH):
            for item in batch.to_pylist():
                row += 1
                record, problems = row_to_record(item)
                yield row, record, problems


def write_parquet(samples: Iterable[MultiTurnSample], path: str) -> int:
    """Write samples as Parquet, one batch of rows at a time; returns the count written."""
    pyarrow, parquet = _pyarrow(path)
    schema = pyarrow.schema([(column, pyarrow.string()) for column in COLUMNS])
    count = 0
    batch: list[dict[str, str | None]] = []
    with parquet.ParquetWriter(path, schema) as writer:
        for sample in samples:
            batch.append(sample_to_row(ensure_sample(sample, count)))
            count += 1
            if len(batch) == _BATCH:
                writer.write_table(pyarrow.Table.from_pylist(batch, schema=schema))
                batch = []
        if batch or count == 0:
            writer.write_table(pyarrow.Table.from_pylist(batch, schema=schema))
    return count
