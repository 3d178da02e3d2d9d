"""Judge panels (issue 15 part 3): several judges answer every step, the majority verdict is the
answer (the vote of repeated samples, ties to the earliest member), the details keep every
member's answer, and the run reports Fleiss' kappa between the members per metric."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import numpy as np
import pytest
from _parcel import PARCEL

from _cli import convoeval
from convoeval import evaluate
from convoeval.judges import JudgeConfigError, JudgePanel, StepUnsupported, resolve_judge
from convoeval.judges.core.backend import BackendFailure, Failure
from convoeval.judges.fake import FakeJudge
from convoeval.metrics.agent_goal_accuracy import AgentGoalAccuracyWithoutReference
from convoeval.metrics.conversation_relevancy import VERDICTS, ConversationRelevancy
from convoeval.report import write_report
from convoeval.runner import OfflineJudgeError
from convoeval.stats.panels import PanelAgreement, agreement_lines, fleiss_kappa

if TYPE_CHECKING:
    from conftest import FaultServer

SAMPLE = PARCEL

#: Fleiss (1971) as on Wikipedia's "Fleiss' kappa" page: 10 items, 14 raters, 5 categories.
TEXTBOOK = [
    [0, 0, 0, 0, 14],
    [0, 2, 6, 4, 2],
    [0, 0, 3, 5, 6],
    [0, 3, 9, 2, 0],
    [2, 2, 8, 1, 1],
    [7, 7, 0, 0, 0],
    [3, 2, 6, 3, 0],
    [2, 5, 3, 2, 2],
    [6, 5, 2, 1, 0],
    [0, 2, 2, 3, 7],
]


def _member(name: str, *pairs: tuple[bool, bool] | BaseException) -> FakeJudge:
    """A fake member answering relevancy: (exchange 0 relevant, exchange 1 relevant) per call."""
    answers: list[Any] = [
        p
        if isinstance(p, BaseException)
        else {
            "verdicts": [
                {"exchange": 0, "relevant": p[0], "reason": name},
                {"exchange": 1, "relevant": p[1], "reason": name},
            ]
        }
        for p in pairs
    ]
    return FakeJudge({VERDICTS.name: answers}, name=name)


async def test_the_majority_of_the_members_decides_each_verdict() -> None:
    panel = JudgePanel(
        [_member("a", (True, False)), _member("b", (True, True)), _member("c", (False, False))]
    )
    result = await ConversationRelevancy().score(SAMPLE, judge=panel)
    assert result.value == 0.5  # exchange 0 relevant (a, b), exchange 1 not (a, c)
    assert [v["reason"] for v in result.details["verdicts"]] == ["a", "a"]
    [record] = result.details["judge_panel"]
    assert record["members"] == ["a", "b", "c"] and record["answered"] == 3
    assert record["confidence"] == {"0": pytest.approx(2 / 3), "1": pytest.approx(2 / 3)}
    assert record["ratings"] == {
        "0": {"relevant": [True, True, False]},
        "1": {"relevant": [False, True, False]},
    }
    assert [a["verdicts"][1]["relevant"] for a in record["answers"].values()] == [
        False,
        True,
        False,
    ]
    assert result.usage.requests == 3  # the sum of the members'
    assert "judge_samples" not in result.details


async def test_a_tie_goes_to_the_earliest_member() -> None:
    panel = JudgePanel([_member("a", (False, True)), _member("b", (True, False))])
    result = await ConversationRelevancy().score(SAMPLE, judge=panel)
    assert [v["relevant"] for v in result.details["verdicts"]] == [False, True]
    assert result.details["judge_panel"][0]["confidence"] == {"0": 0.5, "1": 0.5}


async def test_a_failing_member_is_left_out_while_a_majority_answers() -> None:
    failing = _member("b", BackendFailure(Failure.FATAL, "model overloaded"))
    panel = JudgePanel([_member("a", (True, True)), failing, _member("c", (True, False))])
    result = await ConversationRelevancy().score(SAMPLE, judge=panel)
    assert result.value == 1.0  # exchange 1: a (True) against c (False), the tie to a
    [record] = result.details["judge_panel"]
    assert record["answered"] == 2 and record["answers"]["b"] is None
    assert "model overloaded" in record["errors"]["b"]
    assert record["ratings"]["0"] == {"relevant": [True, None, True]}


async def test_the_step_fails_without_a_majority_of_members() -> None:
    boom = BackendFailure(Failure.FATAL, "boom")
    panel = JudgePanel([_member("a", boom), _member("b", boom), _member("c", (True, True))])
    result = await ConversationRelevancy().score(SAMPLE, judge=panel)
    assert result.failed and result.error is not None
    message = result.error["message"]
    assert "only 1 of 3 panel members answered (at least 2 needed" in message
    assert "panel member 'a' failed" in message
    assert result.usage.requests == 3


def test_panels_are_built_from_lists_and_described() -> None:
    with pytest.raises(JudgeConfigError, match="at least two judges"):
        JudgePanel([FakeJudge({})])
    one = FakeJudge({}, name="x")
    assert resolve_judge([one]) is one  # one judge is used as it is
    panel = resolve_judge([FakeJudge({}, name="x"), FakeJudge({}, name="x")])
    assert isinstance(panel, JudgePanel)
    assert panel.labels == ["x", "x#2"] and panel.name == "panel(x, x#2)"
    desc = panel.describe()
    assert desc["kind"] == "panel" and [m["name"] for m in desc["members"]] == ["x", "x"]


def test_fleiss_kappa_matches_the_textbook_example() -> None:
    # Fleiss (1971): P = 0.378, Pe = 0.213, kappa = 0.210
    assert fleiss_kappa(TEXTBOOK) == pytest.approx(0.20993, abs=1e-5)
    assert fleiss_kappa([[3, 0], [0, 3]]) == pytest.approx(1.0)
    assert fleiss_kappa([[3, 0], [3, 0]]) is None  # every rating in one category
    with pytest.raises(ValueError, match="same number"):
        fleiss_kappa([[1, 1], [3, 0]])


def test_fleiss_kappa_matches_statsmodels() -> None:
    irr = pytest.importorskip("statsmodels.stats.inter_rater")
    rng = np.random.default_rng(7)
    for _ in range(5):
        table = rng.multinomial(5, [0.5, 0.3, 0.2], size=30)
        assert fleiss_kappa(table) == pytest.approx(irr.fleiss_kappa(table, method="fleiss"))


def test_streamed_agreement_equals_the_table_formula() -> None:
    votes = [[True, True, False], [False, False, False], [True, True, True], [True, False, None]]
    ratings = {str(i): {"relevant": v} for i, v in enumerate(votes)}
    agreement = PanelAgreement()
    agreement.add_row({"m": {"judge_panel": [{"ratings": ratings}]}, "other": {"x": 1}})
    [(name, stats)] = agreement.summary().items()
    table = [[2, 1], [0, 3], [3, 0]]  # the three items every member rated
    assert name == "m" and stats["verdicts"] == 3 and stats["incomplete"] == 1
    assert stats["judges"] == 3 and stats["kappa"] == pytest.approx(fleiss_kappa(table))
    [line] = agreement_lines(agreement.summary())
    assert line.startswith(f"panel agreement (Fleiss' kappa) on m: {stats['kappa']:.2f} over 3")


def test_evaluate_with_a_list_reports_the_agreement(tmp_path: Path) -> None:
    members = [
        _member("a", (True, False), (True, True)),
        _member("b", (True, True), (True, True)),
    ]
    result = evaluate(
        [SAMPLE, SAMPLE],
        ["conversation_relevancy"],
        members,
        output=tmp_path / "r.jsonl",
        show_progress=False,
    )
    stats = result.panel_agreement()["conversation_relevancy"]
    # 4 items: 3 agree on True, 1 splits -> P = 0.75, shares 7/8 and 1/8, Pe = 50/64
    assert stats["verdicts"] == 4 and stats["judges"] == 2
    assert stats["kappa"] == pytest.approx((0.75 - 50 / 64) / (1 - 50 / 64))
    assert result.meta["panel_agreement"] == result.panel_agreement()
    assert result.meta["judge"] is not None and result.meta["judge"]["kind"] == "panel"
    page = tmp_path / "report.html"
    write_report(result, page)
    html = page.read_text(encoding="utf-8")
    assert "<h3>Judge panel</h3>" in html
    assert f"on conversation_relevancy: {stats['kappa']:.2f} over 4 verdicts" in html


async def test_the_offline_judge_votes_where_it_can_answer() -> None:
    alone = await ConversationRelevancy().score(SAMPLE, judge="offline")
    offline = [v["relevant"] for v in alone.details["verdicts"]]
    panel = JudgePanel(
        [resolve_judge("offline"), _member("yes", (True, True)), _member("no", (False, False))]
    )
    result = await ConversationRelevancy().score(SAMPLE, judge=panel)
    assert [v["relevant"] for v in result.details["verdicts"]] == offline  # it breaks the split
    assert result.details["judge_panel"][0]["members"][1:] == ["yes", "no"]


async def test_the_offline_member_refuses_llm_only_steps(tmp_path: Path) -> None:
    panel = JudgePanel([resolve_judge("offline"), FakeJudge({}, name="llm")])
    with pytest.raises(OfflineJudgeError, match="panel member 'offline' is the offline one"):
        evaluate(
            [SAMPLE],
            ["agent_goal_accuracy"],
            panel,
            output=tmp_path / "r.jsonl",
            show_progress=False,
        )
    step = AgentGoalAccuracyWithoutReference.steps[0]
    llm = FakeJudge({step.name: [BackendFailure(Failure.FATAL, "down")]}, name="llm")
    with pytest.raises(StepUnsupported, match="panel member 'offline' cannot answer"):
        await JudgePanel([resolve_judge("offline"), llm]).run(step, {"transcript": "hi"})


def _relevant_for(model: str) -> Any:
    """A server responder: exchange 0 relevant for both models, exchange 1 only for `model`."""

    def respond(body: dict[str, Any]) -> dict[str, Any]:
        schema = body["response_format"]["json_schema"]["schema"]
        keys = schema["properties"]["verdicts"]["required"]
        verdicts = {k: {"relevant": k == "0" or body["model"] == model, "reason": ""} for k in keys}
        return {"verdicts": verdicts}

    return respond


def test_cli_repeated_judge_is_a_panel(fault_server: FaultServer, tmp_path: Path) -> None:
    fault_server.responder = _relevant_for("m1")
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"user_input": [m.model_dump() for m in SAMPLE.user_input]}) + "\n")
    env = {**os.environ, "CONVOEVAL_CACHE_DIR": str(tmp_path / "cache")}
    args = [
        "run", str(data), "-m", "conversation_relevancy", "--judge", "openai/m1",
        "--judge", "openai/m2", "--base-url", fault_server.url, "--api-key", "sk-test",
        "-o", str(tmp_path / "r.jsonl"), "-q",
    ]  # fmt: skip
    done = convoeval(*args, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert fault_server.attempts == 2
    assert sorted(b["model"] for b in fault_server.bodies) == ["m1", "m2"]
    [row] = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()]
    # exchange 1: m1 says relevant, m2 not; the tie goes to the first member (m1)
    assert row["scores"]["conversation_relevancy"] == 1.0
    record = row["details"]["conversation_relevancy"]["judge_panel"][0]
    assert record["members"] == ["openai/m1", "openai/m2"]
    assert record["ratings"]["1"] == {"relevant": [True, False]}
    assert "panel agreement (Fleiss' kappa) on conversation_relevancy: " in done.stdout
    assert "over 2 verdicts" in done.stdout
    again = convoeval(*args, env=env, timeout=120)
    assert again.returncode == 0, again.stderr  # resumed: nothing asked again
    assert fault_server.attempts == 2
    swapped = [*args[:4], "--judge", "openai/m2", "--judge", "openai/m1", *args[8:]]
    changed = convoeval(*swapped, env=env, timeout=120)
    m1, m2 = (f"openai/{m} {m} {fault_server.url}" for m in ("m1", "m2"))
    assert (changed.returncode, changed.stdout) == (2, "")  # another run's file
    assert changed.stderr == (
        f"error: {tmp_path / 'r.jsonl'} cannot be resumed by this run: conversation_relevancy's "
        f"judge differs (panel: {m1}; {m2} -> panel: {m2}; {m1}); use --overwrite "
        "(overwrite=True in Python) to start again, or another output file (-o)\n"
    )
    assert fault_server.attempts == 2
