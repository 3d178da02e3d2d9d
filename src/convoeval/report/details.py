"""Each metric's outcome for one record as readable HTML: verdict tables, call alignments with
the argument paths that differ (`address.zip`) and both values, F1 counts and unmatched calls,
and the agreement of repeated judge samples. Messages, exchanges and calls are numbered from 1,
as the reasons and the transcript number them; raw details keep (and say) their 0-based indexes.

Argument differences are computed here from the conversation's own calls (the metric details
name only the top-level argument), with the metrics' typed equality, so `1` and `"1"` differ.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from convoeval._text import nth
from convoeval.metrics._tool_calls import values_equal
from convoeval.report.parts import compact, esc, name, prose, table, text, value

#: Nesting followed when looking for the differing path; deeper values are shown whole.
_MAX_DEPTH = 32
_MISSING = object()


def arg_differences(made: Any, expected: Any, path: str = "") -> list[tuple[str, Any, Any]]:
    """(path, made value, expected value) for every leaf that differs; `_MISSING` on one side."""
    if values_equal(made, expected):
        return []
    depth = path.count(".") + path.count("[")
    if depth < _MAX_DEPTH and isinstance(made, Mapping) and isinstance(expected, Mapping):
        out: list[tuple[str, Any, Any]] = []
        for key in sorted(set(made) | set(expected), key=str):
            where = f"{path}.{key}" if path else str(key)
            if key not in made or key not in expected:
                out.append((where, made.get(key, _MISSING), expected.get(key, _MISSING)))
            else:
                out += arg_differences(made[key], expected[key], where)
        return out
    lists = all(isinstance(v, list) for v in (made, expected))
    if depth < _MAX_DEPTH and lists and len(made) == len(expected):
        return [
            d
            for i, (m, e) in enumerate(zip(made, expected, strict=True))
            for d in arg_differences(m, e, f"{path}[{i}]")
        ]
    return [(path or "(arguments)", made, expected)]


def _shown(item: Any) -> str:
    return '<span class="note">(missing)</span>' if item is _MISSING else value(item)


def _differences(made: Mapping[str, Any], expected: Mapping[str, Any]) -> str:
    lines = [
        f"<li>{name(path)}: made {_shown(m)}, expected {_shown(e)}</li>"
        for path, m, e in arg_differences(dict(made), dict(expected))
    ]
    return f'<ul class="diffs">{"".join(lines)}</ul>' if lines else ""


def _made_calls(sample: Mapping[str, Any] | None) -> list[Mapping[str, Any]]:
    """The predicted calls in the metrics' order: every call of every AI message."""
    messages = (sample or {}).get("user_input") or []
    return [c for m in messages if m.get("type") == "ai" for c in m.get("tool_calls") or []]


def _args(calls: Sequence[Mapping[str, Any]], index: Any) -> Mapping[str, Any] | None:
    if isinstance(index, int) and 0 <= index < len(calls):
        args = calls[index].get("args")
        return args if isinstance(args, Mapping) else None
    return None


def _number(index: Any) -> str:
    """A 0-based position from the details, counted from 1 as reasons count (`nth`)."""
    return name(nth(index) if isinstance(index, int) and not isinstance(index, bool) else index)


def _call_rows(label: str, calls: Sequence[Mapping[str, Any]]) -> list[list[str]]:
    return [
        [esc(label), _number(c.get("index")), name(c.get("name")), value(c.get("args", {}))]
        for c in calls
    ]


def _unmatched(details: Mapping[str, Any]) -> str:
    rows = _call_rows("expected, not made", details.get("unmatched_reference") or [])
    rows += _call_rows("made, not expected", details.get("unmatched_predicted") or [])
    return table(("call", "#", "tool", "arguments"), rows) if rows else ""


def _alignment(details: Mapping[str, Any], sample: Mapping[str, Any] | None) -> str:
    made = _made_calls(sample)
    expected = (sample or {}).get("reference_tool_calls") or []
    rows = []
    for m in details.get("matches", []):
        diff = ""
        if m.get("score", 1.0) < 1.0:
            p, r = _args(made, m.get("predicted")), _args(expected, m.get("reference"))
            if p is not None and r is not None:
                diff = _differences(p, r)
            else:  # the conversation is not in the row: name the top-level arguments only
                names = [
                    a
                    for k in ("differing_args", "missing_args", "extra_args")
                    for a in m.get(k, [])
                ]
                diff = ", ".join(name(a) for a in names)
        score = m.get("score")
        rows.append(
            [
                name(m.get("name")),
                _number(m.get("predicted")),
                _number(m.get("reference")),
                esc(f"{score:.3g}" if isinstance(score, int | float) else score),
                diff or "none",
            ]
        )
    out = table(("tool", "made #", "expected #", "score", "differences"), rows) if rows else ""
    return out + _unmatched(details)


def _f1(details: Mapping[str, Any]) -> str:
    def ratio(key: str) -> str:
        item = details.get(key)
        return "n/a" if item is None else f"{item:.3g}"

    counts = (
        f"{details.get('true_positives', 0)} correct, {details.get('false_positives', 0)} not "
        f"expected, {details.get('false_negatives', 0)} missing; precision {ratio('precision')}, "
        f"recall {ratio('recall')}"
    )
    out = f'<p class="note">{esc(counts)}</p>' + _unmatched(details)
    # A same-name missing and extra pair is usually one call with wrong arguments: show where.
    spare = list(details.get("unmatched_reference") or [])
    pairs = []
    for call in details.get("unmatched_predicted") or []:
        twin = next((r for r in spare if r.get("name") == call.get("name")), None)
        if twin is not None and isinstance(call.get("args"), Mapping):
            spare.remove(twin)
            pairs.append(
                [name(call.get("name")), _differences(call["args"], twin.get("args") or {})]
            )
    if pairs:
        out += table(("tool", "arguments that differ"), pairs)
    return out


def _yes(item: Any) -> str:
    return "yes" if item is True else "no" if item is False else "-"


def _topics(details: Mapping[str, Any]) -> str:
    rows = [
        [
            name(t.get("topic")),
            text(t.get("quote")),
            _yes(t.get("answered")),
            _yes(t.get("in_scope")),
        ]
        for t in details.get("topics", [])
    ]
    counts = ", ".join(
        f"{k.upper()} {details[k]}" for k in ("tp", "fp", "fn", "tn") if k in details
    )
    return table(("topic", "user's words", "answered", "in scope"), rows) + (
        f'<p class="note">{esc(counts)}</p>' if counts else ""
    )


#: Verdict fields that hold a 0-based position (shown counted from 1, as reasons count).
_POSITIONS = frozenset({"exchange", "message", "call", "first_message", "after_message"})


def _verdict_cell(key: str, item: Any) -> str:
    if key in _POSITIONS:
        return _number(item)
    if isinstance(item, bool):
        return _yes(item)
    return prose(item) if isinstance(item, str) else name(compact(item))


def _verdicts(details: Mapping[str, Any]) -> str:
    """One row per verdict, with the fields its metric gives (exchange or message first)."""
    verdicts = [v for v in details.get("verdicts", []) if isinstance(v, Mapping)]
    keys: list[str] = []
    for verdict in verdicts:
        keys += [k for k in verdict if k not in keys]
    keys.sort(key=lambda k: (k not in _POSITIONS, k == "reason"))  # stable otherwise
    rows = [[_verdict_cell(k, v.get(k)) for k in keys] for v in verdicts]
    return table(tuple(keys), rows)


def _generic(details: Mapping[str, Any]) -> str:
    rows = [
        [name(k), prose(v) if isinstance(v, str) else name(compact(v))] for k, v in details.items()
    ]
    note = '<p class="note">The indexes in these details count from 0 (message 1 is index 0).</p>'
    return table(("detail", "value"), rows) + note


def _judge_samples(entries: Any) -> str:
    """How repeated judge samples voted (docs/judges.md): per step and verdict, the share of the
    answering samples that agreed, and how many of the samples answered."""
    rows = []
    for entry in entries if isinstance(entries, list) else []:
        if not isinstance(entry, Mapping):
            continue
        answered = f"{entry.get('answered')} of {entry.get('samples')}"
        confidence = entry.get("confidence")
        for key, share in (confidence if isinstance(confidence, Mapping) else {}).items():
            shown = f"{share:.0%}" if isinstance(share, int | float) else share
            rows.append([name(entry.get("step")), name(key), name(shown), name(answered)])
    if not rows:
        return ""
    return table(("judge step", "verdict", "samples agreeing", "samples answered"), rows)


def metric_details(metric: str, row: Mapping[str, Any]) -> str:
    """One metric's outcome for a record: score or why not, reason, and its details."""
    score = (row.get("scores") or {}).get(metric)
    error = (row.get("errors") or {}).get(metric)
    reason = (row.get("reasons") or {}).get(metric)
    details = (row.get("details") or {}).get(metric) or {}
    if error is not None:
        head = f'<span class="failed">failed: {name(error.get("type"))}</span>'
        reason = reason or error.get("message")
    elif score is None:
        head = '<span class="unscored">not scored</span>'
    else:
        head = f"score {esc(f'{score:.4g}')}"
    body = f'<p class="reason">{prose(reason)}</p>' if reason else ""
    if isinstance(details, Mapping) and details:
        if "topics" in details:
            body += _topics(details)
        elif "verdicts" in details:
            body += _verdicts(details)
        elif "matches" in details:
            body += _alignment(details, row.get("sample"))
        elif "true_positives" in details:
            body += _f1(details)
        else:
            body += _generic({k: v for k, v in details.items() if k != "judge_samples"})
        body += _judge_samples(details.get("judge_samples"))
    return f'<div class="metric-block"><h4>{name(metric)}: {head}</h4>{body}</div>'
