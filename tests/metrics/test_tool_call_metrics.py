"""Table-driven tests of ToolCallAccuracy and ToolCallF1 (DESIGN §4.3), incl. Ragas differences."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
from _tool_call_samples import sample, tc

from convoeval import AIMessage, HumanMessage, MultiTurnSample, ToolCall, ToolMessage
from convoeval.metrics import ToolCallAccuracy, ToolCallF1
from convoeval.metrics._tool_calls import values_equal

NESTED_A = {"filter": {"city": "Paris", "range": {"from": 1, "to": 5}, "tags": ["a", "b"]}}
NESTED_B = {"filter": {"tags": ["a", "b"], "range": {"to": 5, "from": 1}, "city": "Paris"}}

# (id, predicted, reference, strict_order, expected accuracy)
ACCURACY_CASES = [
    ("exact-match", [tc("a", x=1), tc("b", y="q")], [tc("a", x=1), tc("b", y="q")], True, 1.0),
    ("nested-key-order", [tc("a", **NESTED_A)], [tc("a", **NESTED_B)], True, 1.0),
    ("nested-list-order-matters", [tc("a", v=[1, 2])], [tc("a", v=[2, 1])], True, 0.0),
    ("duplicate-extra", [tc("a"), tc("a")], [tc("a")], True, 1 / 2),
    ("duplicates-both", [tc("a"), tc("a")], [tc("a"), tc("a")], True, 1.0),
    ("extra-call", [tc("a", x=1), tc("b")], [tc("a", x=1)], True, 1 / 2),
    ("missing-call", [tc("a", x=1)], [tc("a", x=1), tc("b")], True, 1 / 2),
    ("reordered-strict", [tc("b"), tc("a")], [tc("a"), tc("b")], True, 1 / 2),
    ("reordered-any-order", [tc("b"), tc("a")], [tc("a"), tc("b")], False, 1.0),
    ("three-rotated-strict", [tc("b"), tc("a"), tc("c")], [tc("a"), tc("c"), tc("b")], True, 2 / 3),
    ("int-vs-str", [tc("a", n=1)], [tc("a", n="1")], True, 0.0),
    ("true-vs-1", [tc("a", n=True)], [tc("a", n=1)], True, 0.0),
    ("false-vs-0", [tc("a", n=0)], [tc("a", n=False)], True, 0.0),
    ("int-vs-float-equal", [tc("a", n=1)], [tc("a", n=1.0)], True, 1.0),
    ("null-vs-missing", [tc("a", n=None)], [tc("a")], True, 0.0),
    ("extra-argument", [tc("a", x=1, y=2)], [tc("a", x=1)], True, 1 / 2),
    ("missing-argument", [tc("a", x=1)], [tc("a", x=1, y=2)], True, 1 / 2),
    ("one-of-three-args-wrong", [tc("a", x=1, y=2, z=3)], [tc("a", x=1, y=2, z=4)], True, 2 / 3),
    ("wrong-name", [tc("b", x=1)], [tc("a", x=1)], True, 0.0),
    ("both-empty", [], [], True, 1.0),
    ("predicted-empty", [], [tc("a")], True, 0.0),
    ("reference-empty", [tc("a")], [], True, 0.0),
    ("no-arguments-both", [tc("a")], [tc("a")], True, 1.0),
    (
        "partial-plus-extra",
        [tc("a", x=1, y=2), tc("c"), tc("b")],
        [tc("a", x=1, y=3), tc("b")],
        True,
        1.5 / 3,
    ),
    # p0-r0 0.5, p0-r1 0.5, p1-r0 1.0, p1-r1 0: in order the best is p1-r0 alone (1.0 of 2);
    # in any order p0-r1 + p1-r0 (1.5 of 2).
    (
        "crossing-strict",
        [tc("a", x=1, y=1), tc("a", x=1, y=2)],
        [tc("a", x=1, y=2), tc("a", x=9, y=1)],
        True,
        0.5,
    ),
    (
        "crossing-any-order",
        [tc("a", x=1, y=1), tc("a", x=1, y=2)],
        [tc("a", x=1, y=2), tc("a", x=9, y=1)],
        False,
        0.75,
    ),
    ("any-order-missing", [tc("b")], [tc("a"), tc("b")], False, 1 / 2),
]


@pytest.mark.parametrize(
    ("predicted", "reference", "strict", "expected"),
    [case[1:] for case in ACCURACY_CASES],
    ids=[case[0] for case in ACCURACY_CASES],
)
async def test_tool_call_accuracy(
    predicted: list[ToolCall], reference: list[ToolCall], strict: bool, expected: float
) -> None:
    result = await ToolCallAccuracy(strict_order=strict).score(sample(predicted, reference))
    assert result.value == pytest.approx(expected, abs=1e-12)
    assert result.scored and not result.failed and result.reason
    details = result.details
    matched = {m["predicted"] for m in details["matches"]}
    unmatched = {c["index"] for c in details["unmatched_predicted"]}
    assert matched | unmatched == set(range(len(predicted))) and not matched & unmatched
    refs = {m["reference"] for m in details["matches"]} | {
        c["index"] for c in details["unmatched_reference"]
    }
    assert refs == set(range(len(reference)))


# (id, predicted, reference, expected F1)
F1_CASES = [
    ("exact-match", [tc("a", x=1), tc("b", y="q")], [tc("a", x=1), tc("b", y="q")], 1.0),
    ("nested-key-order", [tc("a", **NESTED_A)], [tc("a", **NESTED_B)], 1.0),
    ("duplicate-predicted", [tc("a"), tc("a")], [tc("a")], 2 / 3),
    ("duplicate-reference", [tc("a")], [tc("a"), tc("a")], 2 / 3),
    ("duplicates-both", [tc("a"), tc("a")], [tc("a"), tc("a")], 1.0),
    ("extra-call", [tc("a"), tc("b")], [tc("a")], 2 / 3),
    ("missing-call", [tc("a")], [tc("a"), tc("b")], 2 / 3),
    ("reordered", [tc("b"), tc("a")], [tc("a"), tc("b")], 1.0),
    ("int-vs-str", [tc("a", n=1)], [tc("a", n="1")], 0.0),
    ("true-vs-1", [tc("a", n=True)], [tc("a", n=1)], 0.0),
    ("int-vs-float-equal", [tc("a", n=1)], [tc("a", n=1.0)], 1.0),
    ("extra-argument", [tc("a", x=1, y=2)], [tc("a", x=1)], 0.0),
    ("missing-argument", [tc("a", x=1)], [tc("a", x=1, y=2)], 0.0),
    ("wrong-name", [tc("b", x=1)], [tc("a", x=1)], 0.0),
    ("both-empty", [], [], 1.0),
    ("predicted-empty", [], [tc("a")], 0.0),
    ("reference-empty", [tc("a")], [], 0.0),
    # tp=2 (a, b), fp=1 (c), fn=2 (d, e): precision 2/3, recall 1/2, F1 4/7.
    ("mixed", [tc("a"), tc("b"), tc("c")], [tc("a"), tc("b"), tc("d"), tc("e")], 4 / 7),
]


@pytest.mark.parametrize(
    ("predicted", "reference", "expected"),
    [case[1:] for case in F1_CASES],
    ids=[case[0] for case in F1_CASES],
)
async def test_tool_call_f1(
    predicted: list[ToolCall], reference: list[ToolCall], expected: float
) -> None:
    result = await ToolCallF1().score(sample(predicted, reference))
    assert result.value == pytest.approx(expected, abs=1e-12)
    d = result.details
    assert d["true_positives"] + d["false_positives"] == len(predicted)
    assert d["true_positives"] + d["false_negatives"] == len(reference)
    assert len(d["unmatched_predicted"]) == d["false_positives"]
    assert len(d["unmatched_reference"]) == d["false_negatives"]


def test_f1_details_name_the_unmatched_calls() -> None:
    result = ToolCallF1().score_sync(
        sample([tc("a"), tc("b"), tc("c")], [tc("a"), tc("b"), tc("d"), tc("e")])
    )
    d = result.details
    assert (d["true_positives"], d["false_positives"], d["false_negatives"]) == (2, 1, 2)
    assert d["precision"] == 2 / 3 and d["recall"] == 1 / 2
    assert [c["name"] for c in d["unmatched_predicted"]] == ["c"]
    assert [(c["index"], c["name"]) for c in d["unmatched_reference"]] == [(2, "d"), (3, "e")]
    assert "Missing: d, e" in (result.reason or "")


def test_accuracy_details_show_alignment_and_argument_problems() -> None:
    result = ToolCallAccuracy().score_sync(
        sample([tc("a", x=1, y=2, z=0), tc("c"), tc("b")], [tc("a", x=1, y=3, w=5), tc("b")])
    )
    d = result.details
    assert [(m["predicted"], m["reference"]) for m in d["matches"]] == [(0, 0), (2, 1)]
    first = d["matches"][0]
    assert first["score"] == 1 / 4  # union {w, x, y, z}: only x agrees
    assert (first["differing_args"], first["missing_args"], first["extra_args"]) == (
        ["y"],
        ["w"],
        ["z"],
    )
    assert [c["name"] for c in d["unmatched_predicted"]] == ["c"]
    assert d["unmatched_reference"] == []
    assert result.value == (0.25 + 1.0) / 3
    assert "Extra: c (#2)" in (result.reason or "")  # calls are numbered from 1


def test_calls_spread_over_several_ai_messages_with_tool_outputs() -> None:
    conversation = MultiTurnSample(
        user_input=[
            HumanMessage(content="Weather in Paris, then book a table"),
            AIMessage(
                content="", tool_calls=[ToolCall(name="weather", args={"city": "Paris"}, id="c1")]
            ),
            ToolMessage(content="sunny", tool_call_id="c1"),
            AIMessage(
                content="Looking for tables",
                tool_calls=[
                    ToolCall(name="search", args={"q": "bistro"}, id="c2"),
                    ToolCall(name="book", args={"place": "Chez Nous", "people": 2}, id="c3"),
                ],
            ),
            ToolMessage(content="3 results", tool_call_id="c2"),
            ToolMessage(content="booked", tool_call_id="c3"),
            HumanMessage(content="thanks"),
            AIMessage(content="You're welcome."),
        ],
        reference_tool_calls=[
            tc("weather", city="Paris"),
            tc("search", q="bistro"),
            tc("book", people=2, place="Chez Nous"),
        ],
    )
    assert [c.name for c in conversation.predicted_tool_calls()] == ["weather", "search", "book"]
    assert ToolCallAccuracy().score_sync(conversation).value == 1.0
    assert ToolCallF1().score_sync(conversation).value == 1.0
    reordered = conversation.model_copy(
        update={"reference_tool_calls": list(reversed(conversation.reference_tool_calls or []))}
    )
    assert ToolCallAccuracy().score_sync(reordered).value == 1 / 3
    assert ToolCallAccuracy(strict_order=False).score_sync(reordered).value == 1.0


def _case_insensitive(name: str, predicted: Any, reference: Any) -> bool:
    if isinstance(predicted, str) and isinstance(reference, str):
        return predicted.casefold() == reference.casefold()
    return values_equal(predicted, reference)


def _closeness(name: str, predicted: Any, reference: Any) -> float:
    if name == "price":
        return max(0.0, 1.0 - float(abs(predicted - reference)) / 10)
    return 1.0 if values_equal(predicted, reference) else 0.0


COMPARATOR_CASES = [
    (
        "case-insensitive-match",
        _case_insensitive,
        {"city": "PARIS", "n": 2},
        {"city": "paris", "n": 2},
        1.0,
    ),
    (
        "case-insensitive-still-typed",
        _case_insensitive,
        {"city": "Paris", "n": "2"},
        {"city": "paris", "n": 2},
        0.5,
    ),
    ("default-is-case-sensitive", None, {"city": "PARIS", "n": 2}, {"city": "paris", "n": 2}, 0.5),
    (
        "partial-float-score",
        _closeness,
        {"price": 8, "cur": "EUR"},
        {"price": 10, "cur": "EUR"},
        0.9,
    ),
    (
        "comparator-not-asked-for-extra-args",
        _closeness,
        {"cur": "EUR", "x": 1},
        {"cur": "EUR"},
        0.5,
    ),
]


@pytest.mark.parametrize(
    ("comparator", "pred_args", "ref_args", "expected"),
    [case[1:] for case in COMPARATOR_CASES],
    ids=[case[0] for case in COMPARATOR_CASES],
)
def test_custom_arg_comparator(
    comparator: Any, pred_args: dict[str, Any], ref_args: dict[str, Any], expected: float
) -> None:
    metric = ToolCallAccuracy(arg_comparator=comparator)
    result = metric.score_sync(sample([tc("f", **pred_args)], [tc("f", **ref_args)]))
    assert result.value == pytest.approx(expected, abs=1e-12)


def test_comparator_out_of_range_is_an_error() -> None:
    metric = ToolCallAccuracy(arg_comparator=lambda name, p, r: 2.0)
    with pytest.raises(ValueError, match=r"arg_comparator returned 2\.0 for argument .x."):
        metric.score_sync(sample([tc("f", x=1)], [tc("f", x=1)]))


# Each case: where our number differs from Ragas 0.4.3 (COMPAT.md); Ragas's number is in the id.
# (id, metric, predicted, reference, ours)
RAGAS_DIFFERENCES = [
    ("accuracy-extra-call-ragas-0.0", ToolCallAccuracy(), [tc("a"), tc("b")], [tc("a")], 0.5),
    ("accuracy-missing-call-ragas-0.0", ToolCallAccuracy(), [tc("a")], [tc("a"), tc("b")], 0.5),
    (
        "accuracy-reordered-strict-ragas-0.0",
        ToolCallAccuracy(),
        [tc("b"), tc("a")],
        [tc("a"), tc("b")],
        0.5,
    ),
    (
        "accuracy-str-compare-1-vs-'1'-ragas-1.0",
        ToolCallAccuracy(),
        [tc("a", n=1)],
        [tc("a", n="1")],
        0.0,
    ),
    ("accuracy-1-vs-1.0-ragas-0.0", ToolCallAccuracy(), [tc("a", n=1)], [tc("a", n=1.0)], 1.0),
    (
        "accuracy-extra-arg-ignored-ragas-1.0",
        ToolCallAccuracy(),
        [tc("a", x=1, y=2)],
        [tc("a", x=1)],
        0.5,
    ),
    (
        "accuracy-nested-key-order-ragas-0.0",
        ToolCallAccuracy(),
        [tc("a", **NESTED_A)],
        [tc("a", **NESTED_B)],
        1.0,
    ),
    ("f1-duplicates-collapse-ragas-1.0", ToolCallF1(), [tc("a"), tc("a")], [tc("a")], 2 / 3),
    ("f1-both-empty-ragas-0.0", ToolCallF1(), [], [], 1.0),
    ("f1-1-vs-'1'-ragas-0.0-too", ToolCallF1(), [tc("a", n=1)], [tc("a", n="1")], 0.0),
]


@pytest.mark.parametrize(
    ("metric", "predicted", "reference", "ours"),
    [case[1:] for case in RAGAS_DIFFERENCES],
    ids=[case[0] for case in RAGAS_DIFFERENCES],
)
def test_differs_from_ragas(
    metric: Any, predicted: list[ToolCall], reference: list[ToolCall], ours: float
) -> None:
    assert metric.score_sync(sample(predicted, reference)).value == pytest.approx(ours, abs=1e-12)


def test_f1_is_not_rounded_ragas_gives_0_6667() -> None:
    value = ToolCallF1().score_sync(sample([tc("a"), tc("b")], [tc("a")])).value
    assert value == 2 / 3  # exactly; Ragas rounds to 4 decimals (0.6667)
    assert value != round(2 / 3, 4)


def test_docs_example_runs_and_gives_the_stated_numbers() -> None:
    doc = Path(__file__).resolve().parents[2] / "docs" / "metrics" / "tool-calls.md"
    code = doc.read_text(encoding="utf-8").split("```python\n", 1)[1].split("```", 1)[0]
    namespace: dict[str, Any] = {}
    exec(compile(code, str(doc), "exec"), namespace)
    result = namespace["result"]
    assert result.value == (1 + 0.5) / 3
    assert "search (#2)" in result.reason and "people" in result.reason
    assert ToolCallF1().score_sync(namespace["sample"]).value == 2 / (2 + 2 + 1)
