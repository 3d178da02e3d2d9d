"""The HTML report in a real headless Chromium (Playwright): escaping, no script from the data,
sorting by a score column, expanding a conversation, and no network request at all."""

from __future__ import annotations

import os
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from _report_data import IMG, SCORES, SCRIPT, hostile_results

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


def _order(page: Any) -> list[int]:
    indices = page.eval_on_selector_all(
        "#conversations > tbody", "bodies => bodies.map(b => b.getAttribute('data-index'))"
    )
    return [int(i) for i in indices]


def test_report_in_a_real_browser(tmp_path: Path, browser: Any) -> None:
    result = hostile_results(tmp_path)
    report = write_report(result, tmp_path / "report.html")
    url = report.resolve().as_uri()
    page = browser.new_page()
    requests: list[str] = []
    dialogs: list[str] = []
    errors: list[str] = []
    page.on("request", lambda request: requests.append(request.url))
    page.on("dialog", lambda dialog: (dialogs.append(dialog.message), dialog.dismiss()))
    page.on("pageerror", lambda error: errors.append(str(error)))
    page.goto(url)
    page.wait_for_load_state("load")

    # Nothing from the data ran; the report's own script did (no page errors).
    assert page.evaluate("typeof window.__pwned") == "undefined"
    assert page.title().startswith("convoeval report")
    assert dialogs == [] and errors == []

    # Sorting by the score column: ascending, then descending; nulls would go last.
    header = page.locator('th[data-sort="tool_call_accuracy"]')
    header.click()
    ascending = _order(page)
    assert [SCORES[i] for i in ascending] == sorted(SCORES)
    assert header.get_attribute("aria-sort") == "ascending"
    header.click()
    descending = _order(page)
    assert [SCORES[i] for i in descending] == sorted(SCORES, reverse=True)
    page.locator('th[data-sort="index"]').click()
    assert _order(page) == list(range(len(SCORES)))

    # A row expands to its transcript; hostile markup shows as text.
    details = page.locator('tbody[data-index="1"] details')
    transcript = details.locator(".transcript")
    assert not transcript.is_visible()
    details.locator("summary").click()
    assert details.get_attribute("open") is not None
    assert transcript.is_visible()
    text = transcript.inner_text()
    assert SCRIPT in text and IMG in text and "final answer 1 & more" in text
    assert "lookup" in details.inner_text()
    assert page.locator("#conversations img").count() == 0
    assert page.evaluate("typeof window.__pwned") == "undefined"

    # The id with a closing script tag shows as text in its cell.
    first_id = page.locator('tbody[data-index="0"] td').nth(1).inner_text()
    assert first_id.startswith("</script><script>")

    # The page made no request but for itself.
    assert requests and all(r == url for r in requests), requests
    page.close()
