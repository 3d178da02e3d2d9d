"""The HTML report: escaping, bidi isolation, embedded data, histograms, rows that expand in
place, argument paths that differ, F1 tables, metadata, the cap on listed conversations."""

from __future__ import annotations

import json
import re
from pathlib import Path

from _report_data import CLOSER, IMG, RLO_TOOL, SCORES, SCRIPT, feature_results, hostile_results

from convoeval import AIMessage, HumanMessage, MultiTurnSample, SystemMessage, evaluate
from convoeval.report import render_report, safe_json, write_report
from convoeval.report.parts import SHARED_MIN_CHARS, bin_of, bins_for, name, text, visible


def test_hostile_text_is_escaped_and_only_our_scripts_exist(tmp_path: Path) -> None:
    result = hostile_results(tmp_path)
    assert [r["scores"]["tool_call_accuracy"] for r in result.rows()] == SCORES
    page = render_report(result)
    assert SCRIPT not in page and IMG not in page and CLOSER not in page
    assert "&lt;script&gt;window.__pwned = 1;" in page
    assert '&lt;img src="x" onerror="window.__pwned = 2;' in page
    scripts = re.findall(r"<script[^>]*>", page)
    assert scripts == ['<script type="application/json" id="convoeval-data">', "<script>"]
    assert "default-src 'none'" in page and "script-src 'sha256-" in page
    data = page.split('id="convoeval-data">', 1)[1].split("</script>", 1)[0]
    assert "<" not in data and ">" not in data and "&" not in data
    parsed = json.loads(data)
    assert parsed["rows"][0]["id"] == f"{CLOSER}-0"
    assert [r["scores"]["tool_call_accuracy"] for r in parsed["rows"]] == SCORES


def test_safe_json_round_trips_every_dangerous_character() -> None:
    value = {"a": "</script><!-- & \u2028 \u2029 >"}
    text = safe_json(value)
    assert not set("<>&") & set(text) and "\u2028" not in text
    assert json.loads(text) == value


def test_histogram_bins_and_counts(tmp_path: Path) -> None:
    assert bins_for(0.0, 1.0) == (0.0, 1.0, 10)
    assert bins_for(1.0, 4.0) == (1.0, 4.0, 3)
    assert bins_for(None, None) == (0.0, 1.0, 10)
    assert [bin_of(v, 0.0, 1.0, 10) for v in (0.0, 0.05, 0.5, 0.99, 1.0)] == [0, 0, 5, 9, 9]
    page = render_report(hostile_results(tmp_path))
    titles = re.findall(r"<title>([0-9.]+) to ([0-9.]+): (\d+)</title>", page)
    counts = {(float(a), float(b)): int(c) for a, b, c in titles}
    assert counts[(0.0, 0.1)] == SCORES.count(0.0)
    assert counts[(0.5, 0.6)] == SCORES.count(0.5)
    assert counts[(0.9, 1.0)] == SCORES.count(1.0)
    assert sum(counts.values()) == len(SCORES)


def test_report_lists_at_most_the_cap_and_says_so(tmp_path: Path) -> None:
    result = hostile_results(tmp_path)
    target = write_report(result.path, tmp_path / "out" / "r.html", max_conversations=2)
    page = target.read_text()
    assert page.count('<details class="conv" data-index="') == 2
    assert "The file lists the first 2 of 5 conversations" in page
    assert "1 / 2 = 0.5" in page or "0.500" in page


def _visible_part(page: str) -> str:
    """The page without its JSON data block (which the browser never renders)."""
    return page.split('<script type="application/json"', 1)[0]


def test_bidi_controls_in_names_are_shown_and_every_data_string_is_isolated(
    tmp_path: Path,
) -> None:
    page = render_report(feature_results(tmp_path))
    shown = _visible_part(page)
    # An unterminated U+202E in a tool name or an id never reaches the rendered page raw ...
    assert RLO_TOOL.endswith("\u202e") and "\u202e" not in shown
    # ... it shows as a visible escape, isolated, in the transcript, the tables and the reasons.
    assert "<bdi>refund\\u202e</bdi>" in shown
    assert "<bdi>bidi\\u202eid</bdi>" in shown
    assert "refund\\u202e (#1 vs expected #1) scored 0" in shown
    # Message text keeps its characters but sits in its own isolate.
    assert "<bdi>refund order 8</bdi>" in shown


def test_each_conversation_is_one_row_that_expands_in_place(tmp_path: Path) -> None:
    result = hostile_results(tmp_path)
    page = render_report(result)
    assert "<summary>transcript and details" not in page and '<tr class="more"' not in page
    rows = re.findall(r'<details class="conv" data-index="(\d+)"><summary>(.*?)</summary>', page)
    assert [int(i) for i, _ in rows] == list(range(len(SCORES)))
    for (_, summary), score in zip(rows, SCORES, strict=True):
        assert f"{score:.3f}</span>" in summary


def test_metric_with_nothing_scored_says_so_instead_of_an_empty_histogram(
    tmp_path: Path,
) -> None:
    page = render_report(feature_results(tmp_path))
    hists = page.split("<h2>Score distributions</h2>", 1)[1].split("<h2>", 1)[0]
    topic = hists.split("<bdi>topic_adherence</bdi>", 1)[1].split('<div class="hist">', 1)[0]
    assert "nothing scored" in topic and "<svg" not in topic and "max 1" not in topic
    assert hists.count("nothing scored") == 1


def test_nested_argument_difference_shows_the_path_and_both_values(tmp_path: Path) -> None:
    page = render_report(feature_results(tmp_path))
    nested = page.split('data-index="0"', 1)[1].split('data-index="1"', 1)[0]
    accuracy = nested.split("<bdi>tool_call_accuracy</bdi>:", 1)[1].split("metric-block", 1)[0]
    assert '<li><bdi>address.zip</bdi>: made <bdi>"10002"</bdi>, expected ' in accuracy
    assert '<bdi>"10001"</bdi></li>' in accuracy
    assert "address.street" not in accuracy and "<bdi>address</bdi>:" not in accuracy
    # A type difference shows both types: the string "8" was sent, the number 8 expected.
    bidi = page.split('data-index="1"', 1)[1]
    assert '<li><bdi>order</bdi>: made <bdi>"8"</bdi>, expected <bdi>8</bdi></li>' in bidi


def test_tool_call_f1_details_are_tables_not_json_dumps(tmp_path: Path) -> None:
    page = render_report(feature_results(tmp_path))
    assert "<pre>" not in page
    f1 = page.split("<bdi>tool_call_f1</bdi>: score 0</h4>", 1)[1].split("metric-block", 1)[0]
    assert "0 correct, 1 not expected, 1 missing; precision 0, recall 0" in f1
    assert "<th>call</th><th>#</th><th>tool</th><th>arguments</th>" in f1
    assert "expected, not made" in f1 and "made, not expected" in f1
    assert "<th>arguments that differ</th>" in f1 and "<bdi>address.zip</bdi>" in f1


def test_record_metadata_is_shown(tmp_path: Path) -> None:
    page = render_report(feature_results(tmp_path))
    first = page.split('data-index="0"', 1)[1].split('data-index="1"', 1)[0]
    assert "metadata: <table" in first
    assert "<td><bdi>reward</bdi></td><td><bdi>0.0</bdi></td>" in first
    assert "<td><bdi>task_id</bdi></td><td><bdi>17</bdi></td>" in first


def test_a_long_text_in_several_conversations_is_written_once(tmp_path: Path) -> None:
    policy = "You are the airline agent. " + "Follow the policy. " * 80
    samples = [
        MultiTurnSample(
            user_input=[
                SystemMessage(content=policy),
                HumanMessage(content=f"question {i}"),
                AIMessage(content=f"answer {i}"),
            ],
            reference_tool_calls=[],
            id=f"c{i}",
        )
        for i in range(3)
    ]
    result = evaluate(samples, ["tool_call_f1"], output=tmp_path / "r.jsonl", show_progress=False)
    page = render_report(result)
    assert len(policy) >= SHARED_MIN_CHARS and page.count(policy) == 1
    assert page.count('<a class="shared" href="#shared-1">shared text 1</a>') == 3
    assert '<div class="msg" id="shared-1">' in page
    assert page.count("question 1") == 1  # short texts stay in their conversation


def test_invisible_and_control_characters_are_written_out_in_names() -> None:
    hidden = (
        "a\u200bb\u2066c\x1bd\ne\u00e9\u05d0"  # zero-width, isolate, ESC, newline; é and alef stay
    )
    assert visible(hidden) == "a\\u200bb\\u2066c\\u001bd\\u000ae\u00e9\u05d0"
    assert visible(hidden, keep_lines=True) == "a\\u200bb\\u2066c\\u001bd\ne\u00e9\u05d0"
    assert name("<b>\u202e") == "<bdi>&lt;b&gt;\\u202e</bdi>"
    assert text('say "hi" <now>') == '<bdi>say "hi" &lt;now&gt;</bdi>'
