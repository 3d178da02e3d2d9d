"""`convoeval run` as a user meets it (issue 12): honest exit codes, retrying failures, an
unreachable judge, metric options, the options people look for, clear refusals."""

from __future__ import annotations

import json
import os
import socket
import subprocess
import sys
from pathlib import Path
from typing import Any

from _cli import convoeval
from _orders import write_orders

GOAL = "agent_goal_accuracy_with_reference"
GOOD_GOAL = {"end_state": "the order was found", "achieved": True, "reason": "it was found"}


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _judge_args(url: str) -> list[str]:
    return ["--judge", "openai/test-model", "--base-url", url, "--api-key", "sk-test"]


def test_failed_pairs_exit_4_and_retry_failed_rescores_only_them(
    tmp_path: Path, fault_server: Any
) -> None:
    write_orders(tmp_path / "d.jsonl", 3)
    args = ["run", "d.jsonl", "-m", f"tool_call_f1,{GOAL}", "-o", "r.jsonl", "--no-cache"]
    args += ["--fail-under", "tool_call_f1=0.5", *_judge_args(fault_server.url)]
    fault_server.error(404, "The model test-model does not exist").forever()
    first = convoeval(*args, cwd=tmp_path)
    assert first.returncode == 4, first.stderr
    assert "failed: 3 (record, metric) pairs could not be scored" in first.stderr
    assert "--retry-failed" in first.stderr
    rows = _rows(tmp_path / "r.jsonl")
    assert [r["scores"]["tool_call_f1"] for r in rows] == [1.0, 1.0, 1.0]
    assert all(GOAL in r["errors"] for r in rows)
    # The same command again resumes a finished file: still not a success.
    again = convoeval(*args, cwd=tmp_path)
    assert again.returncode == 4, again.stderr
    before = fault_server.attempts
    fault_server.default = None
    fault_server.reply(GOOD_GOAL).forever()
    retried = convoeval(*args, "--retry-failed", cwd=tmp_path)
    assert retried.returncode == 0, retried.stderr
    assert fault_server.attempts - before == 3  # one request per failed pair, nothing else
    rows = _rows(tmp_path / "r.jsonl")
    assert [r["index"] for r in rows] == [0, 1, 2]
    assert all(r["scores"][GOAL] == 1.0 and r["errors"] == {} for r in rows)
    assert [r["scores"]["tool_call_f1"] for r in rows] == [1.0, 1.0, 1.0]
    assert not list(tmp_path.glob("*.tmp"))


def _closed_port() -> int:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port: int = sock.getsockname()[1]
    return port


def test_an_unreachable_judge_stops_the_run_with_exit_2(tmp_path: Path) -> None:
    write_orders(tmp_path / "d.jsonl", 2)
    url = f"http://127.0.0.1:{_closed_port()}/v1"
    done = convoeval("run", "d.jsonl", "-m", GOAL, "-o", "r.jsonl", *_judge_args(url), cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert f"cannot reach the judge at {url}" in done.stderr and "nothing was scored" in done.stderr
    assert _rows(tmp_path / "r.jsonl") == []


def test_a_bad_judge_spec_is_refused_before_anything_is_read(tmp_path: Path) -> None:
    done = convoeval("run", "missing.jsonl", "--judge", "ofline", cwd=tmp_path)
    assert done.returncode == 2 and done.stdout == ""
    assert "offline" in done.stderr and "missing.jsonl" not in done.stderr


def test_metric_options_are_checked_against_the_constructor(tmp_path: Path) -> None:
    write_orders(tmp_path / "d.jsonl", 2)
    spec = "tool_call_accuracy:strict_order=false,threshold=0.8"
    done = convoeval("run", "d.jsonl", "-m", spec, "-o", "r.jsonl", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    meta = json.loads((tmp_path / "r.jsonl.meta.json").read_text())
    assert meta["metrics"][0]["config"]["strict_order"] is False
    assert meta["metrics"][0]["threshold"] == 0.8
    wrong = convoeval("run", "d.jsonl", "-m", "tool_call_accuracy:strict=0", cwd=tmp_path)
    assert wrong.returncode == 2
    assert "metric tool_call_accuracy: no option 'strict'; accepted options: strict_order" in (
        wrong.stderr
    )
    high = convoeval(
        "run", "d.jsonl", "-m", "tool_call_f1", "--threshold", "tool_call_f1=5", cwd=tmp_path
    )
    assert high.returncode == 2 and "outside its scores' range [0, 1]" in high.stderr
    typo = convoeval("run", "d.jsonl", "-m", "tool_call_f", cwd=tmp_path)
    assert typo.returncode == 2 and "did you mean 'tool_call_f1'?" in typo.stderr


def test_metric_option_values_are_checked_by_the_parameter_type(tmp_path: Path) -> None:
    write_orders(tmp_path / "d.jsonl", 1)
    refused = {
        "tool_call_accuracy:strict_order=no": (
            "metric tool_call_accuracy: strict_order must be true or false, not 'no'"
        ),
        "turn_relevancy:window_size=2.5": "window_size must be a whole number, not '2.5'",
        "tool_call_f1:threshold=high": "tool_call_f1: threshold must be a number, not 'high'",
        "topic_adherence:mode=recal": "mode must be one of f1, precision, recall, not 'recal'",
        "tool_call_accuracy:arg_comparator=len": (
            "metric tool_call_accuracy: arg_comparator takes a function, so it can only be set "
            "in Python (ToolCallAccuracy(arg_comparator=...)), not on the command line"
        ),
        "tool_call_accuracy:strict=0": (
            "metric tool_call_accuracy: no option 'strict'; accepted options: strict_order, "
            "compat, threshold\n"
        ),
    }
    for spec, message in refused.items():
        done = convoeval("run", "d.jsonl", "-m", spec, cwd=tmp_path)
        assert (done.returncode, done.stdout) == (2, ""), (spec, done.stderr)
        assert message in done.stderr, (spec, done.stderr)
    spec = "tool_call_accuracy:strict_order=TRUE"
    done = convoeval("run", "d.jsonl", "-m", spec, "-o", "r.jsonl", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    meta = json.loads((tmp_path / "r.jsonl.meta.json").read_text())
    assert meta["metrics"][0]["config"]["strict_order"] is True
    # One record: the summary table's title says so in the singular.
    assert done.stdout.splitlines()[0].strip() == "convoeval: 1 record"


def test_a_bad_field_option_to_run_is_a_one_line_input_error(tmp_path: Path) -> None:
    write_orders(tmp_path / "d.jsonl", 1)
    done = convoeval("run", "d.jsonl", "-m", "tool_call_f1", "--field", "score=a.b", cwd=tmp_path)
    assert (done.returncode, done.stdout) == (2, ""), done.stderr
    assert len(done.stderr.splitlines()) == 1
    assert done.stderr.startswith("error: fields: cannot map 'score': use a sample field")


def test_limit_quiet_skip_invalid_and_the_default_output_name(tmp_path: Path) -> None:
    data = write_orders(tmp_path / "good.v2.jsonl", 4)
    lines = data.read_text().splitlines()
    lines.insert(1, '{"user_input": [{"type": "tool", "content": "x"}]}')
    data.write_text("\n".join(lines) + "\n")
    refused = convoeval("run", "good.v2.jsonl", "-m", "tool_call_f1", cwd=tmp_path)
    assert refused.returncode == 2 and "good.v2.jsonl:2:" in refused.stderr
    done = convoeval(
        "run", "good.v2.jsonl", "-m", "tool_call_f1", "--skip-invalid", "--limit", "4", "-q",
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert "convoeval: scor" not in done.stderr  # --quiet: no progress lines
    out = tmp_path / "good.v2.results.jsonl"
    assert [r["index"] for r in _rows(out)] == [0, 2, 3]  # record 1 invalid, record 4 past limit
    meta = json.loads((tmp_path / "good.v2.results.jsonl.meta.json").read_text())
    assert len(meta["invalid"]) == 1 and meta["invalid"][0].startswith("good.v2.jsonl:2:")
    assert meta["options"] == {"limit": 4, "skip_invalid": True}
    more = convoeval(
        "run", "good.v2.jsonl", "-m", "tool_call_f1", "--skip-invalid", "--limit", "5",
        cwd=tmp_path,
    )  # fmt: skip
    assert more.returncode == 2 and "--limit differs (4 -> 5)" in more.stderr
    loud = convoeval(
        "run", "good.v2.jsonl", "-m", "tool_call_f1", "--skip-invalid", "-o", "x.jsonl",
        cwd=tmp_path,
    )  # fmt: skip
    assert "skipped 1 invalid record" in loud.stderr and "good.v2.jsonl:2:" in loud.stderr


def test_reference_topics_apply_to_records_without_any(tmp_path: Path) -> None:
    write_orders(tmp_path / "d.jsonl", 2)
    (tmp_path / "topics.txt").write_text("order status\n\nshipping\n")
    for given in (["order status", "shipping"], ["@topics.txt"]):
        done = convoeval(
            "run", "d.jsonl", "-m", "topic_adherence", "--overwrite", "-o", "r.jsonl",
            "--reference-topics", *given,
            cwd=tmp_path,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        rows = _rows(tmp_path / "r.jsonl")
        assert [r["sample"]["reference_topics"] for r in rows] == [["order status", "shipping"]] * 2
        assert all(r["scores"]["topic_adherence"] is not None for r in rows)
    without = convoeval("run", "d.jsonl", "-m", "topic_adherence", "-o", "n.jsonl", cwd=tmp_path)
    assert without.returncode == 2 and "reference_topics" in without.stderr


def test_empty_input_means_nothing_to_score(tmp_path: Path) -> None:
    (tmp_path / "empty.jsonl").write_text("")
    done = convoeval("run", "empty.jsonl", "-m", "tool_call_f1", cwd=tmp_path)
    assert done.returncode == 2 and "empty.jsonl" in done.stderr
    assert "nothing to check or score" in done.stderr or "nothing to score" in done.stderr


def test_report_errors_name_the_file_and_line(tmp_path: Path) -> None:
    missing = convoeval("report", "nope.jsonl", cwd=tmp_path)
    assert missing.returncode == 2 and "nope.jsonl: no such results file" in missing.stderr
    write_orders(tmp_path / "d.jsonl", 1)
    assert convoeval("run", "d.jsonl", "-m", "tool_call_f1", cwd=tmp_path).returncode == 0
    results = tmp_path / "d.results.jsonl"
    with results.open("a") as handle:
        handle.write(json.dumps({"index": 1, "id": "x"}) + "\n")
    broken = convoeval("report", "d.results.jsonl", cwd=tmp_path)
    assert broken.returncode == 2, broken.stderr
    assert "d.results.jsonl:2: a results row needs a 'scores' object" in broken.stderr
    assert "Traceback" not in broken.stderr


def test_resume_ignores_metric_order_and_refusals_speak_cli(tmp_path: Path) -> None:
    write_orders(tmp_path / "d.jsonl", 2)
    first = convoeval(
        "run", "d.jsonl", "-m", "tool_call_f1", "-m", "tool_call_accuracy", cwd=tmp_path
    )
    assert first.returncode == 0, first.stderr
    swapped = convoeval("run", "d.jsonl", "-m", "tool_call_accuracy,tool_call_f1", cwd=tmp_path)
    assert swapped.returncode == 0, swapped.stderr
    assert "scoring 0 of 2 records, 2 already done (resumed)" in swapped.stderr
    other = convoeval("run", "d.jsonl", "-m", "tool_call_accuracy:strict_order=false", cwd=tmp_path)
    assert other.returncode == 2
    assert "the metrics differ" in other.stderr and "use --overwrite" in other.stderr
    assert "overwrite=True" not in other.stderr.split("use --overwrite")[0]


def test_metrics_fits_the_terminal_and_shows_class_names(tmp_path: Path) -> None:
    env = {**os.environ, "COLUMNS": "80"}
    done = convoeval("metrics", cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    assert "tool_call_accuracy (ToolCallAccuracy)" in done.stdout
    assert "topic_adherence (TopicAdherenceScore)" in done.stdout
    assert max(len(line) for line in done.stdout.splitlines()) <= 80


def test_a_bug_shows_its_traceback_instead_of_invalid_input(tmp_path: Path) -> None:
    write_orders(tmp_path / "d.jsonl", 1)
    code = (
        "import sys, convoeval.runner as runner\n"
        "def broken(*a, **k): raise TypeError('an internal bug')\n"
        "runner.evaluate = broken\n"
        "from convoeval.cli import main\n"
        "main(['run', 'd.jsonl', '-m', 'tool_call_f1'])\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 6  # EXIT_BUG (DESIGN §8)
    assert "Traceback" in done.stderr and "TypeError: an internal bug" in done.stderr
    assert "error: a bug stopped the run" in done.stderr


def test_other_layouts_run_with_messages_field_and_field_paths(tmp_path: Path) -> None:
    call = {"id": "c1", "type": "function", "function": {"name": "find", "arguments": '{"n": 1}'}}
    record = {
        "traj": [
            {"role": "user", "content": "find order 1"},
            {"role": "assistant", "content": None, "tool_calls": [call]},
            {"role": "tool", "tool_call_id": "c1", "content": "order 1: shipped"},
            {"role": "assistant", "content": "order 1 has shipped"},
        ],
        "info": {"task": {"actions": [{"name": "find", "kwargs": {"n": 1}}]}},
        "reward": 1.0,
    }
    (tmp_path / "tau.json").write_text(json.dumps([record, record]))
    done = convoeval(
        "run", "tau.json", "-m", "tool_call_f1", "--messages-field", "traj",
        "--field", "reference_tool_calls=info.task.actions",
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = _rows(tmp_path / "tau.results.jsonl")
    assert [r["scores"]["tool_call_f1"] for r in rows] == [1.0, 1.0]
    meta = json.loads((tmp_path / "tau.results.jsonl.meta.json").read_text())
    assert meta["options"]["messages_field"] == "traj"
    bad = convoeval("run", "tau.json", "-m", "tool_call_f1", "--field", "nopath", cwd=tmp_path)
    assert bad.returncode == 2 and "NAME=PATH" in bad.stderr


def test_timeout_and_retry_budget_reach_the_judge(tmp_path: Path, fault_server: Any) -> None:
    write_orders(tmp_path / "d.jsonl", 1)
    fault_server.stall(30).forever()
    done = convoeval(
        "run", "d.jsonl", "-m", GOAL, "--no-cache", "--timeout", "0.2", "--retry-budget", "0.1",
        *_judge_args(fault_server.url),
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 4, done.stderr
    row = _rows(tmp_path / "d.results.jsonl")[0]
    message = row["errors"][GOAL]["message"]
    assert "timed out after 0.2 s" in message and "budget (0.1 s)" in message


def test_unwritable_outputs_exit_2_before_anything_is_scored(tmp_path: Path) -> None:
    write_orders(tmp_path / "d.jsonl", 2)
    (tmp_path / "a-file").write_text("x")
    report = convoeval(
        "run", "d.jsonl", "-m", "tool_call_f1", "--report", "a-file/report.html", cwd=tmp_path
    )
    assert report.returncode == 2 and "cannot write the report a-file/report.html" in report.stderr
    assert not (tmp_path / "d.results.jsonl").exists()  # refused before the run started
    results = convoeval(
        "run", "d.jsonl", "-m", "tool_call_f1", "-o", "a-file/r.jsonl", cwd=tmp_path
    )
    assert results.returncode == 2 and "a-file is a file, not a directory" in results.stderr
    assert "Traceback" not in results.stderr + report.stderr
