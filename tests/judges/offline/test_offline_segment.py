"""Request segmentation for topic extraction (rules only, no model)."""

from __future__ import annotations

from convoeval.judges.offline.segment import segment_requests, split_message, topic_label


def test_multi_request_message_is_split_and_context_kept() -> None:
    reqs = segment_requests(
        [
            "Hi there!",
            "Hello, I lost my credit card yesterday. Can you block it? "
            "Also, what will the weather be like in Paris tomorrow?",
        ]
    )
    assert [r.message_index for r in reqs] == [1, 1]
    assert reqs[0].text == "I lost my credit card yesterday. Can you block it?"
    assert "weather" in reqs[1].text
    assert "credit" in reqs[0].topic and "card" in reqs[0].topic
    assert "weather" in reqs[1].topic and "paris" in reqs[1].topic


def test_two_questions_joined_by_and_are_two_requests() -> None:
    parts = split_message("What is my balance and how do I transfer money to savings?")
    assert parts == ["What is my balance", "how do I transfer money to savings?"]


def test_greetings_thanks_and_small_talk_are_dropped() -> None:
    assert segment_requests(["Hello!", "Thanks so much!", "ok", "Bye, have a nice day!"]) == []
    assert split_message("Thank you! That's all.") == []


def test_statement_without_question_is_one_request() -> None:
    reqs = segment_requests(["Good morning. I want to book a table for two at eight."])
    assert len(reqs) == 1
    assert reqs[0].text == "I want to book a table for two at eight."
    assert reqs[0].topic == "book table two eight"


def test_message_index_points_at_the_source_message() -> None:
    reqs = segment_requests(["Where is my parcel?", "thanks", "How do I return shoes?"])
    assert [(r.message_index, r.topic) for r in reqs] == [(0, "parcel"), (2, "return shoes")]


def test_labels_are_short_and_deterministic() -> None:
    text = "Could you please explain how mortgage interest rates are calculated in Canada?"
    label = topic_label(text)
    assert label == topic_label(text)
    assert 1 <= len(label.split()) <= 4
    assert "mortgage" in label


def test_bare_follow_up_question_joins_the_request_it_refers_to() -> None:
    reqs = segment_requests(
        ["I need to remove a passenger from my booking. Can you help with that?"]
    )
    assert len(reqs) == 1
    assert reqs[0].topic == "remove passenger booking"


def test_later_statements_are_answers_not_new_requests() -> None:
    reqs = segment_requests(
        [
            "My card was stolen last night.",
            "Sure, my account number is 12345.",
            "Thank you for blocking it! That's all for now.",
            "Actually, could you also order a replacement card?",
        ]
    )
    assert [r.message_index for r in reqs] == [0, 3]
    assert reqs[0].topic == "card stolen last night"
    assert reqs[1].topic == "order replacement card"


def test_labels_are_unique_within_a_conversation() -> None:
    reqs = segment_requests(
        ["Can I book a flight?", "Can I book a flight to Rome next week?", "Can I book a flight?"]
    )
    labels = [r.topic for r in reqs]
    assert len(labels) == 3
    assert len(set(labels)) == 3
    assert labels[0] == "book flight"
    assert labels[1] == "book flight rome next"
    assert labels[2] == "book flight (2)"
