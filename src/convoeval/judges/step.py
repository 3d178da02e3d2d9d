"""`Step`: one typed question a metric asks a judge (prompts, output schema, optional offline
answer and answer check). Owned by the metrics side; every judge treats its inputs as opaque.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import json
import string
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Generic, TypeVar

from pydantic import BaseModel

OutT = TypeVar("OutT", bound=BaseModel)

#: What a step's offline implementation receives: the step's inputs and the offline toolkit.
OfflineImpl = Callable[[Mapping[str, Any], Any], Any]
#: A semantic check of an answer against the inputs: None if fine, else what is wrong (re-asked).
AnswerCheck = Callable[[Mapping[str, Any], Any], str | None]


@dataclass(frozen=True)
class Step(Generic[OutT]):
    """One typed question a metric asks a judge: prompts, output schema, optional offline answer.

    `instructions` is the system prompt; `template` is the user prompt with `{name}` placeholders
    filled from the inputs (strings are inserted as they are, other values with `str`). The output
    schema is sent to the judge as a structured-output request: prompts never spell out JSON.
    """

    name: str
    version: int
    instructions: str
    template: str
    output: type[OutT]
    offline: OfflineImpl | None = None
    check: AnswerCheck | None = None

    def render(self, inputs: Mapping[str, Any]) -> str:
        """The user prompt for these inputs; every placeholder must be given."""
        names = {n for _, n, _, _ in string.Formatter().parse(self.template) if n}
        missing = names - set(inputs)
        if missing:
            raise KeyError(f"step {self.name!r} needs inputs {sorted(missing)}")
        return self.template.format_map({k: _as_text(v) for k, v in inputs.items()})

    def schema(self) -> dict[str, Any]:
        """The JSON schema of the answer, as sent to the judge (built once per output model)."""
        return copy.deepcopy(_schema_of(self.output))

    def fingerprint(self) -> str:
        """A short hash of everything that shapes this step's answers: name, version, prompts,
        output schema. Results scored under another fingerprint must not be mixed on resume."""
        parts = [self.name, self.version, self.instructions, self.template, _schema_of(self.output)]
        canonical = json.dumps(parts, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
        return hashlib.sha256(canonical.encode("utf-8")).hexdigest()[:16]


@functools.cache
def _schema_of(model: type[BaseModel]) -> dict[str, Any]:
    return model.model_json_schema()


def _as_text(value: Any) -> str:
    return value if isinstance(value, str) else str(value)
