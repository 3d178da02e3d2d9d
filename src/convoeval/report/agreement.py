"""The agreement report (`convoeval agree`): the figures as a rich table for the terminal, and a
self-contained HTML page with the figures, confusion matrices and every disagreement with its
transcript (all data escaped through `report.parts`; no script, no network).
"""

from __future__ import annotations

import os
from pathlib import Path

from rich.table import Table

from convoeval._text import nth
from convoeval.report.assets import CSS
from convoeval.report.parts import esc, name, prose, table, transcript, value, visible
from convoeval.rows.files import scrub
from convoeval.stats.agree import AgreementReport, Disagreement, KindAgreement

#: Disagreements shown per metric and kind on the page (the table counts them all).
MAX_SHOWN = 200
COUNTS = ("labelled", "unlabelled", "unscored", "failed")
FIGURES = ("agreement", "kappa", "spearman", "pearson", "mae")


def figure_text(item: KindAgreement, figure: str, two_lines: bool = False) -> str:
    """A figure with its interval, `0.833 [0.400, 1.000]` (or `0.833` over `[0.40,1.00]` for
    narrow terminal columns); `-` when it does not apply."""
    number = getattr(item, figure)
    if number is None:
        return "-"
    bounds = item.intervals.get(figure)
    if not bounds:
        return f"{number:.3f}"
    if two_lines:
        return f"{number:.3f}\n[{bounds[0]:.2f},{bounds[1]:.2f}]"
    return f"{number:.3f} [{bounds[0]:.3f}, {bounds[1]:.3f}]"


def interval_note(report: AgreementReport) -> str:
    """How the intervals were made, said once under the table."""
    return (
        f"[brackets]: {report.level:.0%} percentile bootstrap intervals, {report.resamples} "
        f"resamples, seed {report.seed}; unlabelled, unscored and failed items are not in any "
        "figure"
    )


def agreement_table(report: AgreementReport) -> Table:
    """One row per metric and verdict kind: the counts apart, then each figure with its CI."""
    grid = Table(title=f"agreement with labels: {os.path.basename(report.results)}")
    grid.add_column("metric", no_wrap=True)
    grid.add_column("kind", no_wrap=True)
    for count in ("n", "no label", "unscored", "failed"):  # COUNTS, with short headers
        grid.add_column(count, justify="right")
    for figure in FIGURES:
        grid.add_column(figure, justify="right", min_width=11, no_wrap=True)
    for item in report.kinds:
        counts = [str(getattr(item, c)) for c in COUNTS]
        grid.add_row(
            item.metric,
            item.kind,
            *counts,
            *(figure_text(item, f, two_lines=True) for f in FIGURES),
        )
    return grid


def class_names(item: KindAgreement) -> list[str]:
    """The confusion matrix's classes as words: fail/pass (binary score), false/true, or values."""
    if item.scale == "binary":
        words = ("fail", "pass") if item.kind == "score" else ("false", "true")
        return [words[int(c)] for c in item.classes]
    return [f"{c:g}" for c in item.classes]


def _confusion(item: KindAgreement) -> str:
    """The confusion matrix of one kind: rows the labels, columns the judge."""
    if not item.confusion:
        return '<p class="note">Too many distinct values for a confusion matrix.</p>'
    names = class_names(item)
    heads = ["label \\ judge", *names]
    rows = [
        [name(names[i]), *(f'<span class="num">{c}</span>' for c in row)]
        for i, row in enumerate(item.confusion)
    ]
    cut = (
        f" (the judge passes at score >= {item.threshold:g})" if item.threshold is not None else ""
    )
    return f"<p>{esc(item.metric)} {esc(item.kind)}{esc(cut)}</p>{table(heads, rows)}"


def _disagreement(item: Disagreement) -> str:
    """One disagreement: what each side said, expandable to the reason and the transcript."""
    key = f" {name(item.key)}" if item.key is not None else ""
    head = (
        f"{name(item.id or f'#{nth(item.index)}')}{key}: label {value(item.label)}, judge "
        f"{value(item.judged)}"
    )
    reason = f"<p>judge's reason: {prose(item.reason)}</p>" if item.reason else ""
    return (
        f'<details class="dis"><summary>{head}</summary><p class="note">from '
        f"{name(item.where)}</p>{reason}{transcript(item.sample)}</details>"
    )


def _disagreements(item: KindAgreement) -> str:
    shown = item.disagreements[:MAX_SHOWN]
    more = len(item.disagreements) - len(shown)
    note = f'<p class="note">and {more} more not shown.</p>' if more > 0 else ""
    body = "".join(_disagreement(d) for d in shown) or '<p class="note">None.</p>'
    return f"<h3>{esc(item.metric)} {esc(item.kind)} ({len(item.disagreements)})</h3>{body}{note}"


def agreement_html(report: AgreementReport) -> str:
    """The whole page as a string, scrubbed of every judge key this process holds."""
    heads = ["metric", "kind", *COUNTS, *FIGURES]
    rows = [
        [
            name(item.metric),
            name(item.kind),
            *(f'<span class="num">{getattr(item, c)}</span>' for c in COUNTS),
            *(f'<span class="num">{esc(figure_text(item, f))}</span>' for f in FIGURES),
        ]
        for item in report.kinds
    ]
    title = f"convoeval agreement: {os.path.basename(report.results)}"
    meta = [("results", report.results), ("labels", report.labels or "metadata.labels")]
    if report.unmatched_labels:
        meta.append(("labels without a results row", str(report.unmatched_labels)))
    if report.unknown_metrics:
        meta.append(("labelled metrics not in the run", ", ".join(report.unknown_metrics)))
    dl = "".join(f"<dt>{esc(k)}</dt><dd>{name(v)}</dd>" for k, v in meta)
    csp = "default-src 'none'; style-src 'unsafe-inline'; base-uri 'none'; form-action 'none'"
    return scrub(
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{csp}">'
        f"<title>{esc(visible(title))}</title><style>{CSS}"
        ".dis { border-bottom: 1px solid var(--line); padding: 4px 0; } "
        ".dis > summary { cursor: pointer; }</style></head><body>"
        f'<h1>{name(title)}</h1><dl class="meta">{dl}</dl>'
        f'<h2>Figures</h2>{table(heads, rows)}<p class="note">{esc(interval_note(report))}</p>'
        f"<h2>Confusion matrices</h2>{''.join(_confusion(k) for k in report.kinds)}"
        f"<h2>Disagreements</h2>{''.join(_disagreements(k) for k in report.kinds)}"
        "</body></html>\n"
    )


def write_agreement_report(report: AgreementReport, output: str | os.PathLike[str]) -> Path:
    """Write the agreement page to `output` and return its path."""
    target = Path(output)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(agreement_html(report), encoding="utf-8")
    return target
