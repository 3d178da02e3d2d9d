"""`convoeval validate` run as a real command on real files."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from _cli import convoeval
from _shared_data import TAU_BENCH, shared_file

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
    return convoeval(*args, cwd=cwd, timeout=120)


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


def test_another_layout_is_named_once_then_read_with_the_options() -> None:
    """Issue 12 item 6: 200 identical 'unknown layout' lines became one, with the option to use."""
    tau_bench = shared_file(TAU_BENCH)
    done = _convoeval("validate", str(tau_bench))
    assert done.returncode == 1
    lines = done.stderr.splitlines()
    assert len(lines) == 2, lines
    assert lines[0].startswith(f"{tau_bench}: [0]: unknown layout: ")
    assert lines[0].endswith('give --messages-field traj (Python: messages_field="traj")')
    assert lines[1] == "... and 199 more records in that unknown layout"
    assert done.stdout == "200 records, 200 invalid\n"
    options = ["--messages-field", "traj", "--field", "reference_tool_calls=info.task.actions"]
    done = _convoeval("validate", str(tau_bench), *options)
    assert (done.returncode, done.stdout, done.stderr) == (0, "200 records, all valid\n", "")


def test_bad_read_options_are_usage_errors(tmp_path: Path) -> None:
    data = tmp_path / "good.jsonl"
    data.write_text(json.dumps(GOOD) + "\n")
    done = _convoeval("validate", str(data), "--field", "score=a.b")
    assert done.returncode == 2
    assert done.stderr.startswith("error: fields: cannot map 'score': use a sample field")
    done = _convoeval("validate", str(data), "--field", "nonsense")
    assert done.returncode == 2 and "expected NAME=PATH" in done.stderr


def test_bad_field_options_are_one_line_input_errors(tmp_path: Path) -> None:
    """A ConvoevalError from io (not any ValueError) is "your input is wrong": exit 2, one line."""
    data = tmp_path / "good.jsonl"
    data.write_text(json.dumps(GOOD) + "\n")
    for option, message in (
        ("score=a.b", "error: fields: cannot map 'score': use a sample field"),
        ("reference=a..b", "error: fields['reference']: 'a..b' is not a dotted path such as"),
    ):
        done = _convoeval("validate", str(data), "--field", option)
        assert (done.returncode, done.stdout) == (2, ""), done.stderr
        assert len(done.stderr.splitlines()) == 1 and done.stderr.startswith(message)
    done = _convoeval("validate", str(data), "--format", "csv")
    assert done.returncode == 2 and "Invalid value for '--format'" in done.stderr


def test_bad_read_options_from_python_are_convoeval_errors(tmp_path: Path) -> None:
    from convoeval.errors import ConvoevalError
    from convoeval.io import read_records

    data = tmp_path / "good.jsonl"
    data.write_text(json.dumps(GOOD) + "\n")
    bad_options = [
        lambda: read_records(data, format="csv"),
        lambda: read_records(data, fields={"score": "a.b"}),
        lambda: read_records(data, messages_field="a."),
    ]
    for read in bad_options:
        with pytest.raises(ConvoevalError) as caught:
            read()
        assert isinstance(caught.value, ValueError)  # `except ValueError` callers still work


def test_a_bug_in_validate_shows_its_traceback_instead_of_invalid_input(tmp_path: Path) -> None:
    (tmp_path / "d.jsonl").write_text(json.dumps(GOOD) + "\n")
    code = (
        "import convoeval.io as io\n"
        "def broken(*a, **k): raise ValueError('an internal bug')\n"
        "io.read_records = broken\n"
        "from convoeval.cli import main\n"
        "main(['validate', 'd.jsonl'])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 1
    assert "Traceback" in done.stderr and "ValueError: an internal bug" in done.stderr


@pytest.mark.parametrize("content", ["", "\n\n", "[]"])
def test_an_empty_file_has_nothing_to_check(tmp_path: Path, content: str) -> None:
    """Issue 12 item 7: not '0 records, all valid' but an input error (exit 2)."""
    data = tmp_path / ("empty.json" if content == "[]" else "empty.jsonl")
    data.write_text(content)
    done = _convoeval("validate", data.name, cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    assert done.stderr == (
        f"error: {data.name}: no records: the file holds no conversation (nothing to check or "
        "score)\n"
    )


def test_json_array_problems_name_the_element(tmp_path: Path) -> None:
    data = tmp_path / "data.json"
    data.write_text(json.dumps([GOOD, GOOD, BROKEN_RULE], indent=2))
    done = _convoeval("validate", "data.json", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr == (
        "data.json: [2]: user_input[4]: ToolMessage must follow an AIMessage where tools were "
        "called.\n"
    )


def _deep_args(depth: int) -> dict[str, object]:
    args: dict[str, object] = {}
    for _ in range(depth - 1):
        args = {"a": args}
    call = {"name": "lookup", "args": args}
    ai = {"type": "ai", "content": "", "tool_calls": [call]}
    return {"user_input": [{"type": "human", "content": "hi"}, ai], "reference_tool_calls": []}


def test_validate_and_run_refuse_the_same_hostile_records(tmp_path: Path) -> None:
    """Issue 11 items 10 and 12: a 10,000-deep record, 300-deep tool arguments, NaN and a
    duplicate key are listed by validate (which goes on to later errors) and stop run before
    any scoring, with the same FILE:LINE lines."""
    lines = [
        json.dumps(_deep_args(3)),
        "[" * 10_000 + "]" * 10_000,
        json.dumps(_deep_args(300)),
        '{"user_input": [{"type": "human", "content": "x"}], "metadata": {"p": NaN}}',
        '{"user_input": [{"type": "human", "content": "x", "content": "y"}]}',
        json.dumps(BROKEN_RULE),
    ]
    (tmp_path / "hostile.jsonl").write_text("\n".join(lines) + "\n")
    expected = [
        "hostile.jsonl:2: nesting deeper than 64",
        "hostile.jsonl:3: user_input[1].tool_calls[0].args: nesting deeper than 64",
        "hostile.jsonl:4: metadata.p: NaN is not valid JSON (only finite numbers are)",
        "hostile.jsonl:5: user_input[0]: duplicate key 'content' in one object",
        "hostile.jsonl:6: user_input[4]: ToolMessage must follow an AIMessage where tools were "
        "called.",
    ]
    done = _convoeval("validate", "hostile.jsonl", cwd=tmp_path)
    assert done.returncode == 1
    assert done.stderr.splitlines() == expected
    assert "Traceback" not in done.stderr and "RecursionError" not in done.stderr
    run = _convoeval("run", "hostile.jsonl", "-m", "tool_call_accuracy", "--quiet", cwd=tmp_path)
    assert run.returncode == 2, run.stderr
    assert "Traceback" not in run.stderr
    for line in expected:
        assert line in run.stderr


@pytest.mark.skipif(not hasattr(os, "mkfifo"), reason="needs os.mkfifo (a POSIX named pipe)")
def test_special_files_are_refused_by_validate_and_run(tmp_path: Path) -> None:
    """Issue 11 item 11: a FIFO hung `run` forever; a link to /dev/zero grew without bound."""
    os.mkfifo(tmp_path / "pipe.jsonl")
    targets = ["pipe.jsonl"]
    if os.path.exists("/dev/zero"):
        (tmp_path / "zero.jsonl").symlink_to("/dev/zero")
        targets.append("zero.jsonl")
    for name in targets:
        for command in (["validate", name], ["run", name, "-m", "tool_call_accuracy"]):
            done = _convoeval(*command, cwd=tmp_path)  # a hang fails on the timeout
            assert done.returncode == 2, (command, done.stderr)
            assert f"{name}: is a " in done.stderr and "not a regular file" in done.stderr
