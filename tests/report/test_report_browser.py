"""The HTML report in a real headless Chromium (Playwright): escaping, no script from the data,
bidi isolation, rows that expand in place, sorting, search, filters, paging, and no network
request at all. Each test keeps a screenshot under its tmp dir and prints the path."""

from __future__ import annotations

import os
import re
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _report_data import (
    IMG,
    NEEDLE_INDEX,
    POLICY,
    SCORES,
    SCRIPT,
    WIDE_METRICS,
    feature_results,
    hostile_results,
    many_results,
    wide_results,
)

from convoeval.report import write_report

CHROMIUM = os.environ.get("CONVOEVAL_CHROMIUM", "/usr/bin/chromium")
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
ROWS = "#conversations > details.conv:not([hidden])"

#: x positions of each character of `needle` inside the first text node under `selector` that
#: holds it, as laid out: increasing when the text reads left to right.
LAYOUT = """([selector, needle]) => {
  const root = document.querySelector(selector);
  const walk = document.createTreeWalker(root, NodeFilter.SHOW_TEXT);
  for (let node = walk.nextNode(); node; node = walk.nextNode()) {
    const at = node.data.indexOf(needle);
    if (at < 0) continue;
    const xs = [];
    for (let i = at; i < at + needle.length; i++) {
      if (node.data[i] === " ") continue;
      const range = document.createRange();
      range.setStart(node, i);
      range.setEnd(node, i + 1);
      xs.push(range.getBoundingClientRect().left);
    }
    return xs;
  }
  return null;
}"""


@pytest.fixture(scope="module")
def browser() -> Iterator[Any]:
    """A headless Chromium driven by Playwright (skipped, with the reason, when absent)."""
    try:
        from playwright.sync_api import sync_playwright
    except ImportError as exc:
        pytest.skip(f"playwright is not installed ({exc}): pip install 'playwright>=1.40'")
    if not os.path.exists(CHROMIUM):
        pytest.skip(f"no Chromium at {CHROMIUM}: apt-get install -y chromium")
    with sync_playwright() as playwright:
        launched = playwright.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield launched
        launched.close()


class Opened:
    """A report open in a page, recording requests, dialogs and script errors."""

    def __init__(self, browser: Any, report: Path, width: int = 1280) -> None:
        self.url = report.resolve().as_uri()
        self.page = browser.new_page(viewport={"width": width, "height": 900})
        self.requests: list[str] = []
        self.dialogs: list[str] = []
        self.errors: list[str] = []
        self.page.on("request", lambda request: self.requests.append(request.url))
        self.page.on("dialog", lambda d: (self.dialogs.append(d.message), d.dismiss()))
        self.page.on("pageerror", lambda error: self.errors.append(str(error)))
        self.page.goto(self.url)
        self.page.wait_for_load_state("load")

    def order(self) -> list[int]:
        """The data-index of every row shown, top to bottom."""
        found = self.page.eval_on_selector_all(
            ROWS, "rows => rows.map(r => r.getAttribute('data-index'))"
        )
        return [int(i) for i in found]

    def shot(self, path: Path) -> None:
        """Keep a full-page screenshot as a test artifact and say where."""
        self.page.screenshot(path=str(path), full_page=True)
        print(f"report screenshot: {path}")

    def close(self) -> None:
        """No script error, no dialog, no request but for the file itself."""
        assert self.dialogs == [] and self.errors == []
        assert self.requests and all(r == self.url for r in self.requests), self.requests
        self.page.close()


def test_report_in_a_real_browser(tmp_path: Path, browser: Any) -> None:
    opened = Opened(browser, write_report(hostile_results(tmp_path), tmp_path / "report.html"))
    page = opened.page
    # Nothing from the data ran; the report's own script did (its controls are shown).
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert page.title().startswith("convoeval report")
    assert page.locator("#controls").is_visible()

    # Sorting by the score column: ascending, then descending; nulls would go last.
    header = page.locator('.conv-head [data-sort="tool_call_accuracy"]')
    header.click()
    assert [SCORES[i] for i in opened.order()] == sorted(SCORES)
    assert header.get_attribute("aria-sort") == "ascending"
    header.click()
    assert [SCORES[i] for i in opened.order()] == sorted(SCORES, reverse=True)
    page.locator('.conv-head [data-sort="index"]').click()
    assert opened.order() == list(range(len(SCORES)))

    # A row expands in place when clicked; hostile markup shows as text.
    row = page.locator('details.conv[data-index="1"]')
    transcript = row.locator(".transcript")
    assert not transcript.is_visible()
    row.locator("summary").click()
    assert row.get_attribute("open") is not None and transcript.is_visible()
    text = transcript.inner_text()
    assert SCRIPT in text and IMG in text and "final answer 1 & more" in text
    assert "lookup" in row.inner_text()
    assert page.locator("#conversations img").count() == 0
    assert page.evaluate("typeof window.__pwned") == "undefined"

    # The id with a closing script tag shows as text in its cell.
    first_id = page.locator('details.conv[data-index="0"] summary .id').inner_text()
    assert first_id.startswith("</script><script>")
    opened.shot(tmp_path / "hostile.png")
    opened.close()


def test_bidi_nested_differences_f1_metadata_and_nothing_scored(
    tmp_path: Path, browser: Any
) -> None:
    opened = Opened(browser, write_report(feature_results(tmp_path), tmp_path / "report.html"))
    page = opened.page
    for index in ("0", "1"):
        page.locator(f'details.conv[data-index="{index}"] summary').click()
    bidi = 'details.conv[data-index="1"]'
    # Text after a tool name holding U+202E still reads left to right, in the call line and in
    # the reason that quotes the name; the name shows the control character as \\u202e.
    for needle in ('{"order": "8"}', "(#1 vs expected #1) scored 0"):
        xs = page.evaluate(LAYOUT, [bidi, needle])
        assert xs is not None and xs == sorted(xs) and len(set(xs)) == len(xs), (needle, xs)
    body = page.locator(bidi).inner_text()
    assert "refund\\u202e" in body and "\u202e" not in body
    assert "bidi\\u202eid" in page.locator(f"{bidi} summary").inner_text()

    nested = page.locator('details.conv[data-index="0"]').inner_text()
    assert 'address.zip: made "10002", expected "10001"' in nested
    assert "expected, not made" in nested and "made, not expected" in nested
    assert "precision 0, recall 0" in nested
    assert "reward" in nested and "task_id" in nested

    # The system prompt both records hold is written once; each link leads to it.
    shared = page.locator("#shared-1")
    assert page.locator("a.shared").count() == 2 and POLICY.strip() in shared.inner_text()
    page.locator(f"{bidi} a.shared").click()
    assert page.evaluate("location.hash") == "#shared-1" and shared.is_visible()

    hist = page.locator(".hist", has_text="topic_adherence")
    assert hist.inner_text().strip().endswith("nothing scored")
    assert hist.locator("svg").count() == 0
    opened.shot(tmp_path / "features.png")
    opened.close()


def test_search_filters_and_paging_past_a_few_hundred_rows(tmp_path: Path, browser: Any) -> None:
    count = 250
    opened = Opened(browser, write_report(many_results(tmp_path, count), tmp_path / "r.html"))
    page = opened.page
    count_text = page.locator("#f-count")
    # One page of 100 shown; the pager walks to the last page and back.
    assert opened.order() == list(range(100))
    assert count_text.inner_text() == f"showing 1-100 of {count} matching ({count} listed)"
    page.locator("#f-next").click()
    page.locator("#f-next").click()
    assert opened.order() == list(range(200, count))
    assert page.locator("#f-next").is_disabled()
    assert page.locator("#f-page").inner_text() == "page 3 of 3"

    # Search by id and by text (case-insensitive), back to page 1 on every change.
    page.locator("#f-text").fill("many-42")
    assert opened.order() == [42]
    page.locator("#f-text").fill("ZEBRA")
    assert opened.order() == [NEEDLE_INDEX]
    page.locator("#f-text").fill("")

    # Filter by a metric's range, then by status.
    page.locator("#f-metric").select_option("tool_call_accuracy")
    page.locator("#f-min").fill("0.5")
    wanted = [i for i in range(count) if i % 4 == 0]
    assert opened.order() == wanted[:100] and len(wanted) < 100
    page.locator("#f-min").fill("")
    page.locator("#f-metric").select_option("")
    page.locator("#f-status").select_option("failed")
    failed = [i for i in range(count) if i % 10 == 9 and i != NEEDLE_INDEX]
    assert opened.order() == failed
    assert (
        count_text.inner_text()
        == f"showing 1-{len(failed)} of {len(failed)} matching ({count} listed)"
    )
    page.locator("#f-status").select_option("unscored")
    assert opened.order() == [] and count_text.inner_text() == "no conversation matches"
    page.locator("#f-status").select_option("failed")

    # A failed row expands in place and says why.
    row = page.locator(f'details.conv[data-index="{failed[0]}"]')
    row.locator("summary").click()
    assert "the judge went away" in row.inner_text()
    opened.shot(tmp_path / "filtered.png")
    opened.close()


#: Per column header of the conversations list: its text, how many lines it takes (its text's
#: client rects) and whether its text overflows its cell.
HEADERS = """() => Array.from(document.querySelectorAll('.conv-head [data-sort]')).map(h => {
  const range = document.createRange();
  range.selectNodeContents(h);
  const lines = new Set(Array.from(range.getClientRects()).map(r => Math.round(r.top)));
  return [h.textContent, lines.size, h.scrollWidth > h.clientWidth + 1];
})"""


def test_twelve_metrics_fit_a_1400px_window(
    tmp_path: Path, browser: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)  # the data is given by a relative path
    result = wide_results(tmp_path)
    opened = Opened(browser, write_report(result, tmp_path / "wide.html"), width=1400)
    page = opened.page
    # The page never scrolls sideways: the conversations list scrolls inside its own frame.
    assert page.evaluate("document.documentElement.scrollWidth") <= 1400
    frame = page.evaluate(
        "(() => { const f = document.getElementById('conversations');"
        " return [f.scrollWidth, f.clientWidth, getComputedStyle(f).overflowX]; })()"
    )
    assert frame[0] > frame[1] and frame[2] == "auto", frame
    # Every metric's header is its whole name on one line, not cut or broken at an underscore.
    headers = {text: (lines, cut) for text, lines, cut in page.evaluate(HEADERS)}
    for metric in WIDE_METRICS:
        assert headers[metric] == (1, False), (metric, headers.get(metric))
    # The data path is shown as it was given, not as this machine's absolute path.
    meta = page.locator("dl.meta").inner_text()
    assert "wide.jsonl" in meta and str(tmp_path) not in page.content()
    # Each histogram names its axes and labels its counts (5 records: small counts).
    texts = "els => els.map(e => e.textContent)"
    for metric in WIDE_METRICS:
        hist = page.locator(".hist").filter(
            has=page.locator("h3", has_text=re.compile(metric + "$"))
        )
        labels = hist.locator("svg text").evaluate_all(texts)
        assert "score" in labels and "records" in labels, (metric, labels)
        assert "0" in labels and "1" in labels, (metric, labels)  # the x range and counts
    opened.shot(tmp_path / "wide.png")
    opened.close()
