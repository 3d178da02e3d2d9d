"""The batch runner: `evaluate` / `aevaluate`, streaming results with resume, `EvaluationResult`.

Results rows (one JSON line per input record, in input order) and the sidecar
`<results>.meta.json` (what a results file was made from, so a run can resume) are typed in
`convoeval.runner.rows`. Everything else here is private (underscore modules).
"""

from convoeval.runner._evaluate import RunOptions, aevaluate, evaluate
from convoeval.runner._inputs import NothingToScoreError, RequiredFieldsError
from convoeval.runner._plan import OfflineJudgeError, UsageError
from convoeval.runner._reach import JudgeUnreachableError
from convoeval.runner._resume import meta_path, read_meta
from convoeval.judges.pricing import PRICES, estimate_cost
from convoeval.runner.progress import NoProgress, PlainProgress, Progress, make_progress
from convoeval.runner.results import EvaluationResult, MetricStats
from convoeval.runner.rows import (
    JudgeDescription,
    MetricRecord,
    ResultRow,
    ResultsFileError,
    RunMeta,
)

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
