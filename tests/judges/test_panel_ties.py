"""A two-judge panel that disagrees (issue 32 part 3): a tie is recorded as a tie, with its
confidence, and decided by the rule docs/judges.md states (the first member, the chair)."""

from __future__ import annotations

import re
from pathlib import Path

from _parcel import PARCEL

from convoeval import evaluate
from convoeval.judges import JudgePanel
from convoeval.judges.fake import FakeJudge
from convoeval.metrics.agent_goal_accuracy import WITHOUT_REFERENCE
from convoeval.metrics.conversation_relevancy import VERDICTS, ConversationRelevancy

ROOT = Path(__file__).resolve().parents[2]
GOAL = "agent_goal_accuracy"


def _goal(name: str, achieved: bool) -> FakeJudge:
    answer = {"user_goal": "track", "end_state": "told", "achieved": achieved, "reason": name}
    return FakeJudge({WITHOUT_REFERENCE.name: [answer]}, name=name)


def _relevancy(name: str, first: bool, second: bool) -> FakeJudge:
    verdicts = [
        {"exchange": 0, "relevant": first, "reason": name},
        {"exchange": 1, "relevant": second, "reason": name},
    ]
    return FakeJudge({VERDICTS.name: [{"verdicts": verdicts}]}, name=name)


def test_a_two_judge_tie_is_recorded_and_goes_to_the_first_member(tmp_path: Path) -> None:
    for first, second in ((True, False), (False, True)):
        panel = JudgePanel([_goal("chair", first), _goal("second", second)])
        result = evaluate([PARCEL], [GOAL], panel, output=tmp_path / f"{first}.jsonl")
        [row] = result.rows()
        assert row["scores"][GOAL] == float(first)  # the chair's verdict, whichever it is
        [record] = row["details"][GOAL]["judge_panel"]
        assert record["tie"] is True and record["ties"] == ["answer"]
        assert record["confidence"] == {"answer": 0.5}


async def test_only_the_tied_verdicts_of_a_keyed_step_are_ties() -> None:
    panel = JudgePanel(
        [_relevancy("a", True, False), _relevancy("b", True, True), _relevancy("c", True, True)]
    )
    result = await ConversationRelevancy().score(PARCEL, judge=panel)
    [record] = result.details["judge_panel"]
    assert record["tie"] is False and record["ties"] == []  # 3 of 3, then 2 of 3

    two = JudgePanel([_relevancy("a", True, False), _relevancy("b", True, True)])
    result = await ConversationRelevancy().score(PARCEL, judge=two)
    [record] = result.details["judge_panel"]
    assert record["tie"] is True and record["ties"] == ["1"]
    assert record["confidence"] == {"0": 1.0, "1": 0.5}
    assert [v["relevant"] for v in result.details["verdicts"]] == [True, False]  # a's


def test_the_readme_states_the_tie_rule() -> None:
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    judges = " ".join((ROOT / "docs" / "judges.md").read_text(encoding="utf-8").split())
    for text in (readme, judges):
        assert re.search(r"a tie .{0,80}goes to the first", text, re.I), "tie rule not stated"
