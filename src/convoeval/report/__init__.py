"""Reports of a run: the end-of-run summary table (rich) and the self-contained HTML report."""

from convoeval.report.html import render_report, safe_json, write_report
from convoeval.report.table import judge_label, summary_table, usage_text

__all__ = [
    "judge_label",
    "render_report",
    "safe_json",
    "summary_table",
    "usage_text",
    "write_report",
]
