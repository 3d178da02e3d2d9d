"""The comparison building blocks: typed equality, canonical keys, and both alignments, checked
against brute force on many random cases."""

from __future__ import annotations

import itertools
import random
from typing import Any

import pytest

from convoeval import ToolCall
from convoeval.metrics._tool_calls import (
    PairScore,
    align_any_order,
    align_in_order,
    canonical,
    max_weight_matching,
    pair_score,
    values_equal,
)

# (id, a, b, equal)
EQUALITY_CASES: list[tuple[str, Any, Any, bool]] = [
    ("int-int", 1, 1, True),
    ("int-float", 1, 1.0, True),
    ("int-str", 1, "1", False),
    ("true-1", True, 1, False),
    ("false-0.0", False, 0.0, False),
    ("true-true", True, True, True),
    ("none-none", None, None, True),
    ("none-empty-str", None, "", False),
    ("none-0", None, 0, False),
    ("empty-list-empty-dict", [], {}, False),
    ("list-tuple", [1, 2], (1, 2), True),
    ("list-order", [1, 2], [2, 1], False),
    ("list-length", [1], [1, 1], False),
    (
        "dict-key-order",
        {"a": 1, "b": {"c": [1, {"d": 2, "e": 3}]}},
        {"b": {"c": [1, {"e": 3, "d": 2}]}, "a": 1},
        True,
    ),
    ("dict-extra-key", {"a": 1}, {"a": 1, "b": None}, False),
    ("nested-bool-vs-int", {"a": [True]}, {"a": [1]}, False),
    ("nan-nan", float("nan"), float("nan"), True),
    ("big-int-float", 2**60, float(2**60), True),
    ("big-int-off-by-one", 2**60 + 1, float(2**60), False),
]


@pytest.mark.parametrize(
    ("a", "b", "equal"), [c[1:] for c in EQUALITY_CASES], ids=[c[0] for c in EQUALITY_CASES]
)
def test_typed_equality_and_canonical_keys_agree(a: Any, b: Any, equal: bool) -> None:
    assert values_equal(a, b) is equal
    assert values_equal(b, a) is equal
    assert (canonical(a) == canonical(b)) is equal
    if equal:
        assert hash(canonical(a)) == hash(canonical(b))


def test_pair_score_rules() -> None:
    assert pair_score(ToolCall(name="a"), ToolCall(name="a")).score == 1.0
    assert pair_score(ToolCall(name="a"), ToolCall(name="b")).score == 0.0
    assert not pair_score(ToolCall(name="a"), ToolCall(name="b")).same_name
    assert pair_score(ToolCall(name="a", args={"x": 1}), ToolCall(name="a")).score == 0.0
    ids_ignored = pair_score(ToolCall(name="a", id="1"), ToolCall(name="a", id="2"))
    assert ids_ignored.score == 1.0


def _random_scores(rng: random.Random, n: int, m: int) -> list[list[PairScore]]:
    names = "ab"
    pred = [rng.choice(names) for _ in range(n)]
    ref = [rng.choice(names) for _ in range(m)]
    return [
        [
            PairScore(rng.choice([0.0, 0.25, 0.5, 1.0, rng.random()]), True)
            if p == r
            else PairScore(0.0, False)
            for r in ref
        ]
        for p in pred
    ]


def _brute_in_order(scores: list[list[PairScore]]) -> float:
    n, m = len(scores), len(scores[0]) if scores else 0
    best = 0.0
    for k in range(min(n, m) + 1):
        for rows in itertools.combinations(range(n), k):
            for cols in itertools.combinations(range(m), k):
                pairs = list(zip(rows, cols, strict=True))
                if all(scores[i][j].same_name for i, j in pairs):
                    best = max(best, sum(scores[i][j].score for i, j in pairs))
    return best


def _brute_any_order(weights: list[list[float]]) -> float:
    n, m = len(weights), len(weights[0]) if weights else 0
    if n <= m:
        return max(
            sum(weights[i][c] for i, c in enumerate(cols))
            for cols in itertools.permutations(range(m), n)
        )
    return max(
        sum(weights[r][j] for j, r in enumerate(rows))
        for rows in itertools.permutations(range(n), m)
    )


def test_in_order_alignment_is_optimal_and_monotone() -> None:
    rng = random.Random(20261130)
    for _ in range(300):
        n, m = rng.randint(1, 5), rng.randint(1, 5)
        scores = _random_scores(rng, n, m)
        pairs = align_in_order(scores)
        assert all(scores[i][j].same_name for i, j in pairs)
        assert all(a[0] < b[0] and a[1] < b[1] for a, b in itertools.pairwise(pairs))
        total = sum(scores[i][j].score for i, j in pairs)
        assert total == pytest.approx(_brute_in_order(scores), abs=1e-9)


def test_any_order_matching_is_optimal_and_one_to_one() -> None:
    rng = random.Random(7)
    for _ in range(300):
        n, m = rng.randint(1, 6), rng.randint(1, 6)
        weights = [[rng.choice([0.0, 0.5, 1.0, rng.random()]) for _ in range(m)] for _ in range(n)]
        pairs = max_weight_matching(weights)
        assert len(pairs) == min(n, m)
        assert len({i for i, _ in pairs}) == len(pairs) == len({j for _, j in pairs})
        total = sum(weights[i][j] for i, j in pairs)
        assert total == pytest.approx(_brute_any_order(weights), abs=1e-9)


def test_any_order_alignment_pairs_leftover_same_name_calls() -> None:
    rng = random.Random(11)
    for _ in range(200):
        scores = _random_scores(rng, rng.randint(1, 5), rng.randint(1, 5))
        pairs = align_any_order(scores)
        assert all(scores[i][j].same_name for i, j in pairs)
        assert len({i for i, _ in pairs}) == len(pairs) == len({j for _, j in pairs})
        weights = [[p.score for p in row] for row in scores]
        total = sum(scores[i][j].score for i, j in pairs)
        assert total == pytest.approx(_brute_any_order(weights), abs=1e-9)
        left_p = set(range(len(scores))) - {i for i, _ in pairs}
        left_r = set(range(len(scores[0]))) - {j for _, j in pairs}
        assert not any(scores[i][j].same_name for i in left_p for j in left_r)


def test_in_order_prefers_showing_a_wrong_argument_call_as_a_match() -> None:
    scores = [[pair_score(ToolCall(name="a", args={"x": 1}), ToolCall(name="a", args={"x": 2}))]]
    assert align_in_order(scores) == [(0, 0)]
    assert align_any_order(scores) == [(0, 0)]


def test_matching_handles_large_inputs_quickly() -> None:
    rng = random.Random(3)
    weights = [[rng.random() for _ in range(60)] for _ in range(50)]
    pairs = max_weight_matching(weights)
    assert len(pairs) == 50
    # Optimality certificate: no improving swap of two assignments.
    for (i1, j1), (i2, j2) in itertools.combinations(pairs, 2):
        assert weights[i1][j1] + weights[i2][j2] >= weights[i1][j2] + weights[i2][j1] - 1e-12
    free = set(range(60)) - {j for _, j in pairs}
    for i, j in pairs:
        assert all(weights[i][j] >= weights[i][f] - 1e-12 for f in free)
