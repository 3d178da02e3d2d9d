"""Write samples to a data file chosen by suffix, streaming (one sample in memory at a time).

JSONL and JSON hold any layout (Ragas by default: `MultiTurnSample.to_dict()`); CSV and Parquet
hold the Ragas column convention of `io.tabular`. Every format reads back equal samples.
"""

from __future__ import annotations

import csv
import json
import os
from collections.abc import Iterable
from typing import IO

from convoeval.io.errors import DataFileError, OptionError
from convoeval.io.files import file_kind, open_text
from convoeval.io.parquet_io import write_parquet
from convoeval.io.records import check_layout, ensure_sample, sample_to_record
from convoeval.io.tabular import COLUMNS, sample_to_row
from convoeval.schema.sample import MultiTurnSample


def write_samples(
    samples: Iterable[MultiTurnSample], path: str | os.PathLike[str], *, layout: str = "ragas"
) -> int:
    """Write samples to `path` (.jsonl/.ndjson, .json, .csv, .parquet; .gz for the first three).

    `layout` ("ragas", "openai" or "deepeval") applies to JSONL and JSON; CSV and Parquet use
    the Ragas columns. Returns the number of samples written.
    """
    check_layout(layout)
    target = os.fspath(path)
    kind, compressed = file_kind(target)
    if kind in ("csv", "parquet") and layout != "ragas":
        raise OptionError(
            f"{kind} files hold the Ragas layout (a JSON user_input column); "
            f"write layout={layout!r} as .jsonl or .json"
        )
    try:
        if kind == "parquet":
            return write_parquet(samples, target)
        with open_text(target, compressed, "w") as handle:
            if kind == "jsonl":
                return _write_jsonl(samples, handle, layout)
            if kind == "json":
                return _write_json(samples, handle, layout)
            return _write_csv(samples, handle)
    except OSError as exc:
        raise DataFileError(target, f"cannot write: {exc.strerror or exc}") from exc


def _dumps(sample: MultiTurnSample, layout: str) -> str:
    return json.dumps(sample_to_record(sample, layout), ensure_ascii=False)


def _write_jsonl(samples: Iterable[MultiTurnSample], handle: IO[str], layout: str) -> int:
    count = 0
    for sample in samples:
        handle.write(_dumps(ensure_sample(sample, count), layout) + "\n")
        count += 1
    return count


def _write_json(samples: Iterable[MultiTurnSample], handle: IO[str], layout: str) -> int:
    """A JSON array, one record per line, written as the samples come."""
    count = 0
    for sample in samples:
        handle.write(
            ("[\n" if count == 0 else ",\n") + _dumps(ensure_sample(sample, count), layout)
        )
        count += 1
    handle.write("[]\n" if count == 0 else "\n]\n")
    return count


def _write_csv(samples: Iterable[MultiTurnSample], handle: IO[str]) -> int:
    """A header of every sample field, then one row per sample (empty cell: absent field)."""
    writer = csv.writer(handle, lineterminator="\n")
    writer.writerow(COLUMNS)
    count = 0
    for sample in samples:
        row = sample_to_row(ensure_sample(sample, count))
        writer.writerow(["" if row[column] is None else row[column] for column in COLUMNS])
        count += 1
    return count
