"""Helpers shared by judge metrics: keyed verdicts that cannot misalign, and ratios.

A judge answers "one verdict per item, keyed by the item". `KeyedVerdicts` narrows each request's
answer schema to exactly the keys asked (an object with one required property per key, no
others), so a server honouring structured output cannot leave one out, add one or repeat one;
`keyed_check` still finds missing, extra or repeated keys for servers that do not, so the judge
layer re-asks instead of padding.
"""

from __future__ import annotations

import copy
from collections import Counter
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from convoeval.schema.render import quote


class KeyedInput(Protocol):
    """A step input that knows the keys its answer must hold, one verdict each, in order."""

    def expected_keys(self) -> Sequence[Hashable]:
        """The keys asked about."""
        ...


def keyed_check(key_field: str) -> Callable[[KeyedInput, Any], str | None]:
    """A step check: `output.verdicts` must hold exactly one verdict per `inputs.expected_keys()`,
    each verdict naming its key in `key_field`."""

    def check(inputs: KeyedInput, output: Any) -> str | None:
        expected = list(inputs.expected_keys())
        given = Counter(getattr(v, key_field) for v in output.verdicts)
        missing = [k for k in expected if k not in given]
        extra = [k for k in given if k not in expected]
        repeated = [k for k, n in given.items() if n > 1 and k in expected]
        problems = []
        if missing:
            problems.append(f"missing verdicts for {missing}")
        if extra:
            problems.append(f"verdicts for unknown {key_field} {extra}")
        if repeated:
            problems.append(f"more than one verdict for {repeated}")
        if not problems:
            return None
        return "; ".join(problems) + f" (give exactly one verdict for each of {expected})"

    return check


def key_ids(keys: Sequence[Hashable]) -> list[str]:
    """The property name of each key in a narrowed schema: an integer key (message, exchange,
    call number) as its digits; any other key (a topic label) as a short stable id T1, T2, ...
    by position, shown next to the label in the prompt."""
    return [
        str(key) if isinstance(key, int) and not isinstance(key, bool) else f"T{n}"
        for n, key in enumerate(keys, 1)
    ]


def keyed_listing(labels: Sequence[str]) -> str:
    """Labels from data as `- T1: "label"` lines: each label's id (`key_ids`), its quoted text."""
    return "\n".join(
        f"- {key}: {quote(label)}" for key, label in zip(key_ids(labels), labels, strict=True)
    )


#: The rationale property added to a verdict that has none, when reasons come first.
_REASON = {"type": "string", "maxLength": 300, "description": "Why, in one short sentence."}


@dataclass(frozen=True)
class KeyedVerdicts:
    """The answer shape of a keyed step (`Step.shape`): `verdicts` sent as an object with exactly
    one required property per expected key (`key_ids`), each holding that key's verdict without
    its key field; an answer in that form reads back as the output model's list of verdicts.

    Answers in list form (servers without structured output, the cache, scripts) pass as they
    are, an item keyed by an id instead of its label being given its label.

    With `value_field`, a verdict whose only other field is that one is sent as the bare value
    under its key (`{"T1": true}`, a third of the tokens of `{"T1": {"answered": true}}`); a
    verdict given as an object still reads back.
    """

    key_field: str
    value_field: str | None = None

    def schema(
        self, inputs: KeyedInput, base: dict[str, Any], *, reason_first: bool = False
    ) -> dict[str, Any]:
        """`base` with `verdicts` narrowed to the keys of `inputs` (with `reason_first`, a
        verdict without a rationale gets one, asked before the verdict)."""
        ids = key_ids(list(inputs.expected_keys()))
        schema = copy.deepcopy(base)
        listing = schema["properties"]["verdicts"]
        ref = listing["items"]["$ref"]
        item = schema["$defs"][ref.rsplit("/", 1)[-1]]  # narrowed in place: the list is replaced
        item["properties"].pop(self.key_field)
        item["required"] = [r for r in item.get("required", []) if r != self.key_field]
        item["additionalProperties"] = False
        if reason_first and "reason" not in item["properties"]:
            item["properties"] = {"reason": dict(_REASON), **item["properties"]}
            item["required"] = ["reason", *item["required"]]
        value: dict[str, Any] = {"$ref": ref}  # one shared definition
        if self.value_field is not None and list(item["properties"]) == [self.value_field]:
            value = item["properties"][self.value_field]
            del schema["$defs"][ref.rsplit("/", 1)[-1]]
            if not schema["$defs"]:
                del schema["$defs"]
        schema["properties"]["verdicts"] = {
            "type": "object",
            "description": listing.get("description", "One verdict per key, by its key."),
            "properties": {key: value for key in ids},
            "required": ids,
            "additionalProperties": False,
        }
        return schema

    def decode(self, inputs: KeyedInput, data: Any) -> Any:
        """Verdicts given as an object of keys read back as a list of keyed verdicts."""
        if not isinstance(data, dict):
            return data
        keys = list(inputs.expected_keys())
        by_id = dict(zip(key_ids(keys), keys, strict=True))
        verdicts = data.get("verdicts")
        if isinstance(verdicts, dict):
            items = [
                {**value, self.key_field: by_id.get(name, name)}
                if isinstance(value, dict)
                else self._bare(by_id.get(name, name), value)
                for name, value in verdicts.items()
            ]
            return {**data, "verdicts": items}
        if isinstance(verdicts, list):
            items = [
                {**item, self.key_field: by_id[item[self.key_field]]}
                if isinstance(item, dict)
                and isinstance(item.get(self.key_field), str)
                and item[self.key_field] in by_id
                and item[self.key_field] not in keys
                else item
                for item in verdicts
            ]
            return {**data, "verdicts": items}
        return data

    def _bare(self, key: Any, value: Any) -> Any:
        """A verdict sent as its bare value, as the verdict object (as is without `value_field`)."""
        if self.value_field is None:
            return value
        return {self.key_field: key, self.value_field: value}


def ratio(hits: int, errors: int, empty_note: str) -> tuple[float, str | None]:
    """hits / (hits + errors); an empty denominator (no error of that kind possible) gives 1.0."""
    if hits + errors == 0:
        return 1.0, f"{empty_note}, so no error of this kind was possible: counted as 1.0"
    return hits / (hits + errors), None
