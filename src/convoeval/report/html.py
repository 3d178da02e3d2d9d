"""The self-contained HTML report: run metadata, per-metric summary and histograms, and the
conversations, one row each that expands in place to its transcript, metadata and metric details.

One file, inline CSS and JS, a Content-Security-Policy that allows no network and no script but
the report's own; data for the script sits in a JSON block with `<`, `>` and `&` escaped. The
page works without its script (every row listed, expandable); the script adds sorting, search,
filters and paging.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from itertools import islice
from pathlib import Path
from typing import Any

from convoeval._text import nth
from convoeval.report.assets import CSP, CSS, JS
from convoeval.report.details import metric_details
from convoeval.report.parts import (
    SharedTexts,
    bin_of,
    bins_for,
    esc,
    histogram,
    name,
    transcript,
    visible,
)
from convoeval.report.table import interval, judge_label
from convoeval.report.trials import trials_html
from convoeval.rows.files import scrub
from convoeval.runner.results import EvaluationResult
from convoeval.stats.panels import agreement_lines
from convoeval.stats.trials import TrialsSummary

#: Conversations listed at most (summaries and histograms cover every record).
MAX_CONVERSATIONS = 2000
#: A score column's least width, and the room a header needs beside its name (the sort
#: arrow), in `ch` (the width of a digit: a name's letters are narrower on average).
_SCORE_CH = 9
_SORT_CH = 4


def safe_json(value: Any) -> str:
    """JSON for a `<script type="application/json">` block: `<`, `>`, `&` as \\u escapes."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    return (
        text.replace("&", "\\u0026")
        .replace("<", "\\u003c")
        .replace(">", "\\u003e")
        .replace("\u2028", "\\u2028")
        .replace("\u2029", "\\u2029")
    )


def _fmt(value: float | None) -> str:
    return "-" if value is None else f"{value:.3f}"


def summary_html(result: EvaluationResult) -> str:
    """The per-metric summary table (also the notebook view's head)."""
    repeated = result.repeat > 1
    heads = ("metric", "mean", *(["95% CI"] if repeated else []), "std", "min", "max")
    heads += ("scored", "unscored", "failed", "pass rate")
    head = "".join(f'<th class="{"" if h == "metric" else "num"}">{h}</th>' for h in heads)
    rows = []
    for metric, s in result.summary().items():
        if s["threshold"] is None:
            rate = "no threshold"
        elif s["pass_rate"] is None:
            rate = f"- (&ge; {s['threshold']:g})"
        else:
            rate = f"{100 * s['pass_rate']:.0f}% (&ge; {s['threshold']:g})"
        cells = [_fmt(s["mean"]), *([interval(s)] if repeated else [])]
        cells += [_fmt(s[k]) for k in ("std", "min", "max")]
        cells += [str(s[k]) for k in ("scored", "unscored", "failed")]
        nums = "".join(f'<td class="num">{c}</td>' for c in cells)
        rows.append(f"<tr><td>{name(metric)}</td>{nums}<td class='num'>{rate}</td></tr>")
    table = f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"
    if repeated:
        table += (
            f'<p class="note">Every record scored {result.repeat} times: a score is the mean '
            "over its repeats (its min-max below it); the interval is a bootstrap 95% interval "
            "of the mean over the records.</p>"
        )
    return table


def _panel_html(result: EvaluationResult) -> str:
    """How far a judge panel's members agree, one line per metric (nothing without a panel)."""
    lines = agreement_lines(result.panel_agreement())
    if not lines:
        return ""
    return "<h3>Judge panel</h3>" + "".join(f'<p class="note">{esc(line)}</p>' for line in lines)


def _meta_block(result: EvaluationResult) -> str:
    meta = result.meta
    cost, note = result.cost()
    items = [
        ("data", meta.get("data")),
        ("records", len(result)),
        ("judge", judge_label(meta.get("judge"))),
        ("started", meta.get("started")),
        ("completed", meta.get("completed") or "not finished"),
        ("convoeval", meta.get("convoeval_version")),
        ("requests", f"{result.usage.requests} ({result.usage.cached} from cache)"),
        ("cost", f"${cost:.4f} ({note})" if cost is not None else f"unknown: {note}"),
    ]
    body = "".join(f"<dt>{esc(k)}</dt><dd>{name(v)}</dd>" for k, v in items)
    return f'<dl class="meta">{body}</dl>'


def score_cell(row: Mapping[str, Any], metric: str, threshold: float | None) -> str:
    """One score as a cell: the value coloured by the threshold, or failed / n/a."""
    value = (row.get("scores") or {}).get(metric)
    if metric in (row.get("errors") or {}):
        return '<span class="num failed">failed</span>'
    if value is None:
        return '<span class="num unscored">n/a</span>'
    css = ""
    if threshold is not None:
        css = " score-good" if value >= threshold else " score-bad"
    entry = (row.get("repeats") or {}).get(metric)
    if entry and entry.get("min") is not None:  # a repeated run: the record's spread
        span = f'<br><small class="spread">{entry["min"]:.3f}-{entry["max"]:.3f}</small>'
        return f'<span class="num{css}">{value:.3f}{span}</span>'
    return f'<span class="num{css}">{value:.3f}</span>'


def _conversation(
    row: Mapping[str, Any], names: list[str], thresholds: dict[str, Any], shared: SharedTexts
) -> str:
    index = int(row["index"])
    cells = [
        f'<span class="num">{nth(index)}</span>',
        f'<span class="id">{name(row.get("id") or "")}</span>',
    ]
    cells += [score_cell(row, n, thresholds.get(n)) for n in names]
    where = f'<p class="note">from {name(row["where"])}</p>' if row.get("where") else ""
    blocks = "".join(metric_details(n, row) for n in names)
    return (
        f'<details class="conv" data-index="{index}"><summary>{"".join(cells)}</summary>'
        f'<div class="body">{where}{transcript(row.get("sample"), shared)}{blocks}</div></details>'
    )


def _columns(names: list[str]) -> tuple[str, str]:
    """The conversations list's grid columns (#, id, one per metric wide enough for its whole
    name on one line) and the width the rows need: past the window's, the list scrolls inside
    its frame (`.convs`), never the page."""
    widths = [max(_SCORE_CH, len(visible(n)) + _SORT_CH) for n in names]
    columns = "3.5em minmax(10em, 1fr)" + "".join(f" {w}ch" for w in widths)
    gaps = 8 * (len(names) + 1) + 16  # the grid's gaps and its row padding, in px
    return columns, f"calc(13.5em + {sum(widths)}ch + {gaps}px)"


def _controls(names: list[str]) -> str:
    options = "".join(f'<option value="{esc(n)}">{esc(visible(n))}</option>' for n in names)
    return (
        '<div class="controls" id="controls" hidden>'
        '<input type="search" id="f-text" placeholder="search id or text" aria-label="search">'
        f'<select id="f-metric" aria-label="metric"><option value="">any metric</option>{options}'
        '</select><input type="number" id="f-min" step="any" placeholder="min" aria-label="min">'
        '<input type="number" id="f-max" step="any" placeholder="max" aria-label="max">'
        '<select id="f-status" aria-label="status"><option value="">any status</option>'
        '<option value="failed">failed</option><option value="unscored">unscored</option>'
        '<option value="either">failed or unscored</option></select>'
        '<button type="button" id="f-prev">&lsaquo; previous</button><span id="f-page"></span>'
        '<button type="button" id="f-next">next &rsaquo;</button>'
        '<span id="f-count" class="note" aria-live="polite"></span></div>'
    )


def _shared_texts(result: EvaluationResult, listed: int) -> SharedTexts:
    """A first pass over the listed rows: which long message texts occur more than once."""
    return SharedTexts.of(row.get("sample") for row in islice(result.rows(), listed))


def render_report(
    result: EvaluationResult,
    max_conversations: int = MAX_CONVERSATIONS,
    trials: TrialsSummary | None = None,
) -> str:
    """The whole report page as a string (two streaming passes over the results rows: texts
    shared by several conversations, then the page); `trials` adds pass^k / pass@k. The page
    is scrubbed of every judge key this process holds, whatever the results file holds."""
    names = result.metric_names
    summary = result.summary()
    thresholds = {n: summary[n]["threshold"] for n in names}
    ranges = {n: bins_for(summary[n]["min"], summary[n]["max"]) for n in names}
    counts = {n: [0] * ranges[n][2] for n in names}
    shared = _shared_texts(result, max_conversations)
    bodies: list[str] = []
    data_rows: list[dict[str, Any]] = []
    for row in result.rows():
        scores = row.get("scores") or {}
        for metric in names:
            score = scores.get(metric)
            if score is not None:
                start, stop, count = ranges[metric]
                counts[metric][bin_of(float(score), start, stop, count)] += 1
        if len(bodies) < max_conversations:
            bodies.append(_conversation(row, names, thresholds, shared))
            failed = sorted(row.get("errors") or {})
            data_rows.append(
                {"index": row["index"], "id": row.get("id"), "scores": scores, "failed": failed}
            )
    hists = "".join(histogram(n, counts[n], ranges[n][0], ranges[n][1]) for n in names)
    shown = (
        f'<p class="note">The file lists the first {len(bodies)} of {len(result)} conversations '
        "(the summary covers all).</p>"
        if len(bodies) < len(result)
        else ""
    )
    heads = '<span class="num" data-sort="index">#</span><span data-sort="id">id</span>' + "".join(
        f'<span class="num" data-sort="{esc(n)}">{name(n)}</span>' for n in names
    )
    columns, least = _columns(names)
    data = {"metrics": names, "rows": data_rows}
    title = f"convoeval report: {os.path.basename(str(result.meta.get('data') or ''))}"
    return scrub(
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(visible(title))}</title><style>{CSS}"
        f".conv > summary, .conv-head {{ grid-template-columns: {columns}; }}"
        f".conv, .conv-head {{ min-width: {least}; }}</style></head><body>"
        f"<h1>{name(title)}</h1>{_meta_block(result)}"
        f"<h2>Summary</h2>{summary_html(result)}{_panel_html(result)}{trials_html(trials)}"
        f'<h2>Score distributions</h2><div class="hists">{hists}</div>'
        f"<h2>Conversations</h2>{shown}"
        '<p class="note">Click a row to expand its transcript and details; click a column '
        "header to sort.</p>"
        f'{_controls(names)}<div id="conversations" class="convs">'
        f'<div class="conv-head">{heads}</div>{"".join(bodies)}</div>{shared.section()}'
        f'<script type="application/json" id="convoeval-data">{safe_json(data)}</script>'
        f"<script>{JS}</script></body></html>\n"
    )


def write_report(
    results: EvaluationResult | str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    max_conversations: int = MAX_CONVERSATIONS,
    trials: TrialsSummary | None = None,
) -> Path:
    """Write the HTML report of a run (an `EvaluationResult` or a saved results file)."""
    result = (
        results if isinstance(results, EvaluationResult) else EvaluationResult.from_file(results)
    )
    target = Path(output)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(render_report(result, max_conversations, trials), encoding="utf-8")
    return target
