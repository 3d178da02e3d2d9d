"""The comparison of two runs (`convoeval compare`) as a rich table for the terminal and as a
self-contained HTML diff page: the per-metric figures, what did not pair, and the most regressed
conversations with BASE's and NEW's verdict details side by side above their transcripts.

The page has no script and the report's Content-Security-Policy; every piece of data goes
through `report.parts` (escaped, bidi-isolated), and a record's details and transcript are
rendered by the same functions as the run report's.
"""

from __future__ import annotations

import os
from collections.abc import Sequence
from pathlib import Path

from rich.table import Table
from rich.text import Text

from convoeval.report.assets import CSP, CSS
from convoeval.report.details import metric_details
from convoeval.report.html import score_cell
from convoeval.report.parts import SharedTexts, esc, name, prose, table, transcript, visible
from convoeval.stats.compare import ChangedRecord, Comparison, MetricComparison
from convoeval.stats.compare_result import difference_text, number, pass_text
from convoeval.stats.pairing import RecordRef

HEADS = (
    "metric",
    "compared",
    "BASE",
    "NEW",
    "NEW - BASE [95% CI]",
    "better",
    "worse",
    "same",
    "pass rate",
    "McNemar p",
    "failed B/N",
    "unscored B/N",
)

_EXTRA_CSS = """
.sides { display: grid; grid-template-columns: minmax(0, 1fr) minmax(0, 1fr); gap: 16px; }
.side h4.run { margin: 8px 0 4px; font-size: 14px; }
.pair { border-bottom: 1px solid var(--line); padding: 4px 0; }
.pair > summary { cursor: pointer; }
.warn { color: var(--warn); }
"""


def _cells(item: MetricComparison) -> list[str]:
    """One metric's figures as plain text, in `HEADS` order."""
    return [
        item.metric,
        str(item.compared),
        number(item.base_mean),
        number(item.new_mean),
        difference_text(item),
        str(item.improved),
        str(item.regressed),
        str(item.unchanged),
        pass_text(item),
        number(item.mcnemar_p, 3) if item.mcnemar_p is not None else "-",
        f"{item.base_failed}/{item.new_failed}",
        f"{item.base_unscored}/{item.new_unscored}",
    ]


def comparison_table(comparison: Comparison) -> Table:
    """The per-metric figures as a rich table (cells are plain text, never markup)."""
    grid = Table(title=f"convoeval compare: {comparison.paired} paired records")
    for i, head in enumerate(HEADS):
        grid.add_column(head, justify="left" if i == 0 else "right", no_wrap=i in (0, 4, 8))
    for item in comparison.metrics:
        grid.add_row(*(Text(cell) for cell in _cells(item)))
    return grid


def method_note(comparison: Comparison) -> str:
    """How the figures were made, said once under the table."""
    resamples, seed, level = comparison.bootstrap
    return (
        f"Over the pairs scored in both runs. [brackets]: {level:.0%} percentile bootstrap "
        f"interval of the mean difference ({resamples} resamples of the pairs, seed {seed}); "
        "pass rate: BASE -> NEW at each run's threshold; McNemar p: exact test of the pairs "
        "that pass in one run only; better / worse / same: pairs whose score rose, fell or "
        "stayed; failed, unscored B/N: pairs left out, by run (docs/compare.md)."
    )


def _only(side: str, refs: Sequence[RecordRef]) -> str:
    if not refs:
        return ""
    rows = [[name(r.label), name(r.where)] for r in refs]
    return f"<h3>Only in {esc(side)} ({len(refs)})</h3>" + table(("record", "from"), rows)


def _side(run: str, record: ChangedRecord, shared: SharedTexts, base: bool) -> str:
    row = record.base_row if base else record.new_row
    ref = record.base if base else record.new
    return (
        f'<div class="side {esc(run.lower())}"><h4 class="run">{esc(run)}</h4>'
        f'<p class="note">from {name(ref.where)}</p>{metric_details(record.metric, row)}'
        f"{transcript(row.get('sample'), shared)}</div>"
    )


def _changed(record: ChangedRecord, threshold: float | None, shared: SharedTexts) -> str:
    """One regressed conversation: both scores in the line, both sides when opened."""
    head = (
        f"{name(record.label)}: BASE {score_cell(record.base_row, record.metric, threshold)} "
        f"&rarr; NEW {score_cell(record.new_row, record.metric, threshold)} "
        f'<span class="note">({esc(f"{record.change:+.3f}")})</span>'
    )
    sides = _side("BASE", record, shared, True) + _side("NEW", record, shared, False)
    return (
        f'<details class="pair"><summary>{head}</summary><div class="sides">{sides}</div></details>'
    )


def _regressions(item: MetricComparison, shared: SharedTexts) -> str:
    if not item.regressed_most:
        return ""
    more = item.regressed - len(item.regressed_most)
    note = f'<p class="note">and {more} more regressed.</p>' if more > 0 else ""
    body = "".join(_changed(r, item.base_threshold, shared) for r in item.regressed_most)
    return f"<h3>{name(item.metric)} ({item.regressed} regressed)</h3>{body}{note}"


def comparison_html(comparison: Comparison) -> str:
    """The whole diff page as a string."""
    rows = [
        [name(cells[0]), *(f'<span class="num">{esc(c)}</span>' for c in cells[1:])]
        for cells in (_cells(item) for item in comparison.metrics)
    ]
    meta = [("BASE", comparison.base), ("NEW", comparison.new)]
    dl = "".join(f"<dt>{esc(k)}</dt><dd>{name(v)}</dd>" for k, v in meta)
    notes = "".join(
        f'<p class="note">{prose(line)}</p>' for line in comparison.pairing_lines(listed=False)
    )
    warnings = "".join(f'<p class="warn">warning: {prose(w)}</p>' for w in comparison.warnings)
    records = [r for item in comparison.metrics for r in item.regressed_most]
    shared = SharedTexts.of(s for r in records for s in (r.base_row.get("sample"),
                                                          r.new_row.get("sample")))  # fmt: skip
    regressed = "".join(_regressions(item, shared) for item in comparison.metrics)
    title = (
        f"convoeval compare: {os.path.basename(comparison.base)} -> "
        f"{os.path.basename(comparison.new)}"
    )
    regressed = regressed or '<p class="note">None: no record scored lower in NEW.</p>'
    alone = _only("BASE", comparison.only_base) + _only("NEW", comparison.only_new)
    alone = alone or '<p class="note">None: every record paired.</p>'
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(visible(title))}</title><style>{CSS}{_EXTRA_CSS}</style></head><body>"
        f'<h1>{name(title)}</h1><dl class="meta">{dl}</dl>{notes}{warnings}'
        f'<h2>Metrics</h2>{table(HEADS, rows)}<p class="note">{esc(method_note(comparison))}</p>'
        f"<h2>Most regressed conversations</h2>{regressed}"
        f"<h2>Records in one run only</h2>{alone}{shared.section()}</body></html>\n"
    )


def write_comparison_report(comparison: Comparison, output: str | os.PathLike[str]) -> Path:
    """Write the diff page to `output` and return its path."""
    target = Path(output)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(comparison_html(comparison), encoding="utf-8")
    return target
