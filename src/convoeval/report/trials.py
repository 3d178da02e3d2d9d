"""The report's "Repeated trials" section: pass^k and pass@k by k (see `runner.trials`)."""

from __future__ import annotations

from convoeval.report.parts import esc, table, text
from convoeval.stats.trials import TrialsSummary


def trials_html(summary: TrialsSummary | None) -> str:
    """The section, or nothing when no trials were asked for."""
    if summary is None:
        return ""
    counted = sum(t.trials for t in summary.tasks)
    skipped = f", {summary.skipped} records skipped" if summary.skipped else ""
    note = (
        f"{len(summary.tasks)} tasks by {summary.task_field}, {counted} trials; success = "
        f"{summary.success}{skipped}. pass^k: all k trials of a task succeed; pass@k: at least "
        "one does (unbiased estimates from the trials, mean over tasks)."
    )
    rows = [
        [esc(k), f"{summary.pass_hat_k[k]:.4f}", f"{summary.pass_at_k[k]:.4f}"]
        for k in summary.pass_hat_k
    ]
    return (
        f'<h2>Repeated trials</h2><p class="note">{text(note)}</p>'
        f"{table(['k', 'pass^k', 'pass@k'], rows, 'trials')}"
    )
