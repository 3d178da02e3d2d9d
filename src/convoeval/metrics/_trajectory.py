"""Parts of TrajectoryMatch: calls paired with their results, tool errors, argument matching
and argument differences by path, and the one-to-one matching of made and expected calls."""

from __future__ import annotations

import json
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, cast

from convoeval.metrics._tool_calls import values_equal
from convoeval.schema import AIMessage, ToolCall, ToolMessage
from convoeval.schema.messages import Message

#: A whole-arguments matcher: (the agent's arguments, the reference arguments) -> match?
ArgsMatcher = Callable[[Mapping[str, Any], Mapping[str, Any]], bool]
#: How a call's arguments must match: one of `ARGS_MODES` or an `ArgsMatcher`.
ArgsMode = str | ArgsMatcher
ARGS_MODES = ("exact", "ignore", "subset", "superset")
#: Decides whether a tool result reports an error (the call then changed nothing).
ErrorDetector = Callable[[ToolMessage], bool]
#: At most this many argument differences are listed per call (hostile arguments stay small).
MAX_DIFFS = 50

_ERROR_TEXT = re.compile(r"\s*(error|exception)\b", re.IGNORECASE)


@dataclass(frozen=True)
class MadeCall:
    """A call the agent made: its position among all its calls, and the tool result, if any."""

    index: int
    call: ToolCall
    result: ToolMessage | None


def calls_with_results(messages: Sequence[Message]) -> list[MadeCall]:
    """Every tool call of every AIMessage, in order, with the ToolMessage answering it.

    The results are the ToolMessages right after the AIMessage; they pair by `tool_call_id` when
    every call and result has a distinct id, else by position (logs such as tau-bench's reuse
    ids across turns, and many carry none)."""
    made: list[MadeCall] = []
    for at, message in enumerate(messages):
        if not isinstance(message, AIMessage) or not message.tool_calls:
            continue
        block: list[ToolMessage] = []
        for later in messages[at + 1 :]:
            if not isinstance(later, ToolMessage):
                break
            block.append(later)
        calls = message.tool_calls
        ids = [c.id for c in calls]
        by_id = {r.tool_call_id: r for r in block}
        keyed = (
            None not in ids
            and len(set(ids)) == len(ids)
            and None not in by_id
            and len(by_id) == len(block)
        )
        for pos, call in enumerate(calls):
            at_pos = block[pos] if pos < len(block) else None
            result = by_id.get(call.id) if keyed else at_pos
            made.append(MadeCall(len(made), call, result))
    return made


def tool_error(result: ToolMessage) -> bool:
    """The default error detector: the result's text starts with the word "error" or
    "exception" (`Error: payment method not found`), is a JSON object with a non-empty
    `"error"`, or the message is marked as an error (LangChain `status="error"`, `is_error`)."""
    meta = result.metadata or {}
    langchain = meta.get("langchain_message")
    marks = [meta, langchain if isinstance(langchain, Mapping) else {}]
    if any(m.get("status") == "error" or m.get("is_error") is True for m in marks):
        return True
    text = result.content
    if _ERROR_TEXT.match(text):
        return True
    if text.lstrip().startswith("{"):
        try:
            data = json.loads(text)
        except ValueError:
            return False
        return isinstance(data, dict) and data.get("error") not in (None, False, "", {}, [])
    return False


def check_args_mode(mode: Any, where: str) -> ArgsMode:
    """`mode` if it is a known mode name or a callable, else `ValueError` naming `where`."""
    if callable(mode):
        return cast(ArgsMatcher, mode)
    if isinstance(mode, str) and mode in ARGS_MODES:
        return mode
    raise ValueError(f"{where}: {mode!r} is not one of {', '.join(ARGS_MODES)} or a callable")


def args_match(mode: ArgsMode, predicted: Mapping[str, Any], reference: Mapping[str, Any]) -> bool:
    """Whether the agent's arguments match the reference's under `mode`: `exact` (typed deep
    equality), `ignore`, `subset` (every argument the agent gave is in the reference, equal),
    `superset` (every reference argument was given, equal), or a callable."""
    if callable(mode):
        return bool(mode(predicted, reference))
    if mode == "ignore":
        return True
    if mode == "exact":
        return values_equal(predicted, reference)
    keys, other = (predicted, reference) if mode == "subset" else (reference, predicted)
    return all(k in other and values_equal(predicted[k], reference[k]) for k in keys)


def arg_diffs(
    mode: ArgsMode, predicted: Mapping[str, Any], reference: Mapping[str, Any]
) -> list[dict[str, Any]]:
    """The differing arguments by path (`address.zip`, `flights[1].date`) with both values; a
    side that lacks the argument is left out and `problem` says `missing` or `unexpected`.
    `subset` looks at the agent's arguments only, `superset` at the reference's only."""
    if mode == "subset":
        keys = list(predicted)
    elif mode == "superset":
        keys = list(reference)
    else:
        keys = list(dict.fromkeys([*reference, *predicted]))
    out: list[dict[str, Any]] = []
    for key in keys:
        _diff(
            str(key),
            key in predicted,
            predicted.get(key),
            key in reference,
            reference.get(key),
            out,
        )
    return out[:MAX_DIFFS]


def _diff(path: str, has_p: bool, p: Any, has_r: bool, r: Any, out: list[dict[str, Any]]) -> None:
    if len(out) >= MAX_DIFFS:
        return
    if not has_p:
        out.append({"path": path, "reference": r, "problem": "missing"})
    elif not has_r:
        out.append({"path": path, "predicted": p, "problem": "unexpected"})
    elif values_equal(p, r):
        return
    elif isinstance(p, Mapping) and isinstance(r, Mapping):
        for key in dict.fromkeys([*r, *p]):
            _diff(f"{path}.{key}", key in p, p.get(key), key in r, r.get(key), out)
    elif isinstance(p, list) and isinstance(r, list):
        for i in range(max(len(p), len(r))):
            has_pi, has_ri = i < len(p), i < len(r)
            pi, ri = p[i] if has_pi else None, r[i] if has_ri else None
            _diff(f"{path}[{i}]", has_pi, pi, has_ri, ri, out)
    else:
        out.append({"path": path, "predicted": p, "reference": r})


def match_calls(edges: list[list[int]], n_reference: int) -> list[tuple[int, int]]:
    """A maximum one-to-one matching of made calls (rows of `edges`: the reference calls each may
    match, ascending) to reference calls. In order first: each made call takes the first free
    reference call after the last one taken (so calls made in the reference's order pair up in
    order); then augmenting paths (iterative, any size) add what order cannot. Sorted pairs."""
    owner: dict[int, int] = {}  # reference index -> made index
    last = -1
    for row, cols in enumerate(edges):
        col = next((c for c in cols if c > last and c not in owner), None)
        if col is not None:
            owner[col] = row
            last = col
    taken = set(owner.values())
    for row in range(len(edges)):
        if row not in taken and _augment(row, edges, owner):
            taken.add(row)
    return sorted((row, col) for col, row in owner.items())


def _augment(start: int, edges: list[list[int]], owner: dict[int, int]) -> bool:
    """Find an augmenting path from made call `start` (depth-first, without recursion)."""
    seen: set[int] = set()
    stack: list[tuple[int, int]] = [(start, 0)]  # (made call, next edge to try)
    path: list[int] = []  # the reference call tried at each level of the stack
    while stack:
        row, at = stack[-1]
        cols = edges[row]
        while at < len(cols) and cols[at] in seen:
            at += 1
        if at == len(cols):
            stack.pop()
            if path:
                path.pop()
            continue
        col = cols[at]
        stack[-1] = (row, at + 1)
        seen.add(col)
        if col not in owner:
            path.append(col)
            for (r, _), c in zip(stack, path, strict=True):
                owner[c] = r
            return True
        path.append(col)
        stack.append((owner[col], 0))
    return False


def out_of_order(pairs: list[tuple[int, int]]) -> list[tuple[int, int]]:
    """The pairs (sorted by made call) outside a longest run whose reference indices increase:
    the fewest calls that must move to put the matched calls in the reference's order."""
    tails: list[int] = []  # tails[k]: position in pairs of the last item of the best run k+1
    back: list[int] = [-1] * len(pairs)
    for pos, (_, col) in enumerate(pairs):
        lo, hi = 0, len(tails)
        while lo < hi:
            mid = (lo + hi) // 2
            if pairs[tails[mid]][1] < col:
                lo = mid + 1
            else:
                hi = mid
        back[pos] = tails[lo - 1] if lo else -1
        if lo == len(tails):
            tails.append(pos)
        else:
            tails[lo] = pos
    keep: set[int] = set()
    at = tails[-1] if tails else -1
    while at != -1:
        keep.add(at)
        at = back[at]
    return [pair for pos, pair in enumerate(pairs) if pos not in keep]
