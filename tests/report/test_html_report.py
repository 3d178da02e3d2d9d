"""The HTML report: escaping, embedded data, histograms, the cap on listed conversations."""

from __future__ import annotations

import json
import re
from pathlib import Path

from _report_data import CLOSER, IMG, SCORES, SCRIPT, hostile_results

from convoeval.report import render_report, safe_json, write_report
from convoeval.report.parts import bin_of, bins_for


def test_hostile_text_is_escaped_and_only_our_scripts_exist(tmp_path: Path) -> None:
    result = hostile_results(tmp_path)
    assert [r["scores"]["tool_call_accuracy"] for r in result.rows()] == SCORES
    page = render_report(result)
    assert SCRIPT not in page and IMG not in page and CLOSER not in page
    assert "&lt;script&gt;window.__pwned = 1;" in page
    assert "onerror=&quot;window.__pwned = 2;" in page
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
    assert page.count('<tbody data-index="') == 2
    assert "Showing the first 2 of 5 conversations." in page
    assert "1 / 2 = 0.5" in page or "0.500" in page
