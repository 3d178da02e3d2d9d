"""The documentation names every option: README.md every `convoeval run` option (as `run
--help` prints them), docs/options.md every `run` option (with its config key) and every
`evaluate()` keyword, and
README.md every test file that skips without the shared calibration data (../shared/data)."""

from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path
from typing import get_type_hints

from convoeval.runner._evaluate import RunOptions

ROOT = Path(__file__).resolve().parents[1]
README = (ROOT / "README.md").read_text(encoding="utf-8")
OPTIONS = ROOT / "docs" / "options.md"
OPTIONS_PAGE = OPTIONS.read_text(encoding="utf-8") if OPTIONS.is_file() else ""


def _run_options() -> list[str]:
    """Every long option `convoeval run --help` lists (but --help itself)."""
    done = subprocess.run(
        [sys.executable, "-m", "convoeval.cli", "run", "--help"],
        capture_output=True, text=True, timeout=120, check=True,
    )  # fmt: skip
    found = re.findall(r"^\s+(?:-\w, )?(--[a-z][a-z-]*)", done.stdout, flags=re.MULTILINE)
    options = [o for o in dict.fromkeys(found) if o != "--help"]
    assert len(options) > 25 and "--trials" in options and "--price" in options, options
    return options


def _named(text: str, option: str) -> bool:
    return re.search(re.escape(option) + r"(?![\w-])", text) is not None


def test_readme_names_every_run_option() -> None:
    missing = [o for o in _run_options() if not _named(README, o)]
    assert missing == [], f"README.md does not name: {missing}"


def test_the_options_page_names_every_run_option_and_every_evaluate_keyword() -> None:
    missing = [o for o in _run_options() if not _named(OPTIONS_PAGE, o)]
    assert missing == [], f"docs/options.md does not name: {missing}"
    keywords = list(get_type_hints(RunOptions))
    assert "prices" in keywords and "max_concurrency" in keywords
    missing = [k for k in keywords if f"`{k}`" not in OPTIONS_PAGE]
    assert missing == [], f"docs/options.md does not name the evaluate() keywords {missing}"


#: Run options with no config key (the page's config cell says "-"): the file itself, and the
#: API key, which is never read from a file.
NO_CONFIG_KEY = {"--config", "--api-key"}


def test_the_options_page_gives_every_run_options_config_key() -> None:
    """Each table row that names a run option in its command-line cell gives that option's
    config key (its long name, dashes kept) in the config column, or "-" when it has none."""
    rows = [line.split(" | ") for line in OPTIONS_PAGE.splitlines() if line.startswith("| ")]
    headers = [row for row in rows if row[0] == "| option"]
    assert headers and all(len(h) == 5 and h[3].startswith("config") for h in headers), headers
    cells: dict[str, str] = {}
    for row in rows:
        if row[0] != "| option" and len(row) == 5:
            for option in re.findall(r"--[a-z][a-z-]*", row[1]):
                cells.setdefault(option, row[3])
    wrong = []
    for option in _run_options():
        cell = cells.get(option, "")
        key = option.removeprefix("--")
        expected = cell.startswith(("-", "(")) if option in NO_CONFIG_KEY else _named(cell, key)
        if not expected:
            wrong.append((option, cell))
    assert wrong == [], f"docs/options.md gives no config key for: {wrong}"


def test_readme_names_every_test_that_needs_the_shared_data() -> None:
    """A test file that reads ../shared/data (through tests/_shared_data.py) skips without it
    outside CI: the README says which ones and why."""
    reads_data = re.compile(r"^from _shared_data import|^import _shared_data", re.MULTILINE)
    needs = sorted(
        str(path.relative_to(ROOT))
        for path in (ROOT / "tests").rglob("test_*.py")
        if reads_data.search(path.read_text(encoding="utf-8"))
        and path.name not in (Path(__file__).name, "test_shared_data.py")
    )
    assert len(needs) >= 5, needs
    missing = [name for name in needs if name not in README]
    assert missing == [], f"README.md does not say these tests need ../shared/data: {missing}"
