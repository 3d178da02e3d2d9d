"""`agree`: its statistics against scikit-learn and scipy, and how labelled, unlabelled, unscored
and failed items are counted apart, on runs scripted with the fake judge."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, ClassVar

import numpy as np
import pytest
from scipy import stats as sps
from sklearn.metrics import cohen_kappa_score, confusion_matrix, mean_absolute_error

from convoeval import AgreementReport, AIMessage, HumanMessage, MultiTurnSample, agree, evaluate
from convoeval.judges import FakeJudge
from convoeval.judges.core.backend import BackendFailure, Failure
from convoeval.metrics import Ask, Metric, MetricResult
from convoeval.metrics.conversation_relevancy import VERDICTS
from convoeval.stats import figures as st
from convoeval.stats.agree import LabelsError

TIGHT = 1e-12  # a few units in the last place of a float near 1


def _pairs(seed: int, n: int, levels: int) -> tuple[np.ndarray, np.ndarray]:
    rng = np.random.default_rng(seed)
    human = rng.integers(0, levels, n).astype(float)
    judge = np.clip(human + rng.integers(-1, 2, n), 0, levels - 1).astype(float)
    return human, judge


@pytest.mark.parametrize("levels", [2, 3, 5])
@pytest.mark.parametrize("seed", range(6))
def test_kappa_agreement_and_confusion_match_scikit_learn(levels: int, seed: int) -> None:
    human, judge = _pairs(seed, 25 + seed, levels)
    classes = st.classes_of(human, judge)
    assert st.cohen_kappa(human, judge) == pytest.approx(cohen_kappa_score(human, judge), abs=TIGHT)
    assert (
        st.confusion(human, judge, classes)
        == confusion_matrix(human, judge, labels=classes).tolist()
    )
    assert st.agreement_rate(human, judge) == float(np.mean(human == judge))


@pytest.mark.parametrize("seed", range(6))
def test_correlations_and_error_match_scipy(seed: int) -> None:
    rng = np.random.default_rng(100 + seed)
    human = np.round(rng.random(30) * 4) / 4  # ties, as with graded labels
    judge = np.clip(human + rng.normal(0, 0.3, 30), 0, 1)
    assert st.pearson(human, judge) == pytest.approx(sps.pearsonr(human, judge)[0], abs=TIGHT)
    assert st.spearman(human, judge) == pytest.approx(sps.spearmanr(human, judge)[0], abs=TIGHT)
    assert st.mean_absolute_error(human, judge) == pytest.approx(
        mean_absolute_error(human, judge), abs=TIGHT
    )


def test_undefined_statistics_are_none_not_nan() -> None:
    same = np.array([1.0, 1.0, 1.0])
    assert st.cohen_kappa(same, same) is None
    assert st.pearson(same, np.array([0.0, 0.5, 1.0])) is None
    assert st.spearman(np.array([1.0]), np.array([1.0])) is None
    assert st.bootstrap(st.agreement_rate, same[:1], same[:1], 1000, 0, 0.95) is None


@pytest.mark.parametrize("name", ["agreement", "kappa", "spearman", "pearson", "mae"])
def test_bootstrap_interval_is_scipys_percentile_interval(name: str) -> None:
    human, judge = _pairs(7, 60, 3)
    statistic = {**st.CATEGORICAL, **st.NUMERIC}[name]

    def vectorless(h: np.ndarray, j: np.ndarray) -> float:
        value = statistic(h, j)
        assert value is not None  # these data have no degenerate resample
        return value

    ours = st.bootstrap(statistic, human, judge, 1000, 0, 0.95)
    theirs = sps.bootstrap(
        (human, judge),
        vectorless,
        paired=True,
        vectorized=False,
        n_resamples=1000,
        method="percentile",
        rng=np.random.default_rng(0),
    ).confidence_interval
    assert ours is not None
    assert ours == pytest.approx((theirs.low, theirs.high), abs=TIGHT)


class _Graded(Metric):
    """Test metric: the score written in the sample's metadata, None (unscored) when absent."""

    name: ClassVar[str] = "graded"
    required: ClassVar[tuple[str, ...]] = ("user_input",)
    default_threshold: ClassVar[float | None] = 0.5

    async def _score(self, sample: MultiTurnSample, ask: Ask) -> MetricResult:
        value = (sample.metadata or {}).get("graded")
        return MetricResult(value, "scripted" if value is not None else "nothing to grade")


def _answer(inputs: Any) -> Any:
    """Relevant unless the reply says off-topic; a reply saying FAIL makes the judge fail."""
    if any("FAIL" in reply for _, reply in inputs.pairs.values()):
        return BackendFailure(Failure.FATAL, "scripted failure")  # a judge failure
    verdicts = [
        {"exchange": i, "relevant": "off-topic" not in inputs.pairs[i][1], "reason": f"why {i}"}
        for i, _ in inputs.windows
    ]
    return {"verdicts": verdicts}


def _sample(n: int, replies: tuple[str, str], labels: Any = None, graded: Any = None) -> Any:
    metadata: dict[str, Any] = {}
    if labels is not None:
        metadata["labels"] = labels
    if graded is not None:
        metadata["graded"] = graded
    return MultiTurnSample(
        user_input=[
            HumanMessage(content=f"question {n}"),
            AIMessage(content=replies[0]),
            HumanMessage(content=f"follow-up {n} <script>"),
            AIMessage(content=replies[1]),
        ],
        id=f"r{n}",
        metadata=metadata or None,
    )


def _run(tmp_path: Path, samples: list[Any]) -> Path:
    out = tmp_path / "results.jsonl"
    judge = FakeJudge({VERDICTS.name: _answer})
    evaluate(
        samples,
        ["conversation_relevancy", _Graded()],
        judge,
        output=out,
        show_progress=False,
    )
    return out


OK, OFF = "fine answer", "off-topic answer"
SAMPLES = [
    # exchange labels: judge (T, T); labels (T, F) -> one disagreement
    _sample(0, (OK, OK), {"conversation_relevancy": {"0": True, "1": False}, "graded": 1.0}, 1.0),
    # judge (F, T); labels (F, T); the graded label is 0.5 against a score of 0.25
    _sample(1, (OFF, OK), {"conversation_relevancy": {"0": False, "1": True}, "graded": 0.5}, 0.25),
    # labels exchange 5, which does not exist: unscored; exchange 0 agrees
    _sample(2, (OK, OFF), {"conversation_relevancy": {"0": True, "5": False}}, 0.75),
    # the judge fails: both exchange labels are failed, never agreement or disagreement
    _sample(3, ("FAIL", OK), {"conversation_relevancy": {"0": True, "1": True}}, 0.0),
    # no labels at all: two unlabelled exchanges, one unlabelled graded score
    _sample(4, (OK, OK), None, 0.5),
    # a graded label on a record the metric leaves unscored
    _sample(5, (OFF, OFF), {"graded": 0.0, "conversation_relevancy": {"1": False}}),
]


def test_counts_apart_and_figures_from_the_labelled_items(tmp_path: Path) -> None:
    report = agree(_run(tmp_path, SAMPLES))
    assert isinstance(report, AgreementReport)
    rel = report.get("conversation_relevancy", "relevant")
    # labelled pairs: r0 x2, r1 x2, r2 x1, r5 x1
    assert (rel.labelled, rel.unlabelled, rel.unscored, rel.failed) == (6, 4, 1, 2)
    human = np.array([1, 0, 0, 1, 1, 0], dtype=float)
    judge = np.array([1, 1, 0, 1, 1, 0], dtype=float)
    assert rel.scale == "binary"
    assert rel.agreement == pytest.approx(5 / 6, abs=TIGHT)
    assert rel.kappa == pytest.approx(cohen_kappa_score(human, judge), abs=TIGHT)
    assert rel.confusion == confusion_matrix(human, judge).tolist() == [[2, 1], [0, 3]]
    assert rel.spearman is None and rel.mae is None
    [wrong] = rel.disagreements
    assert (wrong.id, wrong.key, wrong.label, wrong.judged, wrong.reason) == (
        "r0",
        "1",
        False,
        True,
        "why 1",
    )
    graded = report.get("graded")
    # r0 and r1 labelled and scored, r5 labelled but unscored, r2/r3/r4 scored without label
    assert (graded.labelled, graded.unlabelled, graded.unscored, graded.failed) == (2, 3, 1, 0)
    assert graded.scale == "numeric"
    assert graded.mae == pytest.approx(0.125, abs=TIGHT)  # |1 - 1| and |0.5 - 0.25|
    assert graded.spearman == pytest.approx(1.0, abs=TIGHT)
    assert graded.agreement == 0.5
    with pytest.raises(KeyError):
        report.get("conversation_relevancy")  # no record-level label for it


def test_numeric_labels_get_correlations_and_intervals(tmp_path: Path) -> None:
    grades = [0.0, 0.25, 0.5, 0.75, 1.0, 0.5, 0.25, 1.0]
    labels = [0.0, 0.5, 0.5, 1.0, 1.0, 0.25, 1.0, 0.75]
    samples = [
        _sample(i, (OK, OK), {"graded": lab}, g)
        for i, (g, lab) in enumerate(zip(grades, labels, strict=True))
    ]
    report = agree(_run(tmp_path, samples), metrics=["graded"], resamples=200, seed=3)
    graded = report.get("graded")
    h, j = np.array(labels), np.array(grades)
    assert graded.pearson == pytest.approx(sps.pearsonr(h, j)[0], abs=TIGHT)
    assert graded.spearman == pytest.approx(sps.spearmanr(h, j)[0], abs=TIGHT)
    assert graded.mae == pytest.approx(mean_absolute_error(h, j), abs=TIGHT)
    levels = cohen_kappa_score((h * 4).astype(int), (j * 4).astype(int))  # quarters as classes
    assert graded.kappa == pytest.approx(levels, abs=TIGHT)
    low, high = graded.intervals["pearson"] or (None, None)
    assert low is not None and high is not None and low <= graded.pearson <= high
    again = agree(report.results, metrics=["graded"], resamples=200, seed=3).get("graded")
    assert again.intervals == graded.intervals  # seeded: the same intervals every time
    # The largest disagreement comes first.
    assert [d.id for d in graded.disagreements] == ["r6", "r1", "r3", "r5", "r7"]
    frame = report.to_pandas()
    assert list(frame["metric"]) == ["graded"]
    assert frame.loc[0, "labelled"] == 8 and frame.loc[0, "pearson_low"] == low


def test_boolean_score_labels_compare_with_the_pass_mark(tmp_path: Path) -> None:
    samples = [
        _sample(i, (OK, OK), {"graded": i % 2 == 0}, 0.5 if i < 3 else 0.1) for i in range(5)
    ]
    graded = agree(_run(tmp_path, samples)).get("graded")
    # pass at >= 0.5: judged T T T F F; labelled T F T F T
    assert graded.scale == "binary" and graded.threshold == 0.5
    assert graded.agreement == pytest.approx(3 / 5, abs=TIGHT)
    assert {d.id for d in graded.disagreements} == {"r1", "r4"}


def test_a_labels_file_replaces_the_metadata_labels(tmp_path: Path) -> None:
    results = _run(tmp_path, SAMPLES)
    labels = tmp_path / "labels.jsonl"
    lines = [
        {"id": "r0", "conversation_relevancy": {"0": True, "1": True}},
        {"id": "r1", "labels": {"graded": 0.25}},
        {"id": "elsewhere", "graded": 1},
        {"id": "r2", "not_a_metric": 1},
    ]
    labels.write_text("\n".join(json.dumps(line) for line in lines) + "\n\n", encoding="utf-8")
    report = agree(results, labels)
    rel = report.get("conversation_relevancy", "relevant")
    # 10 verdicts (r3 failed, so none there), 2 of them labelled in the file
    assert (rel.labelled, rel.agreement, rel.unlabelled) == (2, 1.0, 8)
    assert report.get("graded").agreement == 1.0
    assert report.unmatched_labels == 1 and report.unknown_metrics == ["not_a_metric"]


@pytest.mark.parametrize(
    ("line", "problem"),
    [
        ("not json", "not a JSON object"),
        ('{"graded": 1}', "needs the record's 'id'"),
        ('{"id": "r0", "graded": "high"}', "labels.graded: a label is a number"),
        ('{"id": "r0", "graded": {"0": true}}', "per-verdict labels are read for"),
        ('{"id": "r0", "conversation_relevancy": {"first": true}}', "not a exchange number"),
        ('{"id": "r0", "conversation_relevancy": {"0": {"answered": true}}}', "unknown verdict"),
        ('{"id": "r0", "conversation_relevancy": {"0": "yes"}}', "give true/false"),
        ('{"id": "r0", "graded": NaN}', "NaN is not valid JSON"),
        ('{"id": "r0", "graded": 1, "graded": 0}', "duplicate key 'graded'"),
    ],
)
def test_bad_labels_name_file_and_line(tmp_path: Path, line: str, problem: str) -> None:
    results = _run(tmp_path, SAMPLES[:1])
    labels = tmp_path / "labels.jsonl"
    labels.write_text('{"id": "r1", "graded": 1}\n' + line + "\n", encoding="utf-8")
    with pytest.raises(LabelsError, match=f"^{labels}:2") as caught:
        agree(results, labels)
    assert problem in str(caught.value)


def test_bad_metadata_labels_name_the_data_line(tmp_path: Path) -> None:
    data = tmp_path / "data.jsonl"
    sample = _sample(0, (OK, OK), {"graded": [1]}, 1.0).to_dict()
    data.write_text(json.dumps(sample) + "\n", encoding="utf-8")
    out = tmp_path / "r.jsonl"
    evaluate(data, [_Graded()], output=out, show_progress=False)
    with pytest.raises(LabelsError, match=f"^{data}:1 .*labels.graded"):
        agree(out)


def test_unknown_metric_and_missing_results_are_errors(tmp_path: Path) -> None:
    results = _run(tmp_path, SAMPLES[:1])
    with pytest.raises(Exception, match="not metrics of this run"):
        agree(results, metrics=["nope"])
    with pytest.raises(Exception, match="no such results file"):
        agree(tmp_path / "missing.jsonl")


def test_the_page_lists_disagreements_with_escaped_transcripts(tmp_path: Path) -> None:
    from convoeval.report.agreement import agreement_html, write_agreement_report

    report = agree(_run(tmp_path, SAMPLES))
    page = agreement_html(report)
    assert "<script" not in page and "follow-up 0 &lt;script&gt;" in page
    assert "why 1" in page  # the judge's reason of the r0 exchange 1 disagreement
    assert "label \\ judge" in page and "1.000 [" in page
    target = write_agreement_report(report, tmp_path / "out" / "agree.html")
    assert target.read_text(encoding="utf-8") == page


def test_tool_use_calls_and_topic_labels_by_name(tmp_path: Path) -> None:
    from convoeval import ToolCall
    from convoeval.metrics.tool_use import VERDICTS as TOOL_VERDICTS

    def verdicts(inputs: Any) -> dict[str, Any]:
        # call 0 is right; call 1 has the right tool with wrong arguments
        calls = [
            {"call": c, "right_tool": True, "right_arguments": c == 0, "reason": f"call {c}"}
            for c in inputs.calls
        ]
        return {"verdicts": calls, "missing": []}

    labels = {
        "tool_use": {"0": True, "1": {"right_tool": False, "right_arguments": False}},
        "topic_adherence": {"Order Status": {"answered": True}, "refund": False},
    }
    sample = MultiTurnSample(
        user_input=[
            HumanMessage(content="where is my order?"),
            AIMessage(content="", tool_calls=[ToolCall(name="get_order", args={"id": 1})]),
            AIMessage(content="", tool_calls=[ToolCall(name="get_order", args={"id": 2})]),
            AIMessage(content="it ships today"),
        ],
        reference_topics=["orders"],
        id="t0",
        metadata={"labels": labels},
    )
    topics = {"topics": [{"topic": "order status", "message_index": 0, "quote": "where"}]}
    judge = FakeJudge(
        {
            TOOL_VERDICTS.name: verdicts,
            "topic_adherence.extract_topics": [topics],
            "topic_adherence.answered": [
                {"verdicts": [{"topic": "order status", "answered": True}]}
            ],
            "topic_adherence.in_scope": [
                {"verdicts": [{"topic": "order status", "in_scope": True}]}
            ],
        }
    )
    out = tmp_path / "r.jsonl"
    evaluate([sample], ["tool_use", "topic_adherence"], judge, output=out, show_progress=False)
    report = agree(out)
    right_tool = report.get("tool_use", "right_tool")
    assert (right_tool.labelled, right_tool.agreement) == (2, 0.5)
    assert [(d.key, d.label, d.judged, d.reason) for d in right_tool.disagreements] == [
        ("1", False, True, "call 1")
    ]
    arguments = report.get("tool_use", "right_arguments")
    assert (arguments.labelled, arguments.agreement) == (1, 1.0)  # a bare true is right_tool only
    answered = report.get("topic_adherence", "answered")
    # "Order Status" matches the topic "order status"; no topic is called "refund": unscored
    assert (answered.labelled, answered.unscored, answered.agreement) == (1, 1, 1.0)
