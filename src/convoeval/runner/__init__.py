"""The batch runner: `evaluate` / `aevaluate`, streaming results with resume, `EvaluationResult`.

Results rows (one JSON line per input record, in input order) and the sidecar
`<results>.meta.json` (what a results file was made from, so a run can resume) are typed in
`convoeval.rows.row`. Everything else here is private (underscore modules).
"""

from convoeval.errors import UsageError
from convoeval.judges.pricing import PRICES, estimate_cost
from convoeval.rows.files import meta_path, read_meta
from convoeval.rows.row import (
    JudgeDescription,
    MetricRecord,
    ResultRow,
    ResultsFileError,
    RunMeta,
)
from convoeval.runner._evaluate import RunOptions, aevaluate, evaluate
from convoeval.runner._inputs import NothingToScoreError, RequiredFieldsError
from convoeval.runner._plan import OfflineJudgeError
from convoeval.runner._reach import JudgeUnreachableError
from convoeval.runner.progress import NoProgress, PlainProgress, Progress, make_progress
from convoeval.runner.results import EvaluationResult, MetricStats

__all__ = [
    "PRICES",
    "EvaluationResult",
    "JudgeDescription",
    "JudgeUnreachableError",
    "MetricRecord",
    "MetricStats",
    "NoProgress",
    "NothingToScoreError",
    "OfflineJudgeError",
    "PlainProgress",
    "Progress",
    "RequiredFieldsError",
    "ResultRow",
    "ResultsFileError",
    "RunMeta",
    "RunOptions",
    "UsageError",
    "aevaluate",
    "estimate_cost",
    "evaluate",
    "make_progress",
    "meta_path",
    "read_meta",
]
