"""A results file with hostile conversation text and known scores, for the report tests."""

from __future__ import annotations

from pathlib import Path

from convoeval import AIMessage, HumanMessage, MultiTurnSample, ToolCall, ToolMessage, evaluate
from convoeval.runner import EvaluationResult

SCRIPT = "<script>window.__pwned = 1; document.title = 'pwned';</script>"
IMG = '<img src="x" onerror="window.__pwned = 2; document.title = \'pwned\'">'
CLOSER = "</script><script>window.__pwned = 3;</script>"
HOSTILE_TOOL = '<img src=x onerror="window.__pwned=4">'
#: Expected tool_call_accuracy per record: full match, half, wrong argument.
SCORES = [0.5, 1.0, 0.0, 0.5, 1.0]


def _sample(i: int, kind: float) -> MultiTurnSample:
    call = ToolCall(name="lookup", args={"q": SCRIPT, "n": i}, id=f"c{i}")
    if kind == 1.0:
        reference = [ToolCall(name="lookup", args={"q": SCRIPT, "n": i})]
    elif kind == 0.5:
        reference = [
            ToolCall(name="lookup", args={"q": SCRIPT, "n": i}),
            ToolCall(name=HOSTILE_TOOL, args={}),
        ]
    else:
        reference = [ToolCall(name="lookup", args={"q": "other", "n": -1})]
    return MultiTurnSample(
        user_input=[
            HumanMessage(content=f"{SCRIPT} question {i}"),
            AIMessage(content=IMG, tool_calls=[call]),
            ToolMessage(content=f"tool said {CLOSER}", tool_call_id=f"c{i}"),
            AIMessage(content=f"final answer {i} & more"),
        ],
        reference_tool_calls=reference,
        reference_topics=[SCRIPT],
        id=f"{CLOSER}-{i}" if i == 0 else f"conv-{i}",
    )


def hostile_results(directory: Path) -> EvaluationResult:
    """Run ToolCallAccuracy over five hostile conversations into `directory/results.jsonl`."""
    samples = [_sample(i, kind) for i, kind in enumerate(SCORES)]
    return evaluate(
        samples, ["tool_call_accuracy"], output=directory / "results.jsonl", show_progress=False
    )
