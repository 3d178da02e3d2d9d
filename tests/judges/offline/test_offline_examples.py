"""The bundled examples are judged right by the default offline judge (issue 12, item 14).

Each conversation's expected verdicts, as a person would give them: for every user request, is
it within the support bot's topics and did the bot answer it; for every exchange, is the reply
relevant. They are read from the results file of one `evaluate()` run with `judge="offline"`, the
way a user would read them, so a change to the calibration that flips any of them fails here.
"""

from __future__ import annotations

import json
import re
from pathlib import Path
from typing import Any

import pytest

from convoeval import evaluate

EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "support.jsonl"

#: Per conversation: (request quote, in scope, answered) for every request the user made.
TOPICS: dict[str, list[tuple[str, bool, bool]]] = {
    "order-status": [
        ("where is my order VB-1042? It was supposed to arrive yesterday.", True, True),
        ("Can I get a notification when it arrives?", True, True),
    ],
    "return-two-items": [
        (
            "I want to return the charger and one of the two cables from order VB-2210, the"
            " charger gets really hot.",
            True,
            True,
        ),
    ],
    "refuses-investment-advice": [
        ("Should I buy Nvidia stock before their earnings call?", False, False),
        ("Does the Aria X2 speaker support Bluetooth 5.3?", True, True),
    ],
    "answers-off-topic-recipe": [
        ("Before we start, do you have a good recipe for carbonara?", False, True),
        ("Also, what's your return window for headphones?", True, True),
    ],
    "product-search-filters": [
        ("I'm looking for noise cancelling headphones under $200.", True, True),
    ],
    "address-wrong-zip": [
        (
            "Please change the delivery address of order VB-3307 to 12 Harbour Street, Leith,"
            " EH6 6QW.",
            True,
            True,
        ),
    ],
    "irrelevant-warranty-reply": [
        ("How long is the warranty on the Volt Pro laptop?", True, True),
        ("That's not what I asked. What about the warranty?", True, True),
    ],
    "track-and-return-policy": [
        ("Can you track parcel JD0199120 for me?", True, True),
        ("what is your refund policy for opened items?", True, True),
    ],
    "refuses-medical-question": [
        (
            "My smartwatch says my resting heart rate is 110. Is that dangerous, should I change"
            " my medication?",
            False,
            False,
        ),
    ],
    "cancel-without-tool": [
        ("Please cancel order VB-4120, I ordered the wrong colour.", True, True),
    ],
    "duplicate-lookups": [("Has order VB-5581 shipped yet?", True, True)],
    "system-prompt-compatibility": [
        ("Will the Volt Pro charger work with my old Volt Air laptop?", True, True),
    ],
}

#: Per conversation: the relevancy verdict of each exchange, in order.
RELEVANT: dict[str, list[bool]] = {
    "order-status": [True, True],
    "return-two-items": [True],
    "refuses-investment-advice": [True, True],
    "answers-off-topic-recipe": [True, True],
    "product-search-filters": [True],
    "address-wrong-zip": [True],
    "irrelevant-warranty-reply": [False, True],  # shipping times in answer to a warranty question
    "track-and-return-policy": [True],
    "refuses-medical-question": [True],
    "cancel-without-tool": [True],
    "duplicate-lookups": [True],
    "system-prompt-compatibility": [True, True],
}


@pytest.fixture(scope="module")
def rows(tmp_path_factory: pytest.TempPathFactory) -> dict[str, dict[str, Any]]:
    """The offline judge's results rows for the bundled examples, keyed by conversation id."""
    output = tmp_path_factory.mktemp("examples") / "support.results.jsonl"
    evaluate(
        str(EXAMPLES),
        ["topic_adherence", "conversation_relevancy"],
        judge="offline",
        output=output,
        cache=False,
        show_progress=False,
    )
    with output.open(encoding="utf-8") as fh:
        parsed = [json.loads(line) for line in fh if line.strip()]
    return {row["id"]: row for row in parsed}


def test_every_example_has_expected_verdicts(rows: dict[str, dict[str, Any]]) -> None:
    assert set(rows) == set(TOPICS) == set(RELEVANT)


@pytest.mark.parametrize("sample_id", sorted(TOPICS))
def test_topic_verdicts(rows: dict[str, dict[str, Any]], sample_id: str) -> None:
    topics = rows[sample_id]["details"]["topic_adherence"]["topics"]
    got = [(t["quote"], t["in_scope"], t["answered"]) for t in topics]
    assert got == TOPICS[sample_id]


@pytest.mark.parametrize("sample_id", sorted(RELEVANT))
def test_relevancy_verdicts(rows: dict[str, dict[str, Any]], sample_id: str) -> None:
    verdicts = rows[sample_id]["details"]["conversation_relevancy"]["verdicts"]
    assert [v["relevant"] for v in sorted(verdicts, key=lambda v: v["exchange"])] == RELEVANT[
        sample_id
    ]


def test_topic_adherence_scores_follow_the_verdicts(rows: dict[str, dict[str, Any]]) -> None:
    # Only the carbonara recipe is answered outside the topics: one false positive.
    scores = {i: row["scores"]["topic_adherence"] for i, row in rows.items()}
    assert scores.pop("answers-off-topic-recipe") == pytest.approx(2 / 3)
    assert set(scores.values()) == {1.0}


def test_an_irrelevant_reply_gets_the_offline_reason(rows: dict[str, dict[str, Any]]) -> None:
    """Issue 12 item 15: the offline relevancy reason says why, in the row and in its summary."""
    row = rows["irrelevant-warranty-reply"]
    first, second = sorted(
        row["details"]["conversation_relevancy"]["verdicts"], key=lambda v: v["exchange"]
    )
    found = re.fullmatch(
        r"the reply has little in common with the request \(offline relevance (0\.\d\d) < 0\.50\)",
        first["reason"],
    )
    assert found and float(found.group(1)) < 0.5, first["reason"]
    assert second["reason"] == ""
    assert row["reasons"]["conversation_relevancy"] == (
        f"1 of 2 replies were relevant; not relevant: exchange 1: {first['reason']}."
    )
