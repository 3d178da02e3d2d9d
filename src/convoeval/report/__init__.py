"""Reports of a run: the end-of-run summary table (rich), the self-contained HTML report, and the
notebook view, which this package registers as `EvaluationResult.html_view` when imported."""

from convoeval.report.html import render_report, safe_json, write_report
from convoeval.report.notebook import result_html
from convoeval.report.table import judge_label, summary_table, usage_text
from convoeval.runner.results import EvaluationResult

EvaluationResult.html_view = result_html

__all__ = [
    "judge_label",
    "render_report",
    "safe_json",
    "summary_table",
    "usage_text",
    "write_report",
]
