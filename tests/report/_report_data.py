"""A results file with hostile conversation text and known scores, for the report tests."""

from __future__ import annotations

from pathlib import Path
from typing import Any, ClassVar

from convoeval import (
    AIMessage,
    HumanMessage,
    MultiTurnSample,
    SystemMessage,
    ToolCall,
    ToolMessage,
    evaluate,
)
from convoeval.judges import FakeJudge, JudgeError
from convoeval.metrics import Ask, Metric, MetricResult
from convoeval.metrics.conversation_relevancy import VERDICTS
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


#: A long system prompt both feature records hold (the report writes it once).
POLICY = "You are the store's support agent. " + "Follow the refund policy. " * 60

#: A tool name whose unterminated RIGHT-TO-LEFT OVERRIDE would reverse the rest of its line.
RLO_TOOL = "refund\u202e"


def feature_samples() -> list[MultiTurnSample]:
    """Records for each report feature: a nested argument difference, a bidi tool name,
    metadata (a task reward), and no reference topics (topic adherence scores nothing)."""
    address = {"street": "1 Main St", "zip": "10001", "city": "New York"}
    wrong = {**address, "zip": "10002"}
    nested = MultiTurnSample(
        user_input=[
            SystemMessage(content=POLICY),
            HumanMessage(content="ship order 7 to my new address"),
            AIMessage(
                content="", tool_calls=[ToolCall(name="ship", args={"order": 7, "address": wrong})]
            ),
            AIMessage(content="Done, it ships tomorrow."),
        ],
        reference_tool_calls=[ToolCall(name="ship", args={"order": 7, "address": address})],
        reference_topics=[],
        metadata={"reward": 0.0, "task_id": 17},
        id="nested-zip",
    )
    bidi = MultiTurnSample(
        user_input=[
            SystemMessage(content=POLICY),
            HumanMessage(content="refund order 8"),
            AIMessage(content="", tool_calls=[ToolCall(name=RLO_TOOL, args={"order": "8"})]),
            AIMessage(content="Refunded."),
        ],
        reference_tool_calls=[ToolCall(name=RLO_TOOL, args={"order": 8})],
        reference_topics=[],
        metadata={"reward": 1.0},
        id="bidi\u202eid",
    )
    return [nested, bidi]


def feature_results(directory: Path) -> EvaluationResult:
    """Tool-call accuracy, F1 and topic adherence (nothing to score) over `feature_samples`."""
    return evaluate(
        feature_samples(),
        ["tool_call_accuracy", "tool_call_f1", "topic_adherence"],
        output=directory / "features.jsonl",
        show_progress=False,
    )


#: The record whose text holds a word no other record has (for the search test).
NEEDLE_INDEX = 137


def _relevancy(inputs: Any) -> dict[str, Any]:
    if "trouble" in str(inputs):
        raise JudgeError(VERDICTS.name, "the judge went away")
    return {
        "verdicts": [{"exchange": i, "relevant": True, "reason": ""} for i, _ in inputs["windows"]]
    }


def many_results(directory: Path, count: int) -> EvaluationResult:
    """`count` records: tool_call_accuracy 1.0 on every 4th, else 0.0; relevancy judged by a
    fake judge that fails every 10th record (its text says "trouble")."""
    samples = []
    for i in range(count):
        word = "zebra" if i == NEEDLE_INDEX else "trouble" if i % 10 == 9 else "plain"
        samples.append(
            MultiTurnSample(
                user_input=[
                    HumanMessage(content=f"question {i}, {word}"),
                    AIMessage(content="", tool_calls=[ToolCall(name="find", args={"n": i % 4})]),
                    AIMessage(content=f"answer {i}"),
                ],
                reference_tool_calls=[ToolCall(name="find", args={"n": 0})],
                id=f"many-{i}",
            )
        )
    return evaluate(
        samples,
        ["tool_call_accuracy", "conversation_relevancy"],
        judge=FakeJudge({VERDICTS.name: _relevancy}),
        output=directory / "many.jsonl",
        show_progress=False,
    )


#: Twelve results columns, named as metrics are (the longest names of the registry).
WIDE_METRICS = (
    "agent_goal_accuracy_with_reference",
    "conversation_completeness",
    "conversation_relevancy",
    "knowledge_retention",
    "agent_goal_accuracy",
    "tool_call_accuracy",
    "tool_schema_check",
    "trajectory_match",
    "user_frustration",
    "topic_adherence",
    "role_adherence",
    "turn_relevancy",
)


class FixedScore(Metric):
    """Test metric (not registered): a column of its own name scoring 0.1 * (record % 11)."""

    name: ClassVar[str] = "fixed"
    default_threshold: ClassVar[float | None] = 0.5

    def __init__(self, column: str) -> None:
        super().__init__()
        setattr(self, "name", column)  # noqa: B010  (a per-instance results column)

    async def _score(self, sample: MultiTurnSample, ask: Ask) -> MetricResult:
        return MetricResult(round(0.1 * (int(str(sample.id)) % 11), 3), "fixed")


def wide_results(directory: Path, records: int = 5) -> EvaluationResult:
    """`records` short conversations scored by twelve metric columns (`WIDE_METRICS`), read
    from a data file given by a relative path (`directory` is the working directory)."""
    path = directory / "wide.jsonl"
    with path.open("w", encoding="utf-8") as handle:
        for i in range(records):
            turns = [HumanMessage(content=f"question {i}"), AIMessage(content=f"answer {i}")]
            handle.write(MultiTurnSample(user_input=turns, id=str(i)).model_dump_json() + "\n")
    return evaluate(
        "wide.jsonl",
        [FixedScore(name) for name in WIDE_METRICS],
        output=directory / "wide.results.jsonl",
        show_progress=False,
    )
