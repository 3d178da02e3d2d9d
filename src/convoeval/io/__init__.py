"""Reading and writing conversation datasets: JSONL, JSON arrays, CSV, Parquet and pandas.

Records may be in the Ragas, OpenAI chat or DeepEval layout (detected per record), or in another
layout read with `messages_field=` and `fields=` (dotted paths, see `io.remap`). Reading yields
`Record`s that carry their problems as `file:line: path: what is wrong`, so a validator can report
every bad record; `read_samples` is the strict variant that stops at the first bad one. Every
reader holds records to strict JSON (`io.strict_json`: nesting at most 64 deep, finite numbers,
no duplicate keys) and refuses files that are not regular files.
"""

from convoeval.io.errors import DataError, DataFileError
from convoeval.io.pandas_io import from_pandas, to_pandas
from convoeval.io.readers import read_records, read_samples
from convoeval.io.records import Record, record_to_sample, sample_to_record
from convoeval.io.writers import write_samples

__all__ = [
    "DataError",
    "DataFileError",
    "Record",
    "from_pandas",
    "read_records",
    "read_samples",
    "record_to_sample",
    "sample_to_record",
    "to_pandas",
    "write_samples",
]
