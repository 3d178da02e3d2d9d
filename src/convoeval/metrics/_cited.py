"""Extraction steps that cite messages: the schema enumerates the user messages they may cite.

A fact, intention or topic names the user message it comes from. `CitedMessages` narrows that
field of each request's schema to an `enum` of the user-message numbers given in the input, as
keyed verdict steps enumerate their keys, so a server honouring structured output cannot cite an
assistant message (which the step's check would refuse, failing the metric after one re-ask).
"""

from __future__ import annotations

import copy
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class CitedMessages:
    """The answer shape (`Step.shape`) of a step whose `items` list cites messages in `field`;
    the citable numbers are the input's `citable` attribute (a list of message indexes)."""

    items: str
    field: str
    citable: str

    def schema(
        self, inputs: Any, base: dict[str, Any], *, reason_first: bool = False
    ) -> dict[str, Any]:
        """`base` with each item's `field` limited to the input's citable message numbers."""
        schema = copy.deepcopy(base)
        ref = schema["properties"][self.items]["items"]["$ref"]
        item = schema["$defs"][ref.rsplit("/", 1)[-1]]
        # the type kept beside the enum: OpenAI's strict mode asks every schema for its type
        item["properties"][self.field] = {
            "type": "integer",
            "enum": list(getattr(inputs, self.citable)),
        }
        return schema

    def decode(self, inputs: Any, data: Any) -> Any:
        """Answers need no reshaping: the schema only narrows the values allowed."""
        return data
