"""The batch runner: `evaluate` / `aevaluate`, streaming results with resume, `EvaluationResult`.

Results rows (one JSON line per input record, in input order) are described in DESIGN §1; the
sidecar `<results>.meta.json` records what a results file was made from, so a run can resume.
"""

from convoeval.runner.evaluate import aevaluate, build_row, evaluate
from convoeval.runner.inputs import IN_MEMORY, Item, RequiredFieldsError, Source
from convoeval.runner.plan import OfflineJudgeError, build_metrics, select_metrics
from convoeval.runner.pricing import PRICES, estimate_cost
from convoeval.runner.progress import NoProgress, PlainProgress, Progress, make_progress
from convoeval.runner.results import Aggregates, EvaluationResult, MetricStats
from convoeval.runner.resume import ResultsFileError, meta_path, read_meta, read_rows

__all__ = [
    "IN_MEMORY",
    "PRICES",
    "Aggregates",
    "EvaluationResult",
    "Item",
    "MetricStats",
    "NoProgress",
    "OfflineJudgeError",
    "PlainProgress",
    "Progress",
    "RequiredFieldsError",
    "ResultsFileError",
    "Source",
    "aevaluate",
    "build_metrics",
    "build_row",
    "estimate_cost",
    "evaluate",
    "make_progress",
    "meta_path",
    "read_meta",
    "read_rows",
    "select_metrics",
]
