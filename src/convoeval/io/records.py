"""One record (a dict) <-> one `MultiTurnSample`, in the Ragas, OpenAI chat, DeepEval or LangChain
layout.

The layout is detected per record from its conversation key: `user_input` (Ragas), `messages`
(OpenAI chat, or LangChain when its first message is a serialised LangChain message with
`type`/`data` or `lc` and no `role`) or `turns` (DeepEval); a logged chat-completions call
(`request.messages` and `response.choices`, `io.chat_log`) is read as the OpenAI chat layout.
`format=` forces one. Problems come back as `path: what is wrong` lines, never as silent drops.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal, cast

from pydantic import ValidationError

from convoeval.io._convert import kind as json_kind
from convoeval.io.chat_log import from_chat_log, is_chat_log, log_paths
from convoeval.io.deepeval_layout import deepeval_to_sample, sample_to_deepeval
from convoeval.io.errors import ConversionError, DataError, OptionError
from convoeval.io.langchain_layout import from_langchain_dicts, is_langchain_dicts
from convoeval.io.openai_layout import from_openai_messages, to_openai_messages
from convoeval.io.remap import Remap, make_remap, messages_hint, remap
from convoeval.io.strict_json import problems_of, sample_problems
from convoeval.schema.errors import describe_errors
from convoeval.schema.sample import MultiTurnSample

Layout = Literal["ragas", "openai", "deepeval", "langchain", "otel"]
Format = Literal["auto", "ragas", "openai", "deepeval", "langchain", "otel"]
LAYOUTS: tuple[Layout, ...] = ("ragas", "openai", "deepeval")  # writable; detected by key
#: langchain and otel are read only; otel (trace exports, `io.otel`) is a whole-file format
FORMATS: tuple[Format, ...] = ("auto", *LAYOUTS, "langchain", "otel")
#: The problem of `format="otel"` given for one record rather than a file.
OTEL_NEEDS_FILE = (
    "format 'otel' reads trace export files, whose conversations are built from many spans: "
    "give the file's path (read_records(path, format='otel'), evaluate(path, format='otel'))"
)
_KEY = {"ragas": "user_input", "openai": "messages", "deepeval": "turns", "langchain": "messages"}
_NAME = {
    "ragas": "Ragas layout",
    "openai": "OpenAI chat layout",
    "deepeval": "DeepEval layout",
    "langchain": "LangChain messages layout",
}
#: The start of the problem of a record in none of the layouts (the same for every such record).
UNKNOWN_LAYOUT = "unknown layout"
#: Top-level OpenAI (fine-tuning) keys kept in the sample's metadata under this key (a request's
#: `tools` become the sample's `available_tools`).
OPENAI_RECORD_KEY = "openai_record"
_OPENAI_RECORD_FIELDS = ("parallel_tool_calls", "functions")


@dataclass(slots=True)
class Record:
    """One record read from a data file: where it is, its sample (or None) and its problems."""

    source: str
    line: int
    sample: MultiTurnSample | None
    errors: list[str] = field(default_factory=list)
    layout: Layout | None = None
    #: True for an element of a JSON array: `line` is then its 1-based position
    element: bool = False
    #: Where in a .json file the record starts when that is finer than an element (a trace
    #: export's conversation: the JSON path of its first span)
    at: str | None = None
    #: What a valid record lacks without being invalid (a trace conversation's gaps)
    notes: list[str] = field(default_factory=list)

    @property
    def where(self) -> str:
        """`file:line` of the record (JSONL/CSV line, Parquet row), or `file: [i]` for element i
        (0-based) of a JSON array, whose lines say nothing about which record is meant, or
        `file: PATH` inside a .json trace export."""
        if self.at is not None:
            return f"{self.source}: {self.at}"
        if self.element:
            return f"{self.source}: [{self.line - 1}]"
        return f"{self.source}:{self.line}"

    @property
    def ok(self) -> bool:
        """Whether the record is a valid conversation."""
        return self.sample is not None and not self.errors

    def problems(self) -> list[str]:
        """One `file:line: path: what is wrong` line per problem."""
        return [f"{self.where}: {error}" for error in self.errors]


def check_format(format: str) -> None:
    """Reject an unknown `format=` value early, with the allowed ones."""
    if format not in FORMATS:
        raise OptionError(f"format must be one of {', '.join(FORMATS)}, got {format!r}")


def check_layout(layout: str) -> None:
    """Reject an unknown `layout=` value early, with the allowed ones."""
    if layout not in LAYOUTS:
        raise OptionError(f"layout must be one of {', '.join(LAYOUTS)}, got {layout!r}")


def convert(
    data: Any,
    format: str = "auto",
    *,
    messages_field: str | None = None,
    fields: Mapping[str, str] | None = None,
) -> tuple[MultiTurnSample | None, list[str], Layout | None]:
    """Convert a record given as Python objects: (sample or None, problems, layout or None).

    The record is first held to the rules of strict JSON (`io.strict_json`: nesting depth,
    finite numbers), as every reader does. `messages_field` and `fields` read other layouts
    (see `io.remap`); a bad option raises `OptionError` (a `ValueError`).
    """
    options = make_remap(messages_field, fields)
    problems = problems_of(data)
    if problems:
        return None, problems, None
    return convert_parsed(data, format, options, checked=True)


def convert_parsed(
    data: Any, format: str = "auto", options: Remap | None = None, *, checked: bool = False
) -> tuple[MultiTurnSample | None, list[str], Layout | None]:
    """`convert` for a record parsed by `strict_json.loads`, which refused non-standard numbers
    and duplicate keys but not every depth over the limit: unless `checked` (known to be within
    the limits), the sample's free-form values are checked after conversion."""
    if format == "otel":
        return None, [OTEL_NEEDS_FILE], None
    if not isinstance(data, Mapping):
        problem = f"a record must be a JSON object (one conversation), got {json_kind(data)}"
        return None, [problem], None
    if options is not None:
        data, problems = remap(data, options, format)
        if problems:
            return None, problems, None
    logged = None  # a logged call: how many messages its request held
    if format in ("auto", "openai") and is_chat_log(data):
        asked = data["request"]["messages"]
        logged = len(asked) if isinstance(asked, list) else 0
        record, problems = from_chat_log(data)
        if record is None:
            return None, problems, None
        data = record
    layout, problems = _layout_of(data, format)
    if layout is None:
        return None, problems, None
    sample, problems = _converted_record(data, layout)
    if sample is not None and not checked:
        problems = sample_problems(sample)
    if logged is not None:
        problems = log_paths(problems, logged)
    return (None if problems else sample), problems, layout


def _converted_record(
    data: Mapping[str, Any], layout: Layout
) -> tuple[MultiTurnSample | None, list[str]]:
    if layout == "ragas":
        try:
            return MultiTurnSample.model_validate(data), []
        except ValidationError as exc:
            return None, describe_errors(exc)
    if layout == "openai":
        return _from_openai_record(data)
    if layout == "langchain":
        return _from_langchain_record(data)
    return deepeval_to_sample(data)


def ensure_sample(sample: Any, position: int) -> MultiTurnSample:
    """The sample itself, or a TypeError naming its position among the samples written."""
    if not isinstance(sample, MultiTurnSample):
        raise TypeError(f"samples[{position}] is a {type(sample).__name__}, not a MultiTurnSample")
    return sample


def record_to_sample(
    record: Mapping[str, Any],
    *,
    format: str = "auto",
    messages_field: str | None = None,
    fields: Mapping[str, str] | None = None,
) -> MultiTurnSample:
    """Convert one record dict to a sample; raises `DataError` listing every problem.

    `messages_field` and `fields` read other layouts, as `read_records` does.
    """
    check_format(format)
    sample, problems, _ = convert(record, format, messages_field=messages_field, fields=fields)
    if sample is None:
        raise DataError(problems)
    return sample


def sample_to_record(sample: MultiTurnSample, layout: str = "ragas") -> dict[str, Any]:
    """A JSON-ready record of the sample in the chosen layout (all three are lossless)."""
    check_layout(layout)
    if layout == "deepeval":
        return sample_to_deepeval(sample)
    record = sample.to_dict()
    if layout == "ragas":
        return record
    del record["user_input"]
    metadata = record.get("metadata")
    extras = metadata.pop(OPENAI_RECORD_KEY, None) if isinstance(metadata, dict) else None
    if metadata == {} and sample.metadata != {}:
        del record["metadata"]
    if "available_tools" in record:
        record["tools"] = record.pop("available_tools")
    return {"messages": to_openai_messages(sample), **(extras or {}), **record}


def _layout_of(data: Mapping[str, Any], format: str) -> tuple[Layout | None, list[str]]:
    """The layout of a record, or the problem that says which keys were expected."""
    if format != "auto":
        key = _KEY[format]
        if key not in data:
            return None, [
                f"{key}: required field is missing (format {format!r} expects the {_NAME[format]})"
            ]
        return cast(Layout, format), []
    found = [layout for layout in LAYOUTS if _KEY[layout] in data]
    if found == ["openai"] and is_langchain_dicts(data["messages"]):
        return "langchain", []
    if len(found) == 1:
        return found[0], []
    expected = ", ".join(f"'{_KEY[lay]}' ({_NAME[lay]})" for lay in LAYOUTS)
    if not found:
        keys = ", ".join(repr(str(k)) for k in data) or "none"
        log = (
            "; a chat-completions log is read when its 'request' holds 'messages'"
            if "request" in data
            else ""
        )
        return None, [
            f"{UNKNOWN_LAYOUT}: a record needs one of the keys {expected}; it has: {keys}"
            + log
            + messages_hint(data)
        ]
    both = " and ".join(f"'{_KEY[lay]}' ({_NAME[lay]})" for lay in found)
    return None, [
        f"ambiguous layout: the record has {both}; keep one key, or choose the layout "
        "with format=..."
    ]


def _from_openai_record(data: Mapping[str, Any]) -> tuple[MultiTurnSample | None, list[str]]:
    """`{"messages": [...], "tools": [...], "reference_topics": [...], ...}` -> sample."""
    fields = {k: v for k, v in data.items() if k != "messages"}
    extras = {k: fields.pop(k) for k in _OPENAI_RECORD_FIELDS if k in fields}
    if extras:
        metadata = fields.get("metadata")
        if isinstance(metadata, Mapping) or metadata is None:
            fields["metadata"] = {**(metadata or {}), OPENAI_RECORD_KEY: extras}
    return _converted(from_openai_messages, data["messages"], fields)


def _from_langchain_record(data: Mapping[str, Any]) -> tuple[MultiTurnSample | None, list[str]]:
    """`{"messages": [{"type": ..., "data": {...}}, ...], "id": ..., ...}` -> sample."""
    fields = {k: v for k, v in data.items() if k != "messages"}
    return _converted(from_langchain_dicts, data["messages"], fields)


def _converted(
    converter: Callable[..., MultiTurnSample], messages: Any, fields: Mapping[str, Any]
) -> tuple[MultiTurnSample | None, list[str]]:
    """Run a framework converter; its `ConversionError` problems become the record's."""
    try:
        return converter(messages, **fields), []
    except ConversionError as exc:
        return None, exc.problems
