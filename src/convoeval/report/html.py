"""The self-contained HTML report: run metadata, per-metric summary and histograms, and a
sortable table of conversations, each expandable to its transcript and metric details.

One file, inline CSS and JS, a Content-Security-Policy that allows no network and no script but
the report's own; data for the script sits in a JSON block with `<`, `>` and `&` escaped.
"""

from __future__ import annotations

import json
import os
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from convoeval.report.assets import CSS, JS, script_hash
from convoeval.report.parts import bin_of, bins_for, esc, histogram, metric_details, transcript
from convoeval.report.table import judge_label
from convoeval.runner.results import EvaluationResult

#: Conversations listed in the table at most (summaries and histograms cover every record).
MAX_CONVERSATIONS = 2000


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


def _summary(result: EvaluationResult) -> str:
    heads = ("metric", "mean", "std", "min", "max", "scored", "unscored", "failed", "pass rate")
    head = "".join(f'<th class="{"" if h == "metric" else "num"}">{h}</th>' for h in heads)
    rows = []
    for name, s in result.summary().items():
        if s["threshold"] is None:
            rate = "no threshold"
        elif s["pass_rate"] is None:
            rate = f"- (&ge; {s['threshold']:g})"
        else:
            rate = f"{100 * s['pass_rate']:.0f}% (&ge; {s['threshold']:g})"
        cells = [_fmt(s[k]) for k in ("mean", "std", "min", "max")]
        cells += [str(s[k]) for k in ("scored", "unscored", "failed")]
        nums = "".join(f'<td class="num">{c}</td>' for c in cells)
        rows.append(f"<tr><td>{esc(name)}</td>{nums}<td class='num'>{rate}</td></tr>")
    return f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(rows)}</tbody></table>"


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
        ("cost", f"${cost:.4f}" if cost is not None else f"unknown: {note}"),
    ]
    body = "".join(f"<dt>{esc(k)}</dt><dd>{esc(v)}</dd>" for k, v in items)
    return f'<dl class="meta">{body}</dl>'


def _score_cell(row: Mapping[str, Any], name: str, threshold: float | None) -> str:
    value = (row.get("scores") or {}).get(name)
    if name in (row.get("errors") or {}):
        return '<td class="num failed">failed</td>'
    if value is None:
        return '<td class="num unscored">n/a</td>'
    css = ""
    if threshold is not None:
        css = " score-good" if value >= threshold else " score-bad"
    return f'<td class="num{css}">{value:.3f}</td>'


def _conversation(row: Mapping[str, Any], names: list[str], thresholds: dict[str, Any]) -> str:
    index = int(row["index"])
    cells = [f'<td class="num">{index}</td>', f"<td>{esc(row.get('id') or '')}</td>"]
    cells += [_score_cell(row, n, thresholds.get(n)) for n in names]
    blocks = "".join(metric_details(n, row) for n in names)
    span = len(names) + 2
    return (
        f'<tbody data-index="{index}"><tr class="conv">{"".join(cells)}</tr>'
        f'<tr class="more"><td colspan="{span}"><details><summary>transcript and details'
        f"</summary>{transcript(row.get('sample'))}{blocks}</details></td></tr></tbody>"
    )


def render_report(result: EvaluationResult, max_conversations: int = MAX_CONVERSATIONS) -> str:
    """The whole report page as a string (two streaming passes over the results rows)."""
    names = result.metric_names
    summary = result.summary()
    thresholds = {n: summary[n]["threshold"] for n in names}
    ranges = {n: bins_for(summary[n]["min"], summary[n]["max"]) for n in names}
    counts = {n: [0] * ranges[n][2] for n in names}
    bodies: list[str] = []
    data_rows: list[dict[str, Any]] = []
    for row in result.rows():
        for name in names:
            value = (row.get("scores") or {}).get(name)
            if value is not None:
                start, stop, count = ranges[name]
                counts[name][bin_of(float(value), start, stop, count)] += 1
        if len(bodies) < max_conversations:
            bodies.append(_conversation(row, names, thresholds))
            data_rows.append({"index": row["index"], "id": row.get("id"), "scores": row["scores"]})
    hists = "".join(histogram(n, counts[n], ranges[n][0], ranges[n][1]) for n in names)
    shown = (
        f'<p class="note">Showing the first {len(bodies)} of {len(result)} conversations.</p>'
        if len(bodies) < len(result)
        else ""
    )
    heads = '<th class="num" data-sort="index">#</th><th data-sort="id">id</th>' + "".join(
        f'<th class="num" data-sort="{esc(n)}">{esc(n)}</th>' for n in names
    )
    data = {"metrics": names, "rows": data_rows}
    csp = (
        "default-src 'none'; style-src 'unsafe-inline'; img-src data:; "
        f"script-src {script_hash()}; base-uri 'none'; form-action 'none'"
    )
    title = f"convoeval report: {os.path.basename(str(result.meta.get('data') or ''))}"
    return (
        '<!DOCTYPE html>\n<html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{csp}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{CSS}</style></head><body>"
        f"<h1>{esc(title)}</h1>{_meta_block(result)}"
        f"<h2>Summary</h2>{_summary(result)}"
        f'<h2>Score distributions</h2><div class="hists">{hists}</div>'
        f"<h2>Conversations</h2>{shown}"
        '<p class="note">Click a column header to sort; click "transcript and details" to '
        "expand a conversation.</p>"
        f'<table id="conversations"><thead><tr>{heads}</tr></thead>{"".join(bodies)}</table>'
        f'<script type="application/json" id="convoeval-data">{safe_json(data)}</script>'
        f"<script>{JS}</script></body></html>\n"
    )


def write_report(
    results: EvaluationResult | str | os.PathLike[str],
    output: str | os.PathLike[str],
    *,
    max_conversations: int = MAX_CONVERSATIONS,
) -> Path:
    """Write the HTML report of a run (an `EvaluationResult` or a saved results file)."""
    result = (
        results if isinstance(results, EvaluationResult) else EvaluationResult.from_file(results)
    )
    target = Path(output)
    target.parent.mkdir(parents=True, exist_ok=True)
    target.write_text(render_report(result, max_conversations), encoding="utf-8")
    return target
