"""Comparing tool calls: typed deep equality of arguments, pair scores and call alignment.

Shared by ToolCallAccuracy and ToolCallF1. Values compare as JSON values: numbers by value (int 1
equals float 1.0), but a bool is never a number and a string is never a number; objects compare by
content (key order ignored); arrays element by element, in order; NaN equals NaN. Tool-call ids
are ignored.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from convoeval._text import nth
from convoeval.schema import ToolCall

#: A user comparator: (argument name, predicted value, reference value) -> score in [0, 1].
ArgComparator = Callable[[str, Any, Any], float | bool]


def _is_number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _is_nan(value: Any) -> bool:
    return isinstance(value, float) and math.isnan(value)


def values_equal(predicted: Any, reference: Any) -> bool:
    """Typed deep equality of two argument values (see the module docstring for the rules)."""
    if isinstance(predicted, bool) or isinstance(reference, bool):
        return type(predicted) is type(reference) and predicted == reference
    if _is_number(predicted) or _is_number(reference):
        if not (_is_number(predicted) and _is_number(reference)):
            return False
        if _is_nan(predicted) and _is_nan(reference):
            return True
        return bool(predicted == reference)
    if isinstance(predicted, str) or isinstance(reference, str):
        return isinstance(predicted, str) and isinstance(reference, str) and predicted == reference
    if predicted is None or reference is None:
        return predicted is None and reference is None
    if isinstance(predicted, Mapping) or isinstance(reference, Mapping):
        if not (isinstance(predicted, Mapping) and isinstance(reference, Mapping)):
            return False
        if set(predicted) != set(reference):
            return False
        return all(values_equal(predicted[key], reference[key]) for key in predicted)
    if _is_array(predicted) or _is_array(reference):
        if not (_is_array(predicted) and _is_array(reference)):
            return False
        if len(predicted) != len(reference):
            return False
        return all(values_equal(p, r) for p, r in zip(predicted, reference, strict=True))
    return type(predicted) is type(reference) and bool(predicted == reference)


def _is_array(value: Any) -> bool:
    return isinstance(value, Sequence) and not isinstance(value, str | bytes)


def canonical(value: Any) -> Hashable:
    """A hashable key such that `canonical(a) == canonical(b)` exactly when `values_equal(a, b)`."""
    if isinstance(value, bool):
        return ("bool", value)
    if _is_number(value):
        if _is_nan(value):
            return ("nan",)
        return ("num", value)  # 1 == 1.0 and hash(1) == hash(1.0)
    if isinstance(value, str):
        return ("str", value)
    if value is None:
        return ("null",)
    if isinstance(value, Mapping):
        return ("obj", frozenset((key, canonical(item)) for key, item in value.items()))
    if _is_array(value):
        return ("arr", tuple(canonical(item) for item in value))
    if isinstance(value, Hashable):
        return ("other", type(value).__qualname__, value)
    return ("other", type(value).__qualname__, repr(value))


def call_key(call: ToolCall) -> Hashable:
    """The multiset key of a call: its name and canonical arguments (the id is ignored)."""
    return (call.name, canonical(call.args))


@dataclass(frozen=True)
class PairScore:
    """How well one predicted call matches one reference call, and which arguments differ."""

    score: float
    same_name: bool
    differing: list[str] = field(default_factory=list)
    missing: list[str] = field(default_factory=list)
    extra: list[str] = field(default_factory=list)
    partial: dict[str, float] = field(default_factory=dict)


def argument_score(
    comparator: ArgComparator | None, name: str, predicted: Any, reference: Any
) -> float:
    """One argument's score: typed deep equality, or the comparator's score checked in [0, 1]."""
    if comparator is None:
        return 1.0 if values_equal(predicted, reference) else 0.0
    raw = comparator(name, predicted, reference)
    score = float(raw)
    if not (0.0 <= score <= 1.0):  # also rejects NaN
        option = getattr(comparator, "option", "arg_comparator")
        raise ValueError(
            f"{option} returned {raw!r} for argument {name!r}: it must be a bool "
            "or a number in [0, 1]"
        )
    return score


def pair_score(
    predicted: ToolCall, reference: ToolCall, comparator: ArgComparator | None = None
) -> PairScore:
    """0 if the names differ; else the mean argument score over the union of argument names.

    An argument on one side only scores 0; two calls without arguments score 1.0.
    """
    if predicted.name != reference.name:
        return PairScore(0.0, same_name=False)
    names = sorted(set(predicted.args) | set(reference.args))
    if not names:
        return PairScore(1.0, same_name=True)
    total = 0.0
    differing: list[str] = []
    missing: list[str] = []
    extra: list[str] = []
    partial: dict[str, float] = {}
    for name in names:
        if name not in predicted.args:
            missing.append(name)
        elif name not in reference.args:
            extra.append(name)
        else:
            score = argument_score(comparator, name, predicted.args[name], reference.args[name])
            total += score
            if score < 1.0:
                differing.append(name)
                if score > 0.0:
                    partial[name] = score
    return PairScore(total / len(names), True, differing, missing, extra, partial)


def align_in_order(scores: list[list[PairScore]]) -> list[tuple[int, int]]:
    """Order-preserving alignment (no gap cost) maximizing the sum of pair scores.

    `scores[i][j]` scores predicted i against reference j. Only same-name pairs are matched; among
    equal sums the alignment with more same-name pairs wins, so a right tool called with wrong
    arguments shows up as a 0-score match rather than as a missing and an extra call.
    """
    n = len(scores)
    m = len(scores[0]) if n else 0
    # best[i][j]: (score sum, matched pairs) using the first i predicted and first j reference.
    best = [[(0.0, 0)] * (m + 1) for _ in range(n + 1)]
    for i in range(1, n + 1):
        for j in range(1, m + 1):
            options = [best[i - 1][j], best[i][j - 1]]
            pair = scores[i - 1][j - 1]
            if pair.same_name:
                total, count = best[i - 1][j - 1]
                options.append((total + pair.score, count + 1))
            best[i][j] = max(options)
    pairs: list[tuple[int, int]] = []
    i, j = n, m
    while i > 0 and j > 0:
        pair = scores[i - 1][j - 1]
        if pair.same_name:
            total, count = best[i - 1][j - 1]
            if best[i][j] == (total + pair.score, count + 1):
                pairs.append((i - 1, j - 1))
                i, j = i - 1, j - 1
                continue
        if best[i][j] == best[i - 1][j]:
            i -= 1
        else:
            j -= 1
    pairs.reverse()
    return pairs


def align_any_order(scores: list[list[PairScore]]) -> list[tuple[int, int]]:
    """One-to-one matching regardless of order maximizing the sum of pair scores (Hungarian).

    Pairs that score 0 are dropped; leftover same-name calls are then paired in order (adding 0),
    so the details still show a right tool called with wrong arguments.
    """
    n = len(scores)
    m = len(scores[0]) if n else 0
    if n == 0 or m == 0:
        return []
    weights = [[pair.score for pair in row] for row in scores]
    pairs = [(i, j) for i, j in max_weight_matching(weights) if scores[i][j].score > 0.0]
    used_p = {i for i, _ in pairs}
    used_r = {j for _, j in pairs}
    for i in range(n):
        if i in used_p:
            continue
        for j in range(m):
            if j not in used_r and scores[i][j].same_name:
                pairs.append((i, j))
                used_p.add(i)
                used_r.add(j)
                break
    return sorted(pairs)


def max_weight_matching(weights: list[list[float]]) -> list[tuple[int, int]]:
    """Maximum-weight one-to-one assignment of rows to columns (rectangular, exact).

    The Hungarian method with potentials, O(n^2 m) for n <= m; every row of the smaller side is
    assigned. Returns (row, column) pairs sorted by row.
    """
    rows = len(weights)
    cols = len(weights[0]) if rows else 0
    if rows == 0 or cols == 0:
        return []
    if rows > cols:
        flipped = [[weights[r][c] for r in range(rows)] for c in range(cols)]
        return sorted((r, c) for c, r in max_weight_matching(flipped))
    cost = [[-w for w in row] for row in weights]  # minimise the negated weights
    inf = math.inf
    u = [0.0] * (rows + 1)  # row potentials (1-based, index 0 is a sentinel)
    v = [0.0] * (cols + 1)  # column potentials
    owner = [0] * (cols + 1)  # owner[c]: the row assigned to column c (0: none)
    way = [0] * (cols + 1)
    for row in range(1, rows + 1):
        owner[0] = row
        col0 = 0
        slack = [inf] * (cols + 1)
        used = [False] * (cols + 1)
        while True:
            used[col0] = True
            r0 = owner[col0]
            delta = inf
            col1 = 0
            for c in range(1, cols + 1):
                if used[c]:
                    continue
                reduced = cost[r0 - 1][c - 1] - u[r0] - v[c]
                if reduced < slack[c]:
                    slack[c] = reduced
                    way[c] = col0
                if slack[c] < delta:
                    delta = slack[c]
                    col1 = c
            for c in range(cols + 1):
                if used[c]:
                    u[owner[c]] += delta
                    v[c] -= delta
                else:
                    slack[c] -= delta
            col0 = col1
            if owner[col0] == 0:
                break
        while col0:
            col1 = way[col0]
            owner[col0] = owner[col1]
            col0 = col1
    return sorted((owner[c] - 1, c - 1) for c in range(1, cols + 1) if owner[c] != 0)


def describe_call(call: ToolCall, index: int) -> dict[str, Any]:
    """A JSON-ready description of a call for details: its index, name and arguments."""
    return {"index": index, "name": call.name, "args": call.args}


def named_calls(calls: Sequence[Mapping[str, Any]], key: str = "index") -> str:
    """Described calls for a reason, `name (#N)` each, N counted from 1 (`nth`)."""
    return ", ".join(f"{c['name']} (#{nth(c[key])})" for c in calls)
