"""The one way tests find the shared data (tests/_shared_data.py): beside the repository or where
CONVOEVAL_SHARED_DATA points; a missing file skips, or fails where CI requires the data; and no
test or benchmark names a folder of one machine."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from _shared_data import REQUIRE_SHARED_DATA, ROOT, SHARED_DATA_ENV, shared_data_dir, shared_file


def test_the_variable_points_at_another_copy(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    (tmp_path / "x.json").write_text("[]")
    monkeypatch.setenv(SHARED_DATA_ENV, str(tmp_path))
    assert shared_data_dir() == tmp_path and shared_file("x.json") == tmp_path / "x.json"
    monkeypatch.delenv(SHARED_DATA_ENV)
    assert shared_data_dir() == ROOT.parent / "shared" / "data"


def test_a_missing_file_skips_or_fails_where_the_data_are_required(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv(SHARED_DATA_ENV, str(tmp_path))
    monkeypatch.delenv(REQUIRE_SHARED_DATA, raising=False)
    with pytest.raises(pytest.skip.Exception, match=f"absent.json not found in {tmp_path}"):
        shared_file("absent.json")
    monkeypatch.setenv(REQUIRE_SHARED_DATA, "1")
    with pytest.raises(pytest.fail.Exception, match=f"{REQUIRE_SHARED_DATA}=1 but the shared"):
        shared_file("absent.json")


def test_ci_requires_the_shared_data_before_it_runs_the_tests() -> None:
    script = (ROOT / ".ci" / "run").read_text(encoding="utf-8")
    required = script.index(f"export {REQUIRE_SHARED_DATA}=1")
    assert required < script.index("python -m pytest -q")


def test_no_test_or_benchmark_names_a_folder_of_one_machine() -> None:
    machine = re.compile(r"""["'(\s](/(?:work|home|Users|root)/|[A-Z]:\\\\)""")
    found = []
    for folder in ("tests", "benchmarks"):
        for path in sorted((ROOT / folder).rglob("*")):
            if path.suffix not in (".py", ".md", ".toml", ".cfg", ".json", ".sh"):
                continue
            for number, line in enumerate(path.read_text(encoding="utf-8").splitlines(), 1):
                if machine.search(line) and path != Path(__file__):
                    found.append(f"{path.relative_to(ROOT)}:{number}: {line.strip()}")
    assert found == []
