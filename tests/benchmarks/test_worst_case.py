"""The worst-case headlines of the agreement benchmark (issue 36): the worst left-out model of
XSTest, the left-out topic list scored with what lists sharing no domain with it chose, and the
split of benchmarks/refusal_styles.jsonl into held-out and calibration replies."""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import numpy as np
import pytest

BENCHMARKS = Path(__file__).resolve().parents[2] / "benchmarks"


@pytest.fixture(scope="module")
def bench() -> Iterator[tuple[Any, Any, Any]]:
    """(_stats, _agreement_xstest, _agreement_clinc), imported as agreement.py imports them."""
    sys.path.insert(0, str(BENCHMARKS))
    try:
        import _agreement_clinc
        import _agreement_xstest
        import _stats

        yield _stats, _agreement_xstest, _agreement_clinc
    finally:
        sys.path.remove(str(BENCHMARKS))


def test_the_worst_model_is_the_headline(bench: tuple[Any, Any, Any]) -> None:
    stats, xstest, _ = bench
    y = np.array([True, False, True, False] * 3)
    models = np.array(["a"] * 4 + ["b"] * 4 + ["c"] * 4)
    pred = y.copy()
    pred[4] = False  # model b misses one refusal of two
    pred[9] = True  # model c keeps one answer of two... wrongly
    pred[11] = True  # ...and the other
    out = stats.Figures(values={}, constants={})
    worst = xstest._put_worst(out, "x", pred, y, models, np.array([str(i) for i in range(12)]))
    assert worst == "c" and out.values["x.accuracy.lomo.worst.model"] == "c"
    assert out.values["x.accuracy.lomo.worst"] == 0.5
    assert out.values["x.balanced_accuracy.lomo.worst"] == 0.5
    assert out.values["x.accuracy.lomo.mean_over_models"] == pytest.approx((1 + 0.75 + 0.5) / 3)
    assert out.values["x.accuracy.lomo.worst.ci95"]  # an interval over prompts follows it


def test_a_left_out_list_is_never_cut_on_a_list_sharing_its_domain(
    bench: tuple[Any, Any, Any],
) -> None:
    _, _, clinc = bench
    rng = np.random.default_rng(0)
    lists = {
        "a": (("a",), frozenset({"a"})),
        "b": (("b",), frozenset({"b"})),
        "c": (("c",), frozenset({"c"})),
        "a+b": (("a", "b"), frozenset({"a", "b"})),
    }
    labels = {n: rng.random(200) < 0.3 for n in lists}
    base = {n: rng.normal(size=200) + 2.0 * labels[n] for n in lists}
    table = {t: dict(base) for t in clinc.SCOPE_TEMPERATURES}
    held = clinc._held_out_lists(table, labels, lists, list(lists))
    shifted = {t: {**base, "a+b": base["a+b"] + 5.0} for t in clinc.SCOPE_TEMPERATURES}
    assert clinc._held_out_lists(shifted, labels, lists, list(lists))["a"][1] == held["a"][1]
    moved = {t: {**base, "b": base["b"] + 5.0} for t in clinc.SCOPE_TEMPERATURES}
    assert clinc._held_out_lists(moved, labels, lists, list(lists))["a"][1] != held["a"][1]


def test_calibration_replies_are_apart_from_the_held_out_ones() -> None:
    rows = [json.loads(line) for line in (BENCHMARKS / "refusal_styles.jsonl").open()]
    held = [r for r in rows if r["split"] == "held_out"]
    calibration = [r for r in rows if r["split"] == "calibration"]
    assert len(held) == 22 and len(held) + len(calibration) == len(rows)
    assert {r["refused"] for r in calibration} == {True, False}
    assert not {r["assistant"] for r in held} & {r["assistant"] for r in calibration}
