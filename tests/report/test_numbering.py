"""Messages, exchanges, tool calls and records are numbered from 1 wherever people read them:
metric reasons, data errors and the report (its transcript, verdict tables and rows) all name
the same message the same way. Paths keep the 0-based index in brackets (`user_input[3]`), and
the details tables say their indexes count from 0."""

from __future__ import annotations

import re
import sys
from pathlib import Path
from typing import Any

from convoeval import (
    AIMessage,
    HumanMessage,
    MultiTurnSample,
    ToolCall,
    ToolCallAccuracy,
    evaluate,
)
from convoeval.io import record_to_sample
from convoeval.io.errors import DataError
from convoeval.judges.fake import FakeJudge
from convoeval.metrics.conversation_relevancy import VERDICTS as RELEVANCY
from convoeval.metrics.role_adherence import VERDICTS as ROLE
from convoeval.report import render_report

sys.path.insert(0, str(Path(__file__).resolve().parents[1] / "metrics"))
from _judgments import chat, keyed


def _label(page: str, text: str) -> int:
    """The number the report's transcript shows for the message whose text is `text`."""
    found = re.search(r"message (\d+) &middot; <bdi>\w+</bdi></span><bdi>" + text + "</bdi>", page)
    assert found is not None, text
    return int(found.group(1))


def test_reasons_and_the_report_name_the_same_message(tmp_path: Path) -> None:
    judge = FakeJudge(
        {
            ROLE.name: keyed("message", "in_role", (3,)),  # user_input[3]: "reply 1"
            RELEVANCY.name: keyed("exchange", "relevant", (2,)),  # the third exchange
        }
    )
    result = evaluate(
        [chat(3)], ["role_adherence", "conversation_relevancy"], judge,
        output=tmp_path / "r.jsonl", show_progress=False,
    )  # fmt: skip
    row = next(iter(result.rows()))
    assert (
        row["reasons"]["role_adherence"] == "2 of 3 replies stayed in role; not: message 4: lost."
    )
    assert row["reasons"]["conversation_relevancy"].endswith("not relevant: exchange 3: lost.")
    assert row["details"]["role_adherence"]["verdicts"][1]["message"] == 3  # data: 0-based
    page = render_report(result)
    assert _label(page, "reply 1") == 4 and _label(page, "user 0") == 1
    # The verdict tables number their messages and exchanges as the reasons do.
    assert "<th>message</th>" in page and "<td><bdi>4</bdi></td>" in page
    assert "<th>exchange</th>" in page and "<td><bdi>3</bdi></td>" in page
    # The conversations list numbers its records from 1 too.
    assert re.search(r'data-index="0"><summary><span class="num">1</span>', page)


def test_tool_calls_are_numbered_from_1_in_reasons_and_the_report(tmp_path: Path) -> None:
    sample = MultiTurnSample(
        user_input=[
            HumanMessage(content="ship order 7"),
            AIMessage(content="", tool_calls=[ToolCall(name="ship", args={"order": 8})]),
        ],
        reference_tool_calls=[ToolCall(name="ship", args={"order": 7})],
    )
    reason = ToolCallAccuracy().score_sync(sample).reason or ""
    assert "ship (#1 vs expected #1) scored 0" in reason
    result = evaluate([sample], ["tool_call_accuracy"], output=tmp_path / "r.jsonl")
    page = render_report(result)
    cells = re.search(r"<th>made #</th><th>expected #</th>.*?</tr>.*?<tr>(.*?)</tr>", page)
    assert cells is not None and cells.group(1).count("<td><bdi>1</bdi></td>") == 2


def test_data_errors_number_messages_from_1_beside_the_0_based_path() -> None:
    record: dict[str, Any] = {
        "turns": [
            {"input": "a", "actual_output": "b"},
            {"input": "c", "steps": [{"type": "tool", "content": "x"}]},
        ]
    }
    try:
        record_to_sample(record)
    except DataError as exc:
        problems = exc.problems
    assert problems[0].startswith("turns[1] (message 4 of the conversation): ToolMessage")


def test_generic_details_say_their_indexes_count_from_0(tmp_path: Path) -> None:
    from convoeval.report.details import metric_details

    row = {"scores": {"m": 1.0}, "details": {"m": {"matched": [{"made": 0, "expected": 0}]}}}
    assert "indexes in these details count from 0" in metric_details("m", row)
