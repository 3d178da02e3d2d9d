"""`convoeval validate` run as a real command on real files."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
GOOD = {"user_input": [{"type": "human", "content": "hi"}, {"type": "ai", "content": "hello"}]}
BROKEN_RULE = {
    "user_input": [
        {"type": "human", "content": "a"},
        {"type": "ai", "content": "b"},
        {"type": "human", "content": "c"},
        {"type": "ai", "content": "d"},
        {"type": "tool", "content": "e"},
    ]
}


def _convoeval(*args: str, cwd: Path = ROOT) -> subprocess.CompletedProcess[str]:
    command = [sys.executable, "-m", "convoeval.cli", *args]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=300)


def test_bundled_examples_are_valid() -> None:
    done = _convoeval("validate", "examples/support.jsonl")
    assert done.returncode == 0, done.stderr
    assert done.stdout == "12 records, all valid\n"


def test_bad_file_reports_file_line_and_index(tmp_path: Path) -> None:
    bad = tmp_path / "bad.jsonl"
    lines = [GOOD, GOOD, BROKEN_RULE, GOOD]
    bad.write_text("".join(json.dumps(x) + "\n" for x in lines) + "{not json\n")
    done = _convoeval("validate", "bad.jsonl", cwd=tmp_path)
    assert done.returncode == 1
    problems = done.stderr.splitlines()
    assert problems[0] == (
        "bad.jsonl:3: user_input[4]: ToolMessage must follow an AIMessage where tools were called."
    )
    assert problems[1].startswith("bad.jsonl:5: ")
    assert len(problems) == 2
    assert done.stdout == "5 records, 2 invalid\n"


def test_every_invalid_line_of_a_large_file_is_reported(tmp_path: Path) -> None:
    data = tmp_path / "big.jsonl"
    good, broken = json.dumps(GOOD), json.dumps(BROKEN_RULE)
    bad_lines = set(range(7, 100_001, 997))
    with data.open("w") as out:
        for line in range(1, 100_001):
            out.write((broken if line in bad_lines else good) + "\n")
    done = _convoeval("validate", str(data), "--max-errors", "1000000")
    assert done.returncode == 1
    reported = {int(p.split(":")[1]) for p in done.stderr.splitlines()}
    assert reported == bad_lines
    assert done.stdout == f"100000 records, {len(bad_lines)} invalid\n"


def test_missing_file_is_a_usage_error(tmp_path: Path) -> None:
    done = _convoeval("validate", str(tmp_path / "nope.jsonl"))
    assert done.returncode == 2
    assert "does not exist" in done.stderr


def test_metrics_lists_every_metric_and_its_needs() -> None:
    done = _convoeval("metrics")
    assert done.returncode == 0, done.stderr
    for name in (
        "topic_adherence",
        "conversation_relevancy",
        "tool_call_accuracy",
        "rubrics_score",
    ):
        assert name in done.stdout
    assert "reference_tool_calls" in done.stdout and "LLM judge" in done.stdout


def test_python_dash_m_convoeval_is_the_command_line() -> None:
    done = subprocess.run(
        [sys.executable, "-m", "convoeval", "validate", "examples/support.jsonl"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0 and done.stdout == "12 records, all valid\n"
