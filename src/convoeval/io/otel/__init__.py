"""`--format otel`: conversations read from trace exports (docs/traces.md).

The whole file is read (a conversation's spans can be anywhere in it), its spans grouped into
conversations (`conversation.py`), each read by its convention (`genai.py`,
`openinference.py`) and merged into one `MultiTurnSample` (`assemble.py`). A conversation's
record sits where its first span is; its problems name each span (trace id, span id, line or
JSON path). Values that cannot be placed in any conversation (a line that is not JSON, a span
without ids, a GenAI log record whose span is not in the file) are records of their own.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any

from convoeval.io.errors import DataFileError
from convoeval.io.otel import spans as otlp
from convoeval.io.otel.conversation import build, group
from convoeval.io.otel.spans import Found, Place, Span, read_value
from convoeval.io.otel.vendors import is_vendor_trace, read_vendor_trace
from convoeval.io.records import Record
from convoeval.io.strict_json import sample_problems

__all__ = ["is_trace", "trace_records"]

#: The problem of a trace file in which no span is a model call or tool execution.
NO_CONVERSATIONS = (
    "no conversations: none of its spans is a model call or tool execution of the GenAI or "
    "OpenInference conventions"
)


def trace_records(
    source: str, rows: Iterable[tuple[int, Any, list[str], bool]], element: bool
) -> Iterator[Record]:
    """One `Record` per conversation (and per value that belongs to none), in the order of
    their first span; `rows` are the parsed lines (JSONL) or elements (`element`: .json)."""
    rows = list(rows)
    found = Found()
    records: list[tuple[int, Record]] = []
    single = element and len(rows) == 1
    for order, (line, data, problems, _checked) in enumerate(rows):
        place = Place(line, "" if single or not element else f"[{line - 1}]", order, element)
        if problems:
            records.append((order, _record(source, place, None, problems)))
        elif is_vendor_trace(data):
            read_vendor_trace(data, place, found)
        else:
            read_value(data, place, found)
    spans = _linked(found)
    by_place: dict[tuple[int, str], tuple[Place, list[str]]] = {}
    for place, problem in found.problems:
        key = (place.line, place.path if place.element else "")  # JSONL: one record a line
        by_place.setdefault(key, (place, []))[1].append(problem)
    for place, problems in by_place.values():
        records.append((place.order, _record(source, place, None, problems)))
    for conversation in group(spans):
        sample, problems, gaps = build(conversation)
        if sample is None and not problems:
            continue  # no span of this trace is a model call or tool run: no conversation
        if sample is not None:
            problems = sample_problems(sample)
        first = conversation.spans[0].place
        record = _record(source, first, None if problems else sample, problems)
        record.notes = [f"gap: {gap}" for gap in gaps]
        records.append((first.order, record))
    if not records:
        raise DataFileError(source, NO_CONVERSATIONS)
    records.sort(key=lambda pair: pair[0])
    yield from (record for _, record in records)


def is_trace(data: Any) -> bool:
    """Whether a parsed record is a trace export (OTLP, a span, an MLflow or Langfuse trace)
    rather than a conversation: a file whose first record is one is read as `--format otel`."""
    return otlp.is_trace(data) or is_vendor_trace(data)


def _record(source: str, place: Place, sample: Any, problems: list[str]) -> Record:
    at = place.path or None if place.element else None
    return Record(
        source, place.line, sample, problems, "otel" if sample else None, place.element, at
    )


def _linked(found: Found) -> list[Span]:
    """The spans, with every log record that is a GenAI event added to its span's events; such
    a log record whose span is not in the file is a problem (its message has no call)."""
    spans: dict[tuple[str, str], Span] = {}
    for span in found.spans:
        first = spans.setdefault((span.trace_id, span.span_id), span)
        if first is not span:
            span.problems.append(
                f"the same span is in the file twice (also at {first.place.label()}); keep one"
            )
    for log in found.logs:
        owner = spans.get((log.trace_id or "", log.span_id or ""))
        if owner is not None:
            owner.events.append(log.event)
        elif log.event.name.startswith("gen_ai."):
            where = f"trace {log.trace_id}, span {log.span_id}" if log.span_id else "no span"
            found.problems.append(
                (
                    log.place,
                    f"log record {log.event.name}: it belongs to {where}, which is not in the "
                    "file (export the spans together with their log records)",
                )
            )
    return found.spans
