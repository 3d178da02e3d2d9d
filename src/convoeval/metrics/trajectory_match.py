"""TrajectoryMatch: did the agent make the expected tool calls? 1.0 or 0.0, no judge.

The agent's calls (every tool call of every AIMessage) are matched one to one with
`reference_tool_calls`: same tool name, arguments matching under the tool's argument mode. `mode`
says what must hold: `strict` (the same calls in the same order), `unordered` (the same calls in
any order), `subset` (every call made is expected; expected calls may be left out), `superset`
(every expected call was made; more calls are allowed). Calls can be narrowed to the tools that
matter (`only_tools` / `ignore_tools`, on both sides), and calls whose result reports an error can
be left out (`skip_errors`): a failed call changed nothing. The details name every missing,
extra, out-of-order and mismatched call, with the path of each differing argument.
"""

from __future__ import annotations

import json
from collections import defaultdict
from collections.abc import Hashable, Mapping, Sequence
from typing import Any

from convoeval._text import nth
from convoeval.metrics._base import Ask, Metric, MetricResult
from convoeval.metrics._registry import register
from convoeval.metrics._tool_calls import call_key, describe_call, named_calls
from convoeval.metrics._trajectory import (
    ArgsMode,
    ErrorDetector,
    MadeCall,
    arg_diffs,
    args_match,
    calls_with_results,
    check_args_mode,
    match_calls,
    out_of_order,
    tool_error,
)
from convoeval.schema import MultiTurnSample, ToolCall

MODES = ("strict", "unordered", "subset", "superset")
#: The problems that fail each mode (the others are listed in the details but allowed).
_FAILS = {
    "strict": ("missing", "extra", "mismatched", "out_of_order"),
    "unordered": ("missing", "extra", "mismatched"),
    "subset": ("extra", "mismatched"),
    "superset": ("missing", "mismatched"),
}


@register
class TrajectoryMatch(Metric):
    """Agent's tool calls vs the reference calls: strict, unordered, subset or superset; 1 or 0."""

    name = "trajectory_match"
    required = ("user_input", "reference_tool_calls")
    needs_llm = False
    uses_judge = False
    default_threshold = 1.0

    def __init__(
        self,
        mode: str = "strict",
        args_mode: ArgsMode = "exact",
        args_mode_by_tool: Mapping[str, ArgsMode] | None = None,
        only_tools: Sequence[str] | str | None = None,
        ignore_tools: Sequence[str] | str | None = None,
        skip_errors: bool | ErrorDetector = False,
        *,
        threshold: float | None = None,
    ) -> None:
        """`only_tools` / `ignore_tools` take names (a string: separated by `|` or spaces, as
        `-m trajectory_match:only_tools=a|b` gives); `skip_errors=True` leaves out calls whose
        result `tool_error` flags, a callable is used as the error detector instead."""
        super().__init__(threshold=threshold)
        if mode not in MODES:
            raise ValueError(f"mode: {mode!r} is not one of {', '.join(MODES)}")
        if only_tools is not None and ignore_tools is not None:
            raise ValueError("give only_tools (the tools that count) or ignore_tools, not both")
        self.mode = mode
        self.args_mode = check_args_mode(args_mode, "args_mode")
        self.args_mode_by_tool = {
            str(tool): check_args_mode(m, f"args_mode_by_tool[{tool!r}]")
            for tool, m in (args_mode_by_tool or {}).items()
        }
        self.only_tools = _names(only_tools)
        self.ignore_tools = _names(ignore_tools)
        if not (isinstance(skip_errors, bool) or callable(skip_errors)):
            raise ValueError(f"skip_errors: {skip_errors!r} is not true, false or a callable")
        self.skip_errors = skip_errors

    def __repr__(self) -> str:
        options = ", ".join(f"{k}={v!r}" for k, v in self.config().items())
        return f"TrajectoryMatch({options}, threshold={self.threshold!r})"

    def config(self) -> dict[str, Any]:
        """Every option; callables by their import path."""
        detector = self.skip_errors
        return {
            "mode": self.mode,
            "args_mode": _named(self.args_mode),
            "args_mode_by_tool": {t: _named(m) for t, m in sorted(self.args_mode_by_tool.items())},
            "only_tools": None if self.only_tools is None else sorted(self.only_tools),
            "ignore_tools": None if self.ignore_tools is None else sorted(self.ignore_tools),
            "skip_errors": detector if isinstance(detector, bool) else _named(detector),
        }

    def counts(self, tool: str) -> bool:
        """Whether calls of `tool` count (`only_tools` / `ignore_tools`)."""
        if self.only_tools is not None:
            return tool in self.only_tools
        return self.ignore_tools is None or tool not in self.ignore_tools

    def mode_for(self, tool: str) -> ArgsMode:
        """The argument mode of `tool`: its own, else `args_mode`."""
        return self.args_mode_by_tool.get(tool, self.args_mode)

    async def _score(self, sample: MultiTurnSample, ask: Ask) -> MetricResult:
        made, errors, ignored = self._made(calls_with_results(sample.user_input))
        reference = [
            (j, call)
            for j, call in enumerate(sample.reference_tool_calls or [])
            if self.counts(call.name)
        ]
        ignored_ref = len(sample.reference_tool_calls or []) - len(reference)
        pairs = match_calls(self._edges(made, [call for _, call in reference]), len(reference))
        late = set(out_of_order(pairs))
        matched_p = {i for i, _ in pairs}
        matched_r = {j for _, j in pairs}
        left_p = [i for i in range(len(made)) if i not in matched_p]
        left_r = [j for j in range(len(reference)) if j not in matched_r]
        mismatched: list[dict[str, Any]] = []
        for i in list(left_p):
            call = made[i].call
            j = next((j for j in left_r if reference[j][1].name == call.name), None)
            if j is None:
                continue
            left_p.remove(i)
            left_r.remove(j)
            expected = reference[j][1]
            entry = _pair(made[i], reference[j][0], call.name)
            entry["differences"] = arg_diffs(self.mode_for(call.name), call.args, expected.args)
            mismatched.append(entry)
        details: dict[str, Any] = {
            "mode": self.mode,
            "counted": {"made": len(made), "expected": len(reference)},
            "left_out": {
                "errors": errors,
                "ignored_made": ignored,
                "ignored_expected": ignored_ref,
            },
            "matched": [_pair(made[i], reference[j][0], made[i].call.name) for i, j in pairs],
            "missing": [describe_call(reference[j][1], reference[j][0]) for j in left_r],
            "extra": [describe_call(made[i].call, made[i].index) for i in left_p],
            "out_of_order": [
                _pair(made[i], reference[j][0], made[i].call.name) for i, j in sorted(late)
            ],
            "mismatched": mismatched,
        }
        failing = [kind for kind in _FAILS[self.mode] if details[kind]]
        details["failing"] = failing
        return MetricResult(0.0 if failing else 1.0, _reason(details), details)

    def _edges(self, made: list[MadeCall], reference: list[ToolCall]) -> list[list[int]]:
        """For each made call, the reference calls it matches (ascending). Exact arguments go
        by hash (linear in the calls); other modes compare the calls of the same tool."""
        by_key: dict[Hashable, list[int]] = defaultdict(list)
        by_name: dict[str, list[int]] = defaultdict(list)
        for j, call in enumerate(reference):
            by_key[call_key(call)].append(j)
            by_name[call.name].append(j)
        edges = []
        for m in made:
            mode = self.mode_for(m.call.name)
            if mode == "exact":
                edges.append(by_key.get(call_key(m.call), []))
                continue
            edges.append(
                [
                    j
                    for j in by_name.get(m.call.name, [])
                    if args_match(mode, m.call.args, reference[j].args)
                ]
            )
        return edges

    def _made(self, made: list[MadeCall]) -> tuple[list[MadeCall], list[dict[str, Any]], int]:
        """The calls that count, the calls left out for an error result, and how many calls
        of ignored tools were left out."""
        detector = tool_error if self.skip_errors is True else self.skip_errors
        kept: list[MadeCall] = []
        errors: list[dict[str, Any]] = []
        ignored = 0
        for m in made:
            if not self.counts(m.call.name):
                ignored += 1
            elif detector and m.result is not None and detector(m.result):
                entry = describe_call(m.call, m.index)
                entry["result"] = m.result.content[:200]
                errors.append(entry)
            else:
                kept.append(m)
        return kept, errors, ignored


def _names(tools: Sequence[str] | str | None) -> frozenset[str] | None:
    if tools is None:
        return None
    if isinstance(tools, str):
        tools = tools.replace("|", " ").split()
    return frozenset(str(t) for t in tools)


def _named(value: Any) -> Any:
    """A mode name as is; a callable by its import path."""
    if isinstance(value, str):
        return value
    module = getattr(value, "__module__", "?")
    return f"{module}.{getattr(value, '__qualname__', type(value).__name__)}"


def _pair(made: MadeCall, reference: int, name: str) -> dict[str, Any]:
    return {"made": made.index, "expected": reference, "name": name}


def _reason(details: dict[str, Any]) -> str:
    mode = details["mode"]
    counted = details["counted"]
    head = (
        f"{len(details['matched'])} of {counted['expected']} expected calls matched among "
        f"{counted['made']} counted calls made ({mode})."
    )
    parts = [head]
    if details["missing"]:
        parts.append(f"Missing: {named_calls(details['missing'])}.")
    if details["extra"]:
        parts.append(f"Extra: {named_calls(details['extra'])}.")
    if details["out_of_order"]:
        parts.append(f"Out of order: {named_calls(details['out_of_order'], 'made')}.")
    for entry in details["mismatched"]:
        shown = "; ".join(_difference(d) for d in entry["differences"][:5])
        parts.append(
            f"{entry['name']} (#{nth(entry['made'])} vs expected #{nth(entry['expected'])}) has "
            f"other arguments: {shown or 'rejected by the argument matcher'}."
        )
    left = details["left_out"]
    if left["errors"]:
        parts.append(f"Left out for an error result: {named_calls(left['errors'])}.")
    verdict = "Fails" if details["failing"] else "Matches"
    parts.append(f"{verdict} ({', '.join(details['failing']) or 'nothing that fails ' + mode}).")
    return " ".join(parts)


def _difference(diff: dict[str, Any]) -> str:
    path = diff["path"]
    if diff.get("problem") == "missing":
        return f"{path} missing (expected {_short(diff['reference'])})"
    if diff.get("problem") == "unexpected":
        return f"{path} not expected ({_short(diff['predicted'])})"
    return f"{path}: {_short(diff['predicted'])} vs {_short(diff['reference'])}"


def _short(value: Any) -> str:
    text = json.dumps(value, ensure_ascii=False, default=repr)
    return text if len(text) <= 60 else text[:57] + "..."
