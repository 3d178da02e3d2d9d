"""Ragas's `UserWarning`s from ToolCallAccuracy (issue 34 §1), emitted the way Ragas emits them
(`warnings.warn(..., UserWarning)`) in either compat mode, and also ending the reason."""

from __future__ import annotations

import asyncio
import json
import warnings
from pathlib import Path

import pytest

from _cli import convoeval
from convoeval import AIMessage, HumanMessage, MultiTurnSample, ToolCall, ToolCallAccuracy

A = ToolCall(name="a", args={"x": 1})
B = ToolCall(name="b", args={})


def _sample(made: list[ToolCall], expected: list[ToolCall]) -> MultiTurnSample:
    return MultiTurnSample(
        user_input=[HumanMessage(content="Go."), AIMessage(content="", tool_calls=made)],
        reference_tool_calls=expected,
    )


CASES = [
    ("no predicted calls", [], [A], r"^No tool calls found in the user input$"),
    ("empty reference", [A], [], r"^Reference tool calls are empty but predictions exist$"),
    (
        "length mismatch",
        [A, B, B],
        [A, B],
        r"^Length mismatch: predicted tool calls \(3\) vs reference tool calls \(2\)\. "
        r"Only the first 2 tool calls will be compared\.$",
    ),
]


@pytest.mark.parametrize("compat", ["convoeval", "ragas"])
@pytest.mark.parametrize(
    ("made", "expected", "message"), [c[1:] for c in CASES], ids=[c[0] for c in CASES]
)
def test_ragas_user_warnings(
    made: list[ToolCall], expected: list[ToolCall], message: str, compat: str
) -> None:
    metric = ToolCallAccuracy(compat=compat)  # type: ignore[arg-type]
    with pytest.warns(UserWarning, match=message) as caught:
        result = metric.score_sync(_sample(made, expected))
    assert len(caught) == 1
    text = str(caught[0].message)
    assert result.reason is not None and result.reason.endswith(f"Warning: {text}.")
    assert result.details["warnings"] == [text]


def test_the_warning_also_comes_from_the_ragas_style_ascore() -> None:
    with pytest.warns(UserWarning, match="No tool calls found in the user input"):
        value = asyncio.run(
            ToolCallAccuracy().ascore(
                user_input=[HumanMessage(content="Go."), AIMessage(content="Sure.")],
                reference_tool_calls=[A],
            )
        )
    assert value == 0.0


@pytest.mark.parametrize(
    ("made", "expected"),
    [([A, B], [A, B]), ([B, A], [A, B]), ([], [])],
    ids=["same", "swapped", "none"],
)
def test_no_warning_when_the_counts_agree(made: list[ToolCall], expected: list[ToolCall]) -> None:
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("always")
        result = ToolCallAccuracy().score_sync(_sample(made, expected))
    assert [w for w in caught if issubclass(w.category, UserWarning)] == []
    assert "warnings" not in result.details


def test_the_command_line_keeps_them_in_the_reason_not_on_stderr(tmp_path: Path) -> None:
    record = {
        "user_input": [
            {"type": "human", "content": "Go."},
            {"type": "ai", "content": "", "tool_calls": [{"name": "b", "args": {}}]},
        ],
        "reference_tool_calls": [{"name": "a", "args": {}}, {"name": "b", "args": {}}],
    }
    (tmp_path / "d.jsonl").write_text(json.dumps(record) + "\n", encoding="utf-8")
    command = ["run", "d.jsonl", "-m", "tool_call_accuracy", "-o", "r.jsonl"]
    done = convoeval(*command, cwd=tmp_path)
    assert done.returncode in (0, 1), done.stderr
    assert "UserWarning" not in done.stderr
    row = json.loads((tmp_path / "r.jsonl").read_text(encoding="utf-8"))
    assert (
        "Warning: Length mismatch: predicted tool calls (1)" in row["reasons"]["tool_call_accuracy"]
    )
