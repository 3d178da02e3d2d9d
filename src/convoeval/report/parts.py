"""HTML fragments of the report: escaping, bidi isolation, transcripts and SVG histograms.

Every piece of data goes through `text` (free text: escaped and bidi-isolated in `<bdi>`) or
`name` (identifiers and values: escaped, isolated, and invisible or direction-changing characters
shown as `\\uXXXX`), so neither `<script>` nor an unterminated U+202E can change the page.
"""

from __future__ import annotations

import hashlib
import html
import json
import math
import re
from collections.abc import Iterable, Mapping, Sequence
from typing import Any

from convoeval._text import nth

_ROLES = {"human": "User", "ai": "Assistant", "tool": "Tool result", "system": "System"}

#: Control, format (bidi, zero-width) and other invisible characters, shown escaped in names.
_INVISIBLE = re.compile(
    "[\x00-\x1f\x7f-\x9f\u00ad\u034f\u061c\u115f\u1160\u17b4\u17b5\u180b-\u180e"
    "\u200b-\u200f\u2028-\u202e\u2060-\u206f\u3164\ufe00-\ufe0f\ufeff\uffa0\ufff0-\ufffb]"
)


def esc(value: Any) -> str:
    """Escape any value for HTML text or a quoted attribute."""
    return html.escape("" if value is None else str(value), quote=True)


def visible(value: Any, keep_lines: bool = False) -> str:
    """The value as a string with invisible and bidi control characters written as `\\uXXXX`
    (newlines and tabs kept when `keep_lines`)."""
    raw = "" if value is None else str(value)

    def show(match: re.Match[str]) -> str:
        char = match.group()
        return char if keep_lines and char in "\n\t" else f"\\u{ord(char):04x}"

    return _INVISIBLE.sub(show, raw)


def _body(value: str) -> str:
    """Escape for element content (quotes need no escaping there, only in attributes)."""
    return html.escape(value, quote=False)


def text(value: Any) -> str:
    """Free text (a message, a reason): escaped and isolated, so its direction stays inside."""
    return f"<bdi>{_body('' if value is None else str(value))}</bdi>"


def prose(value: Any) -> str:
    """Text written by a metric or judge about data (a reason, an error), which may quote
    names: escaped, isolated, control characters shown, line breaks kept."""
    return f"<bdi>{_body(visible(value, keep_lines=True))}</bdi>"


def name(value: Any) -> str:
    """An identifier (tool, id, key, topic label): escaped, isolated, invisible chars shown."""
    return f"<bdi>{_body(visible(value))}</bdi>"


def compact(value: Any) -> str:
    """A JSON value in one line (keys sorted), for arguments and metadata."""
    return json.dumps(value, ensure_ascii=False, sort_keys=True, default=str)


def value(item: Any) -> str:
    """A JSON value as a name: its type stays readable (`1` and `"1"` differ)."""
    return name(compact(item))


def table(headers: Sequence[str], rows: Sequence[Sequence[str]], css: str = "") -> str:
    """A table of already rendered cells (callers pass `text(...)` / `name(...)` HTML)."""
    head = "".join(f"<th>{esc(h)}</th>" for h in headers)
    body = "".join("<tr>" + "".join(f"<td>{c}</td>" for c in row) + "</tr>" for row in rows)
    cls = f' class="{css}"' if css else ""
    return f"<table{cls}><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def _call(call: Mapping[str, Any]) -> str:
    ref = f" [{name(call.get('id'))}]" if call.get("id") else ""
    return (
        f'<div class="call">&rarr; {name(call.get("name"))}{ref}'
        f"({value(call.get('args', {}))})</div>"
    )


#: A message text at least this long found in several conversations is written once.
SHARED_MIN_CHARS = 1000


class SharedTexts:
    """Long texts that several conversations hold (a system prompt): written once at the end of
    the page and linked from each message, so the page grows with what differs."""

    def __init__(self, keys: Iterable[bytes] = ()) -> None:
        self._numbers = {key: i + 1 for i, key in enumerate(keys)}
        self._texts: dict[int, str] = {}

    @staticmethod
    def key(content: str) -> bytes | None:
        """The digest of a text long enough to share, else None."""
        if len(content) < SHARED_MIN_CHARS:
            return None
        return hashlib.blake2b(content.encode("utf-8"), digest_size=16).digest()

    @classmethod
    def of(cls, samples: Iterable[Mapping[str, Any] | None]) -> SharedTexts:
        """The long message texts found more than once in these conversations (one pass)."""
        seen: dict[bytes, int] = {}
        for sample in samples:
            for message in (sample or {}).get("user_input") or []:
                key = cls.key(str(message.get("content") or ""))
                if key is not None:
                    seen[key] = seen.get(key, 0) + 1
        return cls(key for key, count in seen.items() if count > 1)

    def link(self, content: str) -> str | None:
        """A link to the shared copy of `content`, or None when it is not shared."""
        key = self.key(content)
        number = self._numbers.get(key) if key is not None else None
        if number is None:
            return None
        self._texts.setdefault(number, content)
        return (
            f'<a class="shared" href="#shared-{number}">shared text {number}</a> '
            f'<span class="note">({len(content):,} characters, written once below)</span>'
        )

    def section(self) -> str:
        """The shared texts, each with its anchor ("" when there is none)."""
        if not self._texts:
            return ""
        blocks = "".join(
            f'<div class="msg" id="shared-{n}"><span class="role">shared text {n}</span>'
            f"{text(self._texts[n])}</div>"
            for n in sorted(self._texts)
        )
        return f"<h2>Texts shared by several conversations</h2>{blocks}"


def transcript(sample: Mapping[str, Any] | None, shared: SharedTexts | None = None) -> str:
    """The conversation: one block per message, numbered from 1 as reasons number them, tool
    calls with their JSON arguments."""
    if not sample:
        return '<p class="note">The conversation is not stored in this results row.</p>'
    blocks = []
    for position, message in enumerate(sample.get("user_input") or []):
        kind = str(message.get("type", ""))
        role = _ROLES.get(kind, kind or "message")
        extra = ""
        if kind == "tool" and message.get("tool_call_id"):
            extra = f" (for call {name(message['tool_call_id'])})"
        calls = "".join(_call(call) for call in message.get("tool_calls") or [])
        raw = str(message.get("content") or "")
        content = (shared.link(raw) if shared else None) or text(raw)
        blocks.append(
            f'<div class="msg {esc(kind)}"><span class="role">message {nth(position)} &middot; '
            f"{name(role)}{extra}</span>{content}{calls}</div>"
        )
    refs = []
    if sample.get("reference_topics") is not None:
        topics = ", ".join(name(t) for t in sample["reference_topics"]) or "none"
        refs.append(f"<li>reference topics: {topics}</li>")
    if sample.get("reference_tool_calls") is not None:
        calls = "".join(_call(c) for c in sample["reference_tool_calls"]) or "none"
        refs.append(f"<li>reference tool calls: {calls}</li>")
    if sample.get("reference") is not None:
        refs.append(f"<li>reference: {text(sample['reference'])}</li>")
    if sample.get("metadata"):
        items = sample["metadata"].items()
        rows = [(name(k), value(v)) for k, v in sorted(items, key=lambda kv: str(kv[0]))]
        refs.append(f"<li>metadata: {table(('key', 'value'), rows, 'metadata')}</li>")
    tail = f'<ul class="refs">{"".join(refs)}</ul>' if refs else ""
    return f'<div class="transcript">{"".join(blocks)}</div>{tail}'


def bins_for(low: float | None, high: float | None) -> tuple[float, float, int]:
    """Histogram range and bin count: 10 bins over [0, 1] for ratios, unit bins for levels."""
    if low is None or high is None or (low >= 0.0 and high <= 1.0):
        return 0.0, 1.0, 10
    start, stop = math.floor(low), math.ceil(high)
    if stop == start:
        stop = start + 1
    width = stop - start
    return float(start), float(stop), int(min(max(width, 1), 20))


def bin_of(item: float, start: float, stop: float, count: int) -> int:
    """The bin of a value (the last bin includes `stop`)."""
    position = int((item - start) / (stop - start) * count)
    return min(max(position, 0), count - 1)


def histogram(metric: str, counts: Sequence[int], start: float, stop: float) -> str:
    """An inline SVG bar chart of score counts, or "nothing scored" when every count is 0. Its
    axes are named (score, records) and labelled (the score range; 0 and the highest count),
    and every bar carries its count, so a run of a few records reads at a glance."""
    if not any(counts):
        return f'<div class="hist"><h3>{name(metric)}</h3><p class="empty">nothing scored</p></div>'
    width, height, left, right, above, below = 280, 140, 34, 10, 14, 32
    plot_w, plot_h = width - left - right, height - above - below
    base = above + plot_h
    top = max(counts)
    bar = plot_w / len(counts)
    parts = []
    for i, count in enumerate(counts):
        h = plot_h * count / top
        x = left + i * bar
        lo = start + (stop - start) * i / len(counts)
        hi = start + (stop - start) * (i + 1) / len(counts)
        parts.append(
            f'<rect x="{x:.1f}" y="{base - h:.1f}" width="{max(bar - 2, 1):.1f}" '
            f'height="{h:.1f}" fill="#2f5fa8"><title>{esc(f"{lo:.3g} to {hi:.3g}: {count}")}'
            "</title></rect>"
        )
        if count:
            parts.append(_svg_text(x + bar / 2 - 1, base - h - 2, str(count), "middle"))
    parts += [
        f'<line x1="{left}" y1="{base}" x2="{width - right}" y2="{base}" stroke="#888"/>',
        f'<line x1="{left}" y1="{above}" x2="{left}" y2="{base}" stroke="#888"/>',
        _svg_text(left, base + 12, f"{start:g}", "start"),
        _svg_text(width - right, base + 12, f"{stop:g}", "end"),
        _svg_text(left + plot_w / 2, height - 4, "score", "middle"),
        _svg_text(left - 4, base, "0", "end"),
        _svg_text(left - 4, above + 8, str(top), "end"),
        f'<text x="10" y="{above + plot_h / 2:.1f}" font-size="10" text-anchor="middle" '
        f'transform="rotate(-90 10 {above + plot_h / 2:.1f})">records</text>',
    ]
    return (
        f'<div class="hist"><h3>{name(metric)}</h3><svg xmlns="http://www.w3.org/2000/svg" '
        f'width="{width}" height="{height}" role="img" aria-label="{esc(visible(metric))} '
        f'histogram: records per score">{"".join(parts)}</svg></div>'
    )


def _svg_text(x: float, y: float, label: str, anchor: str) -> str:
    """A small SVG label (escaped) at (x, y)."""
    return (
        f'<text x="{x:.1f}" y="{y:.1f}" font-size="10" text-anchor="{anchor}">{esc(label)}</text>'
    )
