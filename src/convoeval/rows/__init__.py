"""Results rows: the shape of one row and of the run's sidecar (`row.py`), and reading a results
file back (`files.py`). Below the runner and the statistics, which both read rows."""

from convoeval.rows.files import iter_rows, meta_path, read_meta, read_rows
from convoeval.rows.row import ResultRow, ResultsFileError, RunMeta

__all__ = [
    "ResultRow",
    "ResultsFileError",
    "RunMeta",
    "iter_rows",
    "meta_path",
    "read_meta",
    "read_rows",
]
