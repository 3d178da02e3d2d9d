"""`Step`: one typed question a metric asks a judge (prompts, typed input, output schema, optional
offline answer and answer check), and `OfflineKit`, what an offline answer may call. Owned by the
metrics side; every judge treats a step's inputs as opaque (`step.render(inputs)`).
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
import string
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Generic, Protocol, TypeVar

from pydantic import BaseModel, ConfigDict

OutT = TypeVar("OutT", bound=BaseModel)


class StepInput(BaseModel):
    """Base of a step's typed input. Plain fields fill the template's `{name}` placeholders (text
    shown to the judge); fields declared `Field(exclude=True)` are never shown: they carry what
    only the answer check or the offline judge needs (expected keys, replies, windows)."""

    model_config = ConfigDict(frozen=True, extra="forbid")

    def prompt_fields(self) -> dict[str, Any]:
        """The values the prompt shows, by placeholder name (hidden fields left out)."""
        return self.model_dump()

    def __getitem__(self, name: str) -> Any:
        """Mapping-style read of any field, hidden ones included (for test scripts and judges
        written against the earlier `Mapping` inputs)."""
        if name not in type(self).model_fields:
            raise KeyError(name)
        return getattr(self, name)


#: A step's input: its typed model; a plain mapping of prompt fields for ad-hoc steps (tests).
StepInputs = StepInput | Mapping[str, Any]


@dataclass(frozen=True)
class Window:
    """One exchange to judge for relevance: earlier (user input, reply) pairs, the input, the
    reply. Passed to `OfflineKit.relevance_scores`."""

    history: tuple[tuple[str, str], ...]
    user: str
    reply: str

    @classmethod
    def of(cls, history: Sequence[tuple[str, str]], user: str, reply: str) -> Window:
        """Build a window from any sequence of (user, reply) pairs."""
        return cls(tuple((u, r) for u, r in history), user, reply)

    def context(self) -> str:
        """The window as one text: earlier exchanges then the current input."""
        parts = [text for pair in self.history for text in pair if text.strip()]
        parts.append(self.user)
        return "\n".join(parts)


class UserRequest(Protocol):
    """One request found in the user's messages by `OfflineKit.segment_requests`."""

    @property
    def text(self) -> str: ...
    @property
    def topic(self) -> str: ...
    @property
    def message_index(self) -> int: ...


class OfflineKit(Protocol):
    """What a step's offline implementation may call: calibrated, batched primitives."""

    def segment_requests(self, user_messages: Sequence[str]) -> Sequence[UserRequest]:
        """The requests in these user messages (`message_index` indexes `user_messages`)."""
        ...

    def is_refusal(
        self, replies: Sequence[str], requests: Sequence[str] | None = None
    ) -> list[bool]:
        """Per reply, whether the assistant declined (the request it answers, when given)."""
        ...

    def in_scope(self, texts: Sequence[str], topics: Sequence[str]) -> list[bool]:
        """Per text, whether it falls within one of `topics`."""
        ...

    def relevance_scores(self, windows: Sequence[Window]) -> list[float]:
        """Per window, P(its reply is relevant to its input); relevant when >= 0.5."""
        ...


class AnswerShape(Protocol):
    """How one request's answer schema is narrowed to its inputs, and how an answer in that
    narrowed form reads back as the step's output model (metrics/_keyed.py: keyed verdicts)."""

    def schema(
        self, inputs: Any, base: dict[str, Any], *, reason_first: bool = False
    ) -> dict[str, Any]:
        """The schema to send for these inputs, built from (a copy of) the output model's;
        `reason_first` asks for a rationale before each verdict."""
        ...

    def decode(self, inputs: Any, data: Any) -> Any:
        """An answer in the narrowed form turned into the output model's form (others as is)."""
        ...


#: A step's offline implementation: (the step's typed input, the kit) -> an answer.
OfflineImpl = Callable[[Any, OfflineKit], Any]
#: A semantic check of an answer against the inputs: None if fine, else what is wrong (re-asked).
AnswerCheck = Callable[[Any, Any], str | None]


@dataclass(frozen=True)
class Step(Generic[OutT]):
    """One typed question a metric asks a judge: prompts, output schema, optional offline answer.

    `instructions` is the system prompt; `template` is the user prompt with `{name}` placeholders
    filled from the input's prompt fields (strings as they are, other values with `str`): the
    metric escapes or fences every value that comes from data before it becomes a field. The
    output schema goes to the judge as a structured-output request: prompts never spell out JSON.
    """

    name: str
    version: int
    instructions: str
    template: str
    output: type[OutT]
    offline: OfflineImpl | None = None
    check: AnswerCheck | None = None
    #: Narrows the answer schema per request (e.g. to exactly the keys asked); None: as is.
    shape: AnswerShape | None = None

    def render(self, inputs: StepInputs) -> str:
        """The user prompt for these inputs; every placeholder must be given."""
        fields = inputs.prompt_fields() if isinstance(inputs, StepInput) else dict(inputs)
        names = {n for _, n, _, _ in string.Formatter().parse(self.template) if n}
        missing = names - set(fields)
        if missing:
            raise KeyError(f"step {self.name!r} needs inputs {sorted(missing)}")
        return self.template.format_map({k: _as_text(v) for k, v in fields.items()})

    def schema(self) -> dict[str, Any]:
        """The JSON schema of the answer, as sent to the judge (built once per output model)."""
        return copy.deepcopy(_schema_of(self.output))

    def request_schema(self, inputs: StepInputs, *, reason_first: bool = False) -> dict[str, Any]:
        """The answer schema sent with one request: the output model's, narrowed by `shape` to
        these inputs; with `reason_first`, every object's `reason` property comes first (the
        judge writes its rationale before the verdict)."""
        schema = self.schema()
        if self.shape is not None and isinstance(inputs, StepInput):
            schema = self.shape.schema(inputs, schema, reason_first=reason_first)
        return compact_schema(_reason_first(schema) if reason_first else schema)

    def decode(self, inputs: StepInputs, data: Any) -> Any:
        """A parsed answer in the form `request_schema` asked for, in the output model's form."""
        if self.shape is None or not isinstance(inputs, StepInput):
            return data
        return self.shape.decode(inputs, data)

    def fingerprint(self) -> str:
        """A short hash of everything that shapes this step's answers: name, version, prompts,
        output schema and its per-request shape. Results scored under another fingerprint must
        not be mixed on resume."""
        parts = [
            self.name,
            self.version,
            self.instructions,
            self.template,
            compact_schema(_schema_of(self.output)),
            *([] if self.shape is None else [repr(self.shape)]),
        ]
        canonical = json.dumps(parts, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


@functools.cache
def _schema_of(model: type[BaseModel]) -> dict[str, Any]:
    return model.model_json_schema()


#: Schema annotations a judge does not need: the prompt says what each answer means (a server that
#: turns the schema into a grammar, as llama.cpp does, never shows them to the model anyway).
_ANNOTATIONS = frozenset({"title", "description"})


def compact_schema(schema: dict[str, Any]) -> dict[str, Any]:
    """The schema without titles and descriptions, its definitions renamed `d1`, `d2`, ...:
    the same answers are valid, at a fraction of the tokens sent with every request."""
    names = {name: f"d{n}" for n, name in enumerate(schema.get("$defs", {}), 1)}
    refs = {f"#/$defs/{old}": f"#/$defs/{new}" for old, new in names.items()}
    out: dict[str, Any] = _stripped(schema, refs)
    if names:
        out["$defs"] = {names[old]: value for old, value in out["$defs"].items()}
    return out


def _stripped(schema: Any, refs: dict[str, str], *, named: bool = False) -> Any:
    """`schema` without annotation keywords; `named`: a map of names (properties, $defs),
    whose keys are names, not keywords, and are all kept."""
    if isinstance(schema, list):
        return [_stripped(item, refs) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {}
    for key, value in schema.items():
        if not named and key in _ANNOTATIONS:
            continue
        if not named and key == "$ref" and isinstance(value, str):
            out[key] = refs.get(value, value)
            continue
        out[key] = _stripped(value, refs, named=not named and key in ("properties", "$defs"))
    return out


def _reason_first(schema: Any) -> Any:
    """The schema with each object's `reason` property moved first (properties and required)."""
    if isinstance(schema, list):
        return [_reason_first(item) for item in schema]
    if not isinstance(schema, dict):
        return schema
    out = {key: _reason_first(value) for key, value in schema.items()}
    props = out.get("properties")
    if isinstance(props, dict) and "reason" in props:
        out["properties"] = {"reason": props["reason"], **props}
        if isinstance(out.get("required"), list) and "reason" in out["required"]:
            out["required"] = ["reason", *(r for r in out["required"] if r != "reason")]
    return out


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else str(value)
