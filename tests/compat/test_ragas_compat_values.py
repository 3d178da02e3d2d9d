"""`compat="ragas"` (issue 34 §3): Ragas's exact numbers, each computed by hand from COMPAT.md's
description of Ragas; the default stays ours. Also: the option is validated, recorded in
`config()`, and reachable from the command line."""

from __future__ import annotations

import json
import warnings
from pathlib import Path
from typing import Any

import pytest

from _cli import convoeval
from convoeval import (
    AIMessage,
    HumanMessage,
    MultiTurnSample,
    ToolCall,
    ToolCallAccuracy,
    ToolCallF1,
    TopicAdherenceScore,
)
from convoeval.judges.fake import FakeJudge
from convoeval.metrics.topic_adherence import ANSWERED, EXTRACT, SCOPE


def _sample(made: list[ToolCall], expected: list[ToolCall]) -> MultiTurnSample:
    messages: list[Any] = [HumanMessage(content="Do it.")]
    messages += [AIMessage(content="", tool_calls=[call]) for call in made]
    messages.append(AIMessage(content="Done."))
    return MultiTurnSample(user_input=messages, reference_tool_calls=expected)


def _value(metric: Any, sample: MultiTurnSample) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return float(metric.score_sync(sample).value)


A = ToolCall(name="a", args={"x": 1})
B = ToolCall(name="b", args={"y": "z"})

# (label, made, expected, ours, ragas), each number worked out by hand below.
ACCURACY_CASES = [
    # one of two expected calls made: ours 1/max(1,2); Ragas: names [a] != [a, b] -> 0.
    ("missing call", [A], [A, B], 0.5, 0.0),
    # an extra call: ours 2 matched / 3; Ragas: lengths differ -> 0.
    ("extra call", [A, B, B], [A, B], 2 / 3, 0.0),
    # swapped order, strict: ours aligns one pair in order (1/2); Ragas: [b, a] != [a, b] -> 0.
    ("swapped order", [B, A], [A, B], 0.5, 0.0),
    # 1 vs "1": ours typed (0 for the only argument); Ragas str(1) == str("1") -> 1.
    (
        "1 vs '1'",
        [ToolCall(name="a", args={"x": 1})],
        [ToolCall(name="a", args={"x": "1"})],
        0.0,
        1.0,
    ),
    # 1 vs 1.0: ours equal numbers; Ragas str(1) "1" != str(1.0) "1.0" -> 0.
    (
        "1 vs 1.0",
        [ToolCall(name="a", args={"x": 1})],
        [ToolCall(name="a", args={"x": 1.0})],
        1.0,
        0.0,
    ),
    # an extra argument: ours mean over the union {x, extra} = 1/2; Ragas reference keys only -> 1.
    ("extra arg", [ToolCall(name="a", args={"x": 1, "extra": 2})], [A], 0.5, 1.0),
    # nested dict, other key order: ours equal; Ragas str() differs -> 0.
    (
        "nested key order",
        [ToolCall(name="a", args={"x": {"p": 1, "q": 2}})],
        [ToolCall(name="a", args={"x": {"q": 2, "p": 1}})],
        1.0,
        0.0,
    ),
    # one of two reference arguments right: both 1/2.
    (
        "half the args",
        [ToolCall(name="a", args={"x": 1, "y": 9})],
        [ToolCall(name="a", args={"x": 1, "y": 2})],
        0.5,
        0.5,
    ),
    ("none expected, none made", [], [], 1.0, 1.0),
    ("none made", [], [A], 0.0, 0.0),
]


@pytest.mark.parametrize(
    ("made", "expected", "ours", "ragas"),
    [case[1:] for case in ACCURACY_CASES],
    ids=[case[0] for case in ACCURACY_CASES],
)
def test_tool_call_accuracy_ragas_numbers(
    made: list[ToolCall], expected: list[ToolCall], ours: float, ragas: float
) -> None:
    sample = _sample(made, expected)
    assert _value(ToolCallAccuracy(), sample) == pytest.approx(ours, abs=1e-12)
    assert _value(ToolCallAccuracy(compat="ragas"), sample) == pytest.approx(ragas, abs=1e-12)


def test_tool_call_accuracy_ragas_any_order_sorts_by_name() -> None:
    # strict_order=False: Ragas compares sorted name lists ([a, b] both) and pairs the sorted
    # calls: a(x=1) with a(x=1) -> 1, b(y=z) with b(y=w) -> 0; mean over 2 reference calls = 1/2.
    sample = _sample([ToolCall(name="b", args={"y": "w"}), A], [A, B])
    assert _value(ToolCallAccuracy(strict_order=False, compat="ragas"), sample) == 0.5
    assert _value(ToolCallAccuracy(strict_order=True, compat="ragas"), sample) == 0.0


F1_CASES = [
    # duplicates: ours multiset TP=1, FP=1, FN=0 -> 2/3; Ragas sets {a} vs {a} -> 1.0.
    ("duplicate calls", [A, A], [A], 2 / 3, 1.0),
    # nothing expected, nothing made: ours 1.0; Ragas 0.0.
    ("none expected, none made", [], [], 1.0, 0.0),
    # 1 vs "1": both unequal (Ragas compares the values themselves here): TP=0 -> 0.
    (
        "1 vs '1'",
        [ToolCall(name="a", args={"x": 1})],
        [ToolCall(name="a", args={"x": "1"})],
        0.0,
        0.0,
    ),
    # 1 vs 1.0: equal for both.
    ("1 vs 1.0", [ToolCall(name="a", args={"x": 1.0})], [A], 1.0, 1.0),
    # one of three distinct: TP=1, FP=0, FN=2: P=1, R=1/3, F1 = 0.5 (Ragas rounds: 0.5).
    ("one of three", [A], [A, B, ToolCall(name="c", args={})], 0.5, 0.5),
    # two of three expected with one wrong: TP=2, FP=1, FN=1 -> 2/3; Ragas round(2/3, 4).
    (
        "rounding",
        [A, B, ToolCall(name="c", args={"k": 1})],
        [A, B, ToolCall(name="c", args={"k": 2})],
        2 / 3,
        0.6667,
    ),
]


@pytest.mark.parametrize(
    ("made", "expected", "ours", "ragas"),
    [case[1:] for case in F1_CASES],
    ids=[case[0] for case in F1_CASES],
)
def test_tool_call_f1_ragas_numbers(
    made: list[ToolCall], expected: list[ToolCall], ours: float, ragas: float
) -> None:
    sample = _sample(made, expected)
    assert _value(ToolCallF1(), sample) == pytest.approx(ours, abs=1e-12)
    assert _value(ToolCallF1(compat="ragas"), sample) == ragas


TOPIC_SAMPLE = MultiTurnSample(
    user_input=[
        HumanMessage(content="Where is my parcel?"),
        AIMessage(content="It arrives tomorrow."),
        HumanMessage(content="And my refund?"),
        AIMessage(content="It was sent today."),
    ],
    reference_topics=["orders"],
)


def _topic_judge(topics: list[tuple[str, bool, bool]]) -> FakeJudge:
    return FakeJudge(
        {
            EXTRACT.name: [
                {"topics": [{"topic": t, "message_index": 0, "quote": t} for t, _, _ in topics]}
            ],
            ANSWERED.name: [{"verdicts": [{"topic": t, "answered": a} for t, a, _ in topics]}],
            SCOPE.name: [{"verdicts": [{"topic": t, "in_scope": s} for t, _, s in topics]}],
        }
    )


EPS = 1e-10


@pytest.mark.parametrize("mode", ["f1", "precision", "recall"])
def test_topic_adherence_perfect_agent(mode: str) -> None:
    topics = [("parcel", True, True), ("refund", True, True)]
    ours = TopicAdherenceScore(mode=mode).score_sync(TOPIC_SAMPLE, judge=_topic_judge(topics))  # type: ignore[arg-type]
    theirs = TopicAdherenceScore(mode=mode, compat="ragas").score_sync(  # type: ignore[arg-type]
        TOPIC_SAMPLE, judge=_topic_judge(topics)
    )
    p = r = 2 / (2 + EPS)  # TP=2, FP=0, FN=0
    expected = {"precision": p, "recall": r, "f1": 2 * p * r / (p + r + EPS)}[mode]
    assert ours.value == 1.0
    assert theirs.value == expected and theirs.value < 1.0
    assert theirs.details["compat"] == "ragas"


def test_topic_adherence_declining_every_off_topic_question() -> None:
    # TP=0, FP=0, FN=0, TN=2: ours counts both empty ratios as 1.0; Ragas 0/(0+1e-10) = 0.
    topics = [("stocks", False, False), ("poems", False, False)]
    ours = TopicAdherenceScore().score_sync(TOPIC_SAMPLE, judge=_topic_judge(topics))
    theirs = TopicAdherenceScore(compat="ragas").score_sync(
        TOPIC_SAMPLE, judge=_topic_judge(topics)
    )
    assert (ours.value, theirs.value) == (1.0, 0.0)


def test_topic_adherence_mixed_counts() -> None:
    # TP=1, FP=1, FN=1, TN=1: P = R = 1/(2+1e-10), F1 = 2PR/(P+R+1e-10).
    topics = [("a", True, True), ("b", True, False), ("c", False, True), ("d", False, False)]
    theirs = TopicAdherenceScore(compat="ragas").score_sync(
        TOPIC_SAMPLE, judge=_topic_judge(topics)
    )
    p = 1 / (2 + EPS)
    assert theirs.value == 2 * p * p / (p + p + EPS)


@pytest.mark.parametrize("cls", [ToolCallAccuracy, ToolCallF1, TopicAdherenceScore])
def test_compat_is_validated_and_recorded(cls: Any) -> None:
    with pytest.raises(
        ValueError,
        match=r"compat must be 'convoeval' or 'ragas', not 'raga' \(did you mean 'ragas'\?\)",
    ):
        cls(compat="raga")
    assert cls().config()["compat"] == "convoeval"
    assert cls(compat="ragas").config()["compat"] == "ragas"
    assert "compat='ragas'" in repr(cls(compat="ragas"))


def test_compat_from_the_command_line(tmp_path: Path) -> None:
    record = {
        "user_input": [
            {"type": "human", "content": "Do it."},
            {"type": "ai", "content": "", "tool_calls": [{"name": "b", "args": {}}]},
            {"type": "ai", "content": "", "tool_calls": [{"name": "a", "args": {}}]},
        ],
        "reference_tool_calls": [{"name": "a", "args": {}}, {"name": "b", "args": {}}],
    }
    (tmp_path / "d.jsonl").write_text(json.dumps(record) + "\n", encoding="utf-8")
    values = {}
    for spec in ("tool_call_accuracy", "tool_call_accuracy:compat=ragas"):
        out = tmp_path / f"{spec.replace(':', '_').replace('=', '_')}.jsonl"
        done = convoeval("run", "d.jsonl", "-m", spec, "-o", str(out), cwd=tmp_path)
        assert done.returncode in (0, 1), done.stderr
        values[spec] = json.loads(out.read_text(encoding="utf-8"))["scores"]["tool_call_accuracy"]
    # swapped order: ours aligns one of the two calls (1/2); Ragas's name sequences differ (0).
    assert values == {"tool_call_accuracy": 0.5, "tool_call_accuracy:compat=ragas": 0.0}
    bad = convoeval("run", "d.jsonl", "-m", "tool_call_f1:compat=rgas", cwd=tmp_path)
    assert (
        bad.returncode == 2 and "compat must be one of convoeval, ragas, not 'rgas'" in bad.stderr
    )
