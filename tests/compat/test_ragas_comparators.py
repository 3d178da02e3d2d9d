"""`ToolCallAccuracy(arg_comparison_metric=...)` with Ragas's comparator names (issue 34 §1):
`ExactMatch()`, `NonLLMStringSimilarity(distance_measure=...)` and any (a, b) -> float function.
Expected numbers are worked out by hand in the comments."""

from __future__ import annotations

import warnings
from typing import Any

import pytest

from convoeval import (
    AIMessage,
    DistanceMeasure,
    ExactMatch,
    HumanMessage,
    MultiTurnSample,
    NonLLMStringSimilarity,
    ToolCall,
    ToolCallAccuracy,
)


def _sample(made: ToolCall, expected: ToolCall) -> MultiTurnSample:
    return MultiTurnSample(
        user_input=[HumanMessage(content="Go."), AIMessage(content="", tool_calls=[made])],
        reference_tool_calls=[expected],
    )


def _value(metric: ToolCallAccuracy, sample: MultiTurnSample) -> float:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)
        return float(metric.score_sync(sample).value)  # type: ignore[arg-type]


@pytest.mark.parametrize(
    ("measure", "a", "b", "expected"),
    [
        # kitten -> sitting: 3 edits, longer length 7.
        ("levenshtein", "kitten", "sitting", 1 - 3 / 7),
        ("levenshtein", "", "", 1.0),
        ("levenshtein", "abc", "", 0.0),
        # karolin / kathrin differ at 3 of 7 positions.
        ("hamming", "karolin", "kathrin", 4 / 7),
        # abc / abcd: the missing fourth character differs.
        ("hamming", "abc", "abcd", 3 / 4),
        # MARTHA / MARHTA: 6 matches, 1 transposition: (1 + 1 + 5/6) / 3.
        ("jaro", "MARTHA", "MARHTA", (1 + 1 + 5 / 6) / 3),
        ("jaro", "abc", "xyz", 0.0),
        # plus a common prefix of 3 (MAR): j + 3 * 0.1 * (1 - j).
        ("jaro_winkler", "MARTHA", "MARHTA", (17 / 18) + 0.3 * (1 - 17 / 18)),
    ],
)
def test_string_similarity_by_hand(measure: str, a: str, b: str, expected: float) -> None:
    assert NonLLMStringSimilarity(distance_measure=measure)(a, b) == pytest.approx(expected)


def test_distance_measure_enum_and_bad_names() -> None:
    assert NonLLMStringSimilarity(DistanceMeasure.JARO).distance_measure is DistanceMeasure.JARO
    assert NonLLMStringSimilarity().distance_measure is DistanceMeasure.LEVENSHTEIN
    with pytest.raises(
        ValueError,
        match=r"distance_measure must be one of levenshtein, hamming, "
        r"jaro, jaro_winkler, not 'levenstein' \(did you mean 'levenshtein'\?\)",
    ):
        NonLLMStringSimilarity(distance_measure="levenstein")


KITTEN = ToolCall(name="search", args={"q": "kitten"})
SITTING = ToolCall(name="search", args={"q": "sitting"})


@pytest.mark.parametrize("compat", ["convoeval", "ragas"])
def test_string_similarity_gives_partial_credit(compat: Any) -> None:
    metric = ToolCallAccuracy(arg_comparison_metric=NonLLMStringSimilarity(), compat=compat)
    assert _value(metric, _sample(KITTEN, SITTING)) == pytest.approx(4 / 7)
    # default ExactMatch: a different string scores 0.
    assert _value(ToolCallAccuracy(compat=compat), _sample(KITTEN, SITTING)) == 0.0


def test_extra_argument_with_string_similarity() -> None:
    made = ToolCall(name="search", args={"q": "kitten", "page": 2})
    # ours: mean over the union {page, q}: (0 + 4/7) / 2; Ragas: reference keys only: 4/7.
    metric = ToolCallAccuracy(arg_comparison_metric=NonLLMStringSimilarity())
    assert _value(metric, _sample(made, SITTING)) == pytest.approx(2 / 7)
    ragas = ToolCallAccuracy(arg_comparison_metric=NonLLMStringSimilarity(), compat="ragas")
    assert _value(ragas, _sample(made, SITTING)) == pytest.approx(4 / 7)


def test_exact_match_is_the_default_in_each_mode() -> None:
    one = _sample(ToolCall(name="a", args={"n": 1}), ToolCall(name="a", args={"n": "1"}))
    # ours: typed (1 is not "1"); Ragas mode compares the text, so ExactMatch sees "1" twice.
    assert _value(ToolCallAccuracy(arg_comparison_metric=ExactMatch()), one) == 0.0
    assert _value(ToolCallAccuracy(arg_comparison_metric=ExactMatch(), compat="ragas"), one) == 1.0
    assert _value(ToolCallAccuracy(compat="ragas"), one) == 1.0


def test_any_function_of_two_values() -> None:
    def same_words(predicted: Any, reference: Any) -> float:
        return float(str(predicted).lower().split() == str(reference).lower().split())

    made = ToolCall(name="search", args={"q": "Red  Shoes"})
    expected = ToolCall(name="search", args={"q": "red shoes"})
    assert (
        _value(ToolCallAccuracy(arg_comparison_metric=same_words), _sample(made, expected)) == 1.0
    )
    metric = ToolCallAccuracy(arg_comparison_metric=lambda a, b: 1.5)
    with pytest.raises(ValueError, match=r"arg_comparison_metric returned 1\.5 for argument 'q'"):
        metric.score_sync(_sample(made, expected))


def test_wrong_comparators_are_refused() -> None:
    with pytest.raises(TypeError, match="arg_comparison_metric must be ExactMatch"):
        ToolCallAccuracy(arg_comparison_metric="levenshtein")  # type: ignore[arg-type]
    with pytest.raises(ValueError, match="not both"):
        ToolCallAccuracy(arg_comparator=lambda n, a, b: 1.0, arg_comparison_metric=ExactMatch())


def test_the_comparator_is_part_of_the_config() -> None:
    metric = ToolCallAccuracy(arg_comparison_metric=NonLLMStringSimilarity("jaro"))
    assert metric.config()["arg_comparison_metric"] == (
        "NonLLMStringSimilarity(distance_measure='jaro')"
    )
    config = ToolCallAccuracy(arg_comparison_metric=ExactMatch()).config()
    assert (config["arg_comparison_metric"], config["arg_comparator"]) == ("ExactMatch()", None)
