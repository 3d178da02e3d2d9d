"""HTML fragments of the report: transcripts, metric details and SVG histograms.

Every piece of data (conversation text, ids, reasons, tool arguments) goes through `esc`
(`html.escape` with quotes), so a message holding `<script>` shows as text.
"""

from __future__ import annotations

import html
import json
import math
from collections.abc import Mapping, Sequence
from typing import Any

_ROLES = {"human": "User", "ai": "Assistant", "tool": "Tool result", "system": "System"}


def esc(value: Any) -> str:
    """Escape any value for HTML text or a quoted attribute."""
    return html.escape("" if value is None else str(value), quote=True)


def _json(value: Any) -> str:
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def transcript(sample: Mapping[str, Any] | None) -> str:
    """The conversation: one block per message, tool calls with their JSON arguments."""
    if not sample:
        return '<p class="note">The conversation is not stored in this results row.</p>'
    blocks = []
    for position, message in enumerate(sample.get("user_input") or []):
        kind = str(message.get("type", ""))
        role = _ROLES.get(kind, kind or "message")
        extra = ""
        if kind == "tool" and message.get("tool_call_id"):
            extra = f" (for call {esc(message['tool_call_id'])})"
        calls = ""
        for call in message.get("tool_calls") or []:
            ref = f" [{esc(call.get('id'))}]" if call.get("id") else ""
            calls += (
                f'<div class="call">&rarr; {esc(call.get("name"))}{ref}('
                f"{esc(_json(call.get('args', {})))})</div>"
            )
        blocks.append(
            f'<div class="msg {esc(kind)}"><span class="role">[{position}] {esc(role)}{extra}'
            f"</span>{esc(message.get('content', ''))}{calls}</div>"
        )
    refs = []
    if sample.get("reference_topics") is not None:
        refs.append(f"<li>reference topics: {esc(', '.join(sample['reference_topics']))}</li>")
    if sample.get("reference_tool_calls") is not None:
        calls_text = "; ".join(
            f"{c.get('name')}({_json(c.get('args', {}))})" for c in sample["reference_tool_calls"]
        )
        refs.append(f"<li>reference tool calls: {esc(calls_text or 'none')}</li>")
    if sample.get("reference") is not None:
        refs.append(f"<li>reference: {esc(sample['reference'])}</li>")
    tail = f'<ul class="note">{"".join(refs)}</ul>' if refs else ""
    return f'<div class="transcript">{"".join(blocks)}</div>{tail}'


def _table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{esc(c)}</td>" for c in row) + "</tr>" for row in rows)
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _yes(value: Any) -> str:
    return "yes" if value is True else "no" if value is False else "-"


def _topics(details: Mapping[str, Any]) -> str:
    rows = [
        (t.get("topic"), t.get("quote"), _yes(t.get("answered")), _yes(t.get("in_scope")))
        for t in details.get("topics", [])
    ]
    counts = ", ".join(
        f"{k.upper()} {details[k]}" for k in ("tp", "fp", "fn", "tn") if k in details
    )
    return _table(("topic", "user's words", "answered", "in scope"), rows) + (
        f'<p class="note">{esc(counts)}</p>' if counts else ""
    )


def _verdicts(details: Mapping[str, Any]) -> str:
    rows = [
        (v.get("exchange"), _yes(v.get("relevant")), v.get("reason") or "")
        for v in details.get("verdicts", [])
    ]
    return _table(("exchange", "relevant", "reason"), rows)


def _alignment(details: Mapping[str, Any]) -> str:
    rows = []
    for m in details.get("matches", []):
        problems = "; ".join(
            f"{label.replace('_', ' ')}: {', '.join(map(str, m[label]))}"
            for label in ("differing_args", "missing_args", "extra_args")
            if m.get(label)
        )
        rows.append(
            (m.get("name"), m.get("predicted"), m.get("reference"), m.get("score"), problems)
        )
    out = _table(("tool", "made #", "expected #", "score", "differences"), rows) if rows else ""
    for key, label in (("unmatched_reference", "missing"), ("unmatched_predicted", "extra")):
        calls = details.get(key) or []
        if calls:
            out += f'<p class="note">{label}: {esc(_json(calls))}</p>'
    return out


def metric_details(name: str, row: Mapping[str, Any]) -> str:
    """One metric's outcome for a record: score or why not, reason, and its details."""
    score = (row.get("scores") or {}).get(name)
    error = (row.get("errors") or {}).get(name)
    reason = (row.get("reasons") or {}).get(name)
    details = (row.get("details") or {}).get(name) or {}
    if error is not None:
        head = f'<span class="failed">failed: {esc(error.get("type"))}</span>'
    elif score is None:
        head = '<span class="unscored">not scored</span>'
    else:
        head = f"score {esc(f'{score:.4g}')}"
    body = f"<p>{esc(reason)}</p>" if reason else ""
    if isinstance(details, Mapping) and details:
        if "topics" in details:
            body += _topics(details)
        elif "verdicts" in details:
            body += _verdicts(details)
        elif "matches" in details:
            body += _alignment(details)
        else:
            body += (
                f"<pre>{esc(json.dumps(details, indent=2, ensure_ascii=False, default=str))}</pre>"
            )
    return f'<div class="metric-block"><h4>{esc(name)}: {head}</h4>{body}</div>'


def bins_for(low: float | None, high: float | None) -> tuple[float, float, int]:
    """Histogram range and bin count: 10 bins over [0, 1] for ratios, unit bins for levels."""
    if low is None or high is None or (low >= 0.0 and high <= 1.0):
        return 0.0, 1.0, 10
    start, stop = math.floor(low), math.ceil(high)
    if stop == start:
        stop = start + 1
    width = stop - start
    return float(start), float(stop), int(min(max(width, 1), 20))


def bin_of(value: float, start: float, stop: float, count: int) -> int:
    """The bin of a value (the last bin includes `stop`)."""
    position = int((value - start) / (stop - start) * count)
    return min(max(position, 0), count - 1)


def histogram(name: str, counts: Sequence[int], start: float, stop: float) -> str:
    """An inline SVG bar chart of score counts, with the range on the axis."""
    width, height, pad = 260, 110, 18
    top = max(counts) if counts and max(counts) > 0 else 1
    bar = (width - 2 * pad) / max(len(counts), 1)
    bars = []
    for i, count in enumerate(counts):
        h = (height - 2 * pad) * count / top
        x = pad + i * bar
        y = height - pad - h
        lo = start + (stop - start) * i / len(counts)
        hi = start + (stop - start) * (i + 1) / len(counts)
        bars.append(
            f'<rect x="{x:.1f}" y="{y:.1f}" width="{max(bar - 2, 1):.1f}" height="{h:.1f}" '
            f'fill="#2f5fa8"><title>{esc(f"{lo:.3g} to {hi:.3g}: {count}")}</title></rect>'
        )
    axis = (
        f'<line x1="{pad}" y1="{height - pad}" x2="{width - pad}" y2="{height - pad}" '
        f'stroke="#888"/><text x="{pad}" y="{height - 4}" font-size="10">{start:g}</text>'
        f'<text x="{width - pad}" y="{height - 4}" font-size="10" text-anchor="end">{stop:g}'
        f'</text><text x="{pad}" y="12" font-size="10">max {top}</text>'
    )
    return (
        f'<div class="hist"><h3>{esc(name)}</h3><svg xmlns="http://www.w3.org/2000/svg" '
        f'width="{width}" height="{height}" role="img" aria-label="{esc(name)} histogram">'
        f"{axis}{''.join(bars)}</svg></div>"
    )
