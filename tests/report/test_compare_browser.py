"""The diff page of `convoeval compare` in a real headless Chromium (the fixture and helpers of
test_report_browser.py): hostile conversation text and ids stay text, no script runs (the page
has none) and no request leaves the file, the figures show, and a regressed conversation opens
to BASE's and NEW's verdict details side by side above their transcripts."""

from __future__ import annotations

from pathlib import Path
from typing import Any

from _report_data import CLOSER, HOSTILE_TOOL, IMG, RLO_TOOL, SCRIPT
from test_report_browser import Opened, browser  # noqa: F401  (the fixture is used by name)

from convoeval import AIMessage, HumanMessage, MultiTurnSample, ToolCall, ToolMessage, evaluate
from convoeval.report.assets import CSP
from convoeval.report.compare import write_comparison_report
from convoeval.stats.compare import compare

#: Records whose tool call the new bot gets wrong (by a hostile tool name).
BROKEN = (0, 2)


def _sample(i: int, tool: str) -> MultiTurnSample:
    return MultiTurnSample(
        user_input=[
            HumanMessage(content=f"{SCRIPT} question {i}"),
            AIMessage(content=IMG, tool_calls=[ToolCall(name=tool, args={"q": SCRIPT}, id="c")]),
            ToolMessage(content=f"tool said {CLOSER}", tool_call_id="c"),
            AIMessage(content=f"final answer {i} & more"),
        ],
        reference_tool_calls=[ToolCall(name="lookup", args={"q": SCRIPT})],
        id=f"{CLOSER}-{i}" if i == 0 else f"conv-{i}\u202e",
    )


def _runs(directory: Path) -> tuple[Path, Path]:
    paths = directory / "base.jsonl", directory / "new.jsonl"
    for path, new in zip(paths, (False, True), strict=True):
        samples = [
            _sample(i, (HOSTILE_TOOL if i == 0 else RLO_TOOL) if new and i in BROKEN else "lookup")
            for i in range(4)
        ]
        evaluate(samples, ["tool_call_accuracy"], output=path, show_progress=False)
    return paths


def test_the_diff_page_in_a_real_browser(tmp_path: Path, browser: Any) -> None:  # noqa: F811
    report = write_comparison_report(compare(*_runs(tmp_path)), tmp_path / "diff.html")
    html = report.read_text()
    assert f'<meta http-equiv="Content-Security-Policy" content="{CSP}">' in html
    opened = Opened(browser, report)
    page = opened.page
    assert page.title() == "convoeval compare: base.jsonl -> new.jsonl"
    assert page.locator("script").count() == 0 and page.locator("img").count() == 0
    figures = page.locator("table").first.inner_text()
    assert "tool_call_accuracy" in figures and "-0.500" in figures and "100% -> 50%" in figures

    pairs = page.locator("details.pair")
    assert pairs.count() == len(BROKEN)
    first = pairs.nth(0)
    head = first.locator("summary").inner_text()
    assert head.startswith("</script><script>") and "BASE 1.000 → NEW 0.000" in head
    sides = first.locator(".side")
    assert not sides.first.is_visible()
    first.locator("summary").click()
    base, new = sides.nth(0), sides.nth(1)
    assert base.is_visible() and new.is_visible()
    one, two = base.bounding_box(), new.bounding_box()
    assert one is not None and two is not None
    assert one["x"] + one["width"] <= two["x"] and one["y"] == two["y"]  # side by side
    base_text, new_text = base.inner_text(), new.inner_text()
    assert base_text.startswith("BASE") and "tool_call_accuracy: score 1" in base_text
    assert new_text.startswith("NEW") and "tool_call_accuracy: score 0" in new_text
    assert HOSTILE_TOOL in new_text  # the wrong call, as text, in the details and transcript
    for text in (base_text, new_text):
        assert SCRIPT in text and IMG in text and "final answer 0 & more" in text
    assert page.evaluate("typeof window.__pwned") == "undefined"

    # A bidi override in an id or a tool name is shown, not obeyed.
    second = pairs.nth(1)
    second.locator("summary").click()
    assert "conv-2\\u202e" in second.locator("summary").inner_text()
    assert "refund\\u202e" in second.inner_text() and "\u202e" not in second.inner_text()
    opened.shot(tmp_path / "diff.png")
    opened.close()
