"""`EvaluationResult` in a notebook: the summary table and the first rows' scores as HTML.

Jupyter calls `EvaluationResult._repr_html_`, which delegates here. No script, every value
escaped and bidi-isolated, like the report.
"""

from __future__ import annotations

from itertools import islice

from convoeval._text import plural
from convoeval.report.html import score_cell, summary_html
from convoeval.report.parts import esc, name
from convoeval.rows.files import scrub
from convoeval.runner.results import EvaluationResult

#: Rows shown under the summary (the rest: `to_pandas()`, or the HTML report).
ROWS_SHOWN = 10


def result_html(result: EvaluationResult, rows: int = ROWS_SHOWN) -> str:
    """The notebook view of a run: what ran, per-metric summary, then the first `rows` rows
    (scrubbed of every judge key this process holds)."""
    names = result.metric_names
    summary = result.summary()
    head = "".join(f"<th>{h}</th>" for h in ("#", "id")) + "".join(
        f"<th>{name(n)}</th>" for n in names
    )
    body = []
    for row in islice(result.rows(), rows):
        cells = [esc(row["index"]), name(row.get("id") or "")]
        cells += [score_cell(row, n, summary[n]["threshold"]) for n in names]
        body.append("<tr>" + "".join(f"<td>{c}</td>" for c in cells) + "</tr>")
    more = len(result) - len(body)
    tail = (
        f"<p>{more} more {plural(more, 'row')}: <code>result.to_pandas()</code> or "
        "<code>convoeval report</code> for all of them.</p>"
        if more > 0
        else ""
    )
    return scrub(
        f'<div class="convoeval-result"><p><strong>convoeval</strong>: {len(result)} '
        f"{plural(len(result), 'record')}, "
        f"results in <code>{name(result.path)}</code></p>{summary_html(result)}"
        f"<table><thead><tr>{head}</tr></thead><tbody>{''.join(body)}</tbody></table>{tail}</div>"
    )
