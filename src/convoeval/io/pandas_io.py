"""Samples to and from a pandas DataFrame, with the column convention of `io.tabular`.

pandas is optional (`pip install "convoeval[pandas]"`) and imported only when these are called.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from convoeval.io.errors import DataError
from convoeval.io.records import Record, check_format, convert, ensure_sample
from convoeval.io.tabular import COLUMNS, row_to_record, sample_to_row
from convoeval.schema.sample import MultiTurnSample

_MISSING = 'pandas support needs pandas: pip install "convoeval[pandas]"'
#: The `source` of the Records (and errors) of a DataFrame; the line is the 1-based row.
SOURCE = "DataFrame"


def _pandas() -> Any:
    try:
        import pandas
    except ImportError as exc:
        raise ImportError(_MISSING) from exc
    return pandas


def to_pandas(samples: Iterable[MultiTurnSample]) -> Any:
    """A DataFrame with one row per sample: JSON text for nested fields, None when absent."""
    pandas = _pandas()
    rows = [sample_to_row(ensure_sample(sample, n)) for n, sample in enumerate(samples)]
    return pandas.DataFrame(rows, columns=list(COLUMNS), dtype=object)


def from_pandas(df: Any, *, format: str = "auto") -> Iterator[MultiTurnSample]:
    """Yield the sample of each row; raises `DataError` (`DataFrame:row: ...`) at a bad row.

    Cells may be JSON text (as `to_pandas` writes) or native lists and dicts; None/NaN is absent.
    """
    check_format(format)
    pandas = _pandas()
    columns = [str(column) for column in df.columns]
    for position, values in enumerate(zip(*(df[c] for c in df.columns), strict=True), start=1):
        row = {column: _plain(pandas, value) for column, value in zip(columns, values, strict=True)}
        record, problems = row_to_record(row)
        sample, errors, layout = (None, problems, None) if problems else convert(record, format)
        if sample is None:
            raise DataError(Record(SOURCE, position, None, errors, layout).problems())
        yield sample


def _plain(pandas: Any, value: Any) -> Any:
    """A cell as a plain Python value: missing markers become None, arrays become lists."""
    if hasattr(value, "tolist") and not isinstance(value, str | int | float | bool):
        value = value.tolist()
    if isinstance(value, str | list | dict | tuple):
        return value
    return None if pandas.isna(value) else value
