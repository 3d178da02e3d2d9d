"""Human labels for `convoeval agree`: their shapes, checked with FILE:LINE, read from a record's
`metadata.labels` or from a labels file (JSONL keyed by record id), and matched to the verdicts
a metric wrote in its row details. docs/agreement.md describes the shapes.
"""

from __future__ import annotations

import math
import os
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from convoeval.errors import ConvoevalError
from convoeval.io import strict_json


class LabelsError(ConvoevalError, ValueError):
    """A label of the wrong shape, or a labels file that cannot be read (FILE:LINE: problem)."""


@dataclass(frozen=True)
class VerdictShape:
    """Where a metric's verdicts sit in its row details, which field a label key names, and the
    true/false fields a label may give (the first is what a bare true/false means)."""

    listed: str
    key: str
    kinds: tuple[str, ...]


#: The metrics whose verdicts can be labelled one by one.
VERDICTS: dict[str, VerdictShape] = {
    "topic_adherence": VerdictShape("topics", "topic", ("answered", "in_scope")),
    "conversation_relevancy": VerdictShape("verdicts", "exchange", ("relevant",)),
    "turn_relevancy": VerdictShape("verdicts", "exchange", ("relevant",)),
    "tool_use": VerdictShape("verdicts", "call", ("right_tool", "right_arguments")),
}
#: The verdict kind of a record-level label.
SCORE = "score"
#: One metric's labels of one record: a score label, or {label key: {kind: bool}}.
Labels = float | bool | dict[str, dict[str, bool]]


def _index(key: Any) -> int | None:
    """A label key as a verdict number: an int, or a string of digits (JSON keys are strings)."""
    if isinstance(key, int) and not isinstance(key, bool):
        return key
    if isinstance(key, str) and key.strip().isdigit():
        return int(key.strip())
    return None


def check_metric_labels(metric: str, value: Any, where: str) -> Labels:
    """One metric's labels in their normal form, or `LabelsError` naming `where`."""
    at = f"{where}: labels.{metric}"
    if isinstance(value, bool):
        return value
    if isinstance(value, int | float):
        if not math.isfinite(value):
            raise LabelsError(f"{at}: a score label must be a finite number")
        return float(value)
    if not isinstance(value, Mapping):
        raise LabelsError(
            f"{at}: a label is a number or true/false (the score), or a mapping of verdicts; "
            f"got {type(value).__name__}"
        )
    shape = VERDICTS.get(metric)
    if shape is None:
        raise LabelsError(
            f"{at}: per-verdict labels are read for {', '.join(sorted(VERDICTS))} only; "
            "give a number or true/false for the score"
        )
    verdicts: dict[str, dict[str, bool]] = {}
    for key, item in value.items():
        if shape.key != "topic" and _index(key) is None:
            raise LabelsError(f"{at}: key {key!r} is not a {shape.key} number")
        if isinstance(item, bool):
            verdicts[str(key)] = {shape.kinds[0]: item}
            continue
        if not isinstance(item, Mapping) or not item:
            raise LabelsError(
                f"{at}.{key}: give true/false ({shape.kinds[0]}) or a mapping of "
                f"{', '.join(shape.kinds)} to true/false"
            )
        for kind, flag in item.items():
            if kind not in shape.kinds:
                raise LabelsError(
                    f"{at}.{key}: unknown verdict {kind!r} ({', '.join(shape.kinds)})"
                )
            if not isinstance(flag, bool):
                raise LabelsError(f"{at}.{key}.{kind}: must be true or false")
        verdicts[str(key)] = dict(item)
    return verdicts


def check_labels(labels: Any, where: str) -> dict[str, Labels]:
    """Every metric's labels of one record (a mapping metric -> labels), checked."""
    if not isinstance(labels, Mapping):
        raise LabelsError(f"{where}: labels must be a mapping of metric names to labels")
    return {str(m): check_metric_labels(str(m), v, where) for m, v in labels.items()}


def labels_in_row(row: Mapping[str, Any]) -> dict[str, Labels]:
    """The labels a results row carries in its sample's `metadata.labels` (none: empty)."""
    metadata = (row.get("sample") or {}).get("metadata") or {}
    if not isinstance(metadata, Mapping) or metadata.get("labels") is None:
        return {}
    return check_labels(metadata["labels"], str(row.get("where") or f"row {row.get('index')}"))


def read_labels_file(path: str | os.PathLike[str]) -> dict[str, tuple[str, dict[str, Labels]]]:
    """Record id -> (FILE:LINE, labels) from a JSONL file of `{"id": ..., METRIC: labels}`
    lines (or `{"id": ..., "labels": {...}}`); any bad line is `LabelsError` naming FILE:LINE."""
    name = os.fspath(path)
    if not os.path.isfile(name):
        raise LabelsError(f"{name}: no such labels file")
    found: dict[str, tuple[str, dict[str, Labels]]] = {}
    with open(name, encoding="utf-8") as handle:
        for number, line in enumerate(handle, start=1):
            where = f"{name}:{number}"
            if not line.strip():
                continue
            try:
                data = strict_json.loads(line)  # the rules of every reader: no NaN, no repeats
            except ValueError as exc:
                raise LabelsError(f"{where}: not a JSON object ({exc})") from exc
            if not isinstance(data, dict):
                raise LabelsError(f"{where}: a labels line must be a JSON object")
            record = data.pop("id", None)
            if not isinstance(record, str | int) or isinstance(record, bool):
                raise LabelsError(f"{where}: a labels line needs the record's 'id' (a string)")
            if str(record) in found:
                first = found[str(record)][0]
                raise LabelsError(f"{where}: id {str(record)!r} is labelled already at {first}")
            labels = data["labels"] if set(data) == {"labels"} else data
            found[str(record)] = (where, check_labels(labels, f"{where} (id {str(record)!r})"))
    return found


def _matches(shape: VerdictShape, key: str, item: Mapping[str, Any]) -> bool:
    """Whether a label key names this verdict: its number, or (topics) its label or message."""
    if shape.key == "topic":
        number = _index(key)
        if number is not None:
            return bool(item.get("message_index") == number)
        return str(item.get("topic", "")).strip().casefold() == key.strip().casefold()
    return bool(item.get(shape.key) == _index(key))


def judged_verdicts(shape: VerdictShape, details: Any) -> list[Mapping[str, Any]]:
    """The verdicts a metric wrote in its row details (none when it wrote no list)."""
    listed = details.get(shape.listed) if isinstance(details, Mapping) else None
    return [v for v in listed if isinstance(v, Mapping)] if isinstance(listed, list) else []


def pair_verdicts(
    shape: VerdictShape, kind: str, labels: Mapping[str, Mapping[str, bool]], judged: list[Any]
) -> tuple[list[tuple[str, bool, Mapping[str, Any]]], int, int]:
    """(label key, label, verdict) pairs of one kind, labelled keys with no such verdict
    (unscored) and verdicts with no label (unlabelled)."""
    pairs = []
    missing = 0
    used: set[int] = set()
    for key, item in labels.items():
        if kind not in item:
            continue
        hits = [
            (i, v)
            for i, v in enumerate(judged)
            if _matches(shape, key, v) and isinstance(v.get(kind), bool)
        ]
        if not hits:
            missing += 1
        for i, verdict in hits:
            used.add(i)
            pairs.append((key, item[kind], verdict))
    unlabelled = sum(
        1 for i, v in enumerate(judged) if i not in used and isinstance(v.get(kind), bool)
    )
    return pairs, missing, unlabelled
