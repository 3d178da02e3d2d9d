"""The offline judge says it is loading when loading takes a while: one line on stderr, once
per process, none with `-q`. The delay is a module constant, lowered to 0 here instead of
waiting for a slow load."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from convoeval.judges.offline import Embedder, loading

LINE = "loading the offline judge (all-MiniLM-L6-v2)..."


@pytest.fixture
def fresh(monkeypatch: pytest.MonkeyPatch) -> None:
    """A process that has not said the line yet and is not quiet."""
    monkeypatch.setattr(loading, "_notice", {"said": False, "quiet": False})


def test_one_line_once_per_process(
    fresh: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(loading, "LOADING_NOTICE_AFTER_S", 0.0)
    Embedder().load()
    Embedder().load()  # a second load in the same process says nothing
    assert capsys.readouterr().err == f"convoeval: {LINE}\n"


def test_no_line_when_the_load_is_quick_or_the_process_quiet(
    fresh: None, monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(loading, "LOADING_NOTICE_AFTER_S", 3600.0)
    Embedder().load()  # done long before the hour
    assert capsys.readouterr().err == ""
    monkeypatch.setattr(loading, "LOADING_NOTICE_AFTER_S", 0.0)
    loading.quiet_loading()
    Embedder().load()
    assert capsys.readouterr().err == ""


#: `convoeval ...` with the delay at 0 (a process of its own: the line is once per process).
CLI = (
    "import runpy, sys; import convoeval.judges.offline.loading as loading; "
    "loading.LOADING_NOTICE_AFTER_S = 0; sys.argv = ['convoeval', *sys.argv[1:]]; "
    "runpy.run_module('convoeval.cli', run_name='__main__')"
)


def test_run_prints_it_once_and_not_with_q(tmp_path: Path) -> None:
    examples = Path(__file__).resolve().parents[3] / "examples" / "support.jsonl"
    common = ["run", str(examples), "-m", "topic_adherence", "--limit", "3"]
    for quiet in (False, True):
        done = subprocess.run(
            [sys.executable, "-c", CLI, *common, "-o", f"r{quiet}.jsonl", *(["-q"] * quiet)],
            cwd=tmp_path, capture_output=True, text=True, timeout=300, env=dict(os.environ),
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert done.stderr.count(LINE) == (0 if quiet else 1), done.stderr


#: `evaluate(...)` of three records with the delay at 0, in a process of its own; argv[1] is
#: show_progress.
EVALUATE = (
    "import sys; import convoeval.judges.offline.loading as loading; "
    "loading.LOADING_NOTICE_AFTER_S = 0; from convoeval import evaluate; "
    "evaluate(sys.argv[2], ['topic_adherence'], 'offline', limit=3, output=sys.argv[3], "
    "show_progress=sys.argv[1] == 'True')"
)


def test_evaluate_without_progress_prints_no_loading_line(tmp_path: Path) -> None:
    examples = Path(__file__).resolve().parents[3] / "examples" / "support.jsonl"
    for shown in (True, False):
        done = subprocess.run(
            [sys.executable, "-c", EVALUATE, str(shown), str(examples), f"r{shown}.jsonl"],
            cwd=tmp_path, capture_output=True, text=True, timeout=300, env=dict(os.environ),
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        assert done.stderr.count(LINE) == (1 if shown else 0), done.stderr
