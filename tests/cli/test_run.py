"""`convoeval run` and `convoeval report` as real commands: README command, exit codes, resume
after SIGKILL against a local OpenAI-compatible server, and the API key never leaking."""

from __future__ import annotations

import json
import os
import re
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from _cli import convoeval
from convoeval import AIMessage, HumanMessage, MultiTurnSample, ToolCall
from convoeval.judges.core.cache import JudgeCache

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "support.jsonl"
SECRET = "sk-test-NEVER-WRITE-THIS-9f3a"


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _tool_file(path: Path, right: list[bool]) -> Path:
    with path.open("w") as handle:
        for i, ok in enumerate(right):
            sample = MultiTurnSample(
                user_input=[
                    HumanMessage(content=f"find {i}"),
                    AIMessage(content="", tool_calls=[ToolCall(name="find", args={"n": i})]),
                ],
                reference_tool_calls=[ToolCall(name="find", args={"n": i if ok else -1})],
                id=f"r{i}",
            )
            handle.write(json.dumps(sample.to_dict()) + "\n")
    return path


def test_readme_command_scores_the_examples_and_writes_a_report(tmp_path: Path) -> None:
    done = convoeval("run", str(EXAMPLES), "--report", "report.html", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    for name in ("topic_adherence", "conversation_relevancy", "tool_call_accuracy"):
        assert name in done.stdout
    skipped = [line for line in done.stderr.splitlines() if line.startswith("skipping ")]
    needs = "needs an LLM judge (--judge openai/MODEL or --judge gguf:PATH): agent_goal_accuracy, "
    llm_only = [line for line in skipped if needs in line]
    assert len(llm_only) == 1  # one line for every metric skipped for the same reason
    assert llm_only[0].startswith("skipping 10 metrics, each needs")
    assert "convoeval: scoring 12 of 12 records" in done.stderr  # plain lines: not a TTY
    assert "results: support.results.jsonl (12 rows)" in done.stdout
    rows = _rows(tmp_path / "support.results.jsonl")
    assert [r["index"] for r in rows] == list(range(12))
    assert all(r["scores"]["tool_call_accuracy"] is not None for r in rows)
    html = (tmp_path / "report.html").read_text()
    assert "VB-1042" in html and '<details class="conv"' in html
    # `convoeval report` re-renders from the saved rows and sidecar alone.
    again = convoeval("report", "support.results.jsonl", "-o", "again.html", cwd=tmp_path)
    assert again.returncode == 0, again.stderr
    assert "report: again.html" in again.stdout
    assert "VB-1042" in (tmp_path / "again.html").read_text()


def test_invalid_data_exits_2_listing_every_problem(tmp_path: Path) -> None:
    good = {"user_input": [{"type": "human", "content": "hi"}], "reference_tool_calls": []}
    bad_rule = {"user_input": [{"type": "tool", "content": "x"}], "reference_tool_calls": []}
    lines = [json.dumps(good), "{not json", json.dumps(bad_rule), json.dumps(good)]
    (tmp_path / "bad.jsonl").write_text("\n".join(lines) + "\n")
    done = convoeval("run", "bad.jsonl", "-m", "tool_call_f1", "-o", "r.jsonl", cwd=tmp_path)
    assert done.returncode == 2
    problems = [line for line in done.stderr.splitlines() if line.startswith("bad.jsonl:")]
    assert [p.split(":")[1] for p in problems] == ["2", "3"]
    assert "nothing was scored" in done.stderr
    assert not (tmp_path / "r.jsonl").exists()


def test_missing_fields_exit_2_listing_every_record(tmp_path: Path) -> None:
    _tool_file(tmp_path / "d.jsonl", [True, True, True])
    done = convoeval("run", "d.jsonl", "-m", "topic_adherence,tool_call_f1", cwd=tmp_path)
    assert done.returncode == 2
    listed = re.findall(r"d\.jsonl:(\d) \(id 'r\d'\): missing reference_topics", done.stderr)
    assert listed == ["1", "2", "3"]


def test_fail_under_and_threshold_gate_the_exit_code(tmp_path: Path) -> None:
    _tool_file(tmp_path / "d.jsonl", [True, False, True])
    common = ["run", "d.jsonl", "-m", "tool_call_accuracy", "-o", "r.jsonl"]
    low = convoeval(*common, "--fail-under", "tool_call_accuracy=0.9", cwd=tmp_path)
    assert low.returncode == 3, low.stderr
    assert "fail-under: tool_call_accuracy mean 0.6667 < 0.9" in low.stderr
    ok = convoeval(*common, "--fail-under", "tool_call_accuracy=0.5", cwd=tmp_path)
    assert ok.returncode == 0, ok.stderr
    assert "67% (>= 1)" in ok.stdout
    lenient = convoeval(*common, "--threshold", "tool_call_accuracy=0", cwd=tmp_path)
    assert lenient.returncode == 0 and "100% (>= 0)" in lenient.stdout
    wrong = convoeval(*common, "--fail-under", "topic_adherence=0.5", cwd=tmp_path)
    assert wrong.returncode == 2 and "not in this run" in wrong.stderr
    bad = convoeval(*common, "--threshold", "tool_call_accuracy", cwd=tmp_path)
    assert bad.returncode == 2 and "METRIC=NUMBER" in bad.stderr


def test_llm_metric_with_offline_judge_exits_2(tmp_path: Path) -> None:
    _tool_file(tmp_path / "d.jsonl", [True])
    done = convoeval("run", "d.jsonl", "-m", "agent_goal_accuracy", cwd=tmp_path)
    assert done.returncode == 2 and "--judge openai/MODEL" in done.stderr


def _relevancy_file(path: Path, count: int) -> Path:
    with path.open("w") as handle:
        for i in range(count):
            turns = [
                {"type": "human", "content": f"question {i}: what is the status?"},
                {"type": "ai", "content": f"answer {i}: all good"},
            ]
            handle.write(json.dumps({"user_input": turns, "id": f"q{i}"}) + "\n")
    return path


def _asked(bodies: list[dict[str, Any]]) -> list[int]:
    out = []
    for body in bodies:
        text = " ".join(str(m.get("content")) for m in body["messages"])
        out.append(int(re.search(r"question (\d+):", text).group(1)))  # type: ignore[union-attr]
    return out


def _question(body: dict[str, Any]) -> int:
    """The record number a conversation_relevancy request of `_relevancy_file` asks about."""
    return _asked([body])[0]


def _wait_for_rows(out: Path, count: int, process: subprocess.Popen[Any]) -> None:
    """Block until `out` holds `count` complete rows (the run, held by the server, cannot end
    first); fails if the process ends or two minutes pass."""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and process.poll() is None:
        if out.exists() and out.read_bytes().count(b"\n") >= count:
            return
        time.sleep(0.02)
    raise AssertionError(f"{out} never held {count} rows (exit code {process.poll()})")


def _wait_for_cached(folder: Path, count: int, process: subprocess.Popen[Any]) -> None:
    """Block until the judge cache in `folder` holds `count` answers (two minutes at most)."""
    cache = JudgeCache(folder / "judge-cache.sqlite3")
    deadline = time.monotonic() + 120
    try:
        while time.monotonic() < deadline and process.poll() is None:
            if (folder / "judge-cache.sqlite3").exists() and len(cache) >= count:
                return
            time.sleep(0.02)
    finally:
        cache.close()
    raise AssertionError(f"the judge cache never held {count} answers")


def test_resume_after_sigkill_scores_each_record_once(tmp_path: Path, fault_server: Any) -> None:
    # Records 10 and 13 are held unanswered: they take both request slots, so the run stops
    # sending with rows 0-9 written and the answers of 11 and 12 cached but not written (a row
    # waits for every row before it). It is killed there, with nothing left to chance.
    count, concurrency, held = 30, 2, {10, 13}
    verdict = {"verdicts": [{"exchange": 0, "relevant": True, "reason": ""}]}
    fault_server.reply(verdict).forever()
    fault_server.hold(lambda body: _question(body) in held)
    _relevancy_file(tmp_path / "d.jsonl", count)
    env = {**os.environ, "CONVOEVAL_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("OPENAI_API_KEY", None)
    args = [
        "run", "d.jsonl", "-m", "conversation_relevancy", "--judge", "openai/test-model",
        "--base-url", fault_server.url, "--api-key", SECRET,
        "--concurrency", str(concurrency), "-o", "r.jsonl", "--report", "report.html",
    ]  # fmt: skip
    command = [sys.executable, "-m", "convoeval.cli", *args]
    out = tmp_path / "r.jsonl"
    with (tmp_path / "first.log").open("w") as log:
        process = subprocess.Popen(command, cwd=tmp_path, stdout=log, stderr=log, env=env)
        try:
            assert fault_server.wait_until(lambda server: server.holding == 2, timeout=120)
            _wait_for_rows(out, 10, process)
            answered = len(fault_server.bodies) - 2  # final: both slots are held
            _wait_for_cached(tmp_path / "cache", answered, process)
        finally:
            process.send_signal(signal.SIGKILL)
            process.wait(timeout=30)
    first_rows = [
        json.loads(x) for x in out.read_text().splitlines(keepends=True) if x.endswith("\n")
    ]
    finished = {r["index"] for r in first_rows}
    assert finished == set(range(10))
    first_asked = _asked(fault_server.bodies)
    assert len(first_asked) == len(set(first_asked)) and held <= set(first_asked)
    second_start = len(fault_server.bodies)
    fault_server.release()

    done = convoeval(*args, cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    rows = _rows(out)
    assert [r["index"] for r in rows] == list(range(count))  # each once, in input order
    assert [r["id"] for r in rows] == [f"q{i}" for i in range(count)]
    second_asked = _asked(fault_server.bodies[second_start:])
    assert not finished & set(second_asked), "finished records were scored again"
    # Only the requests in flight at the kill are sent again; answers that arrived but were not
    # yet written come from the cache.
    assert set(first_asked) & set(second_asked) == held
    assert sorted(set(first_asked) | set(second_asked)) == list(range(count))
    assert len(first_asked) + len(second_asked) == count + len(held)
    # The key reached the server, and nowhere else.
    assert all(h.get("authorization") == f"Bearer {SECRET}" for h in fault_server.headers)
    for path in tmp_path.rglob("*"):
        if path.is_file():
            assert SECRET.encode() not in path.read_bytes(), path
    assert SECRET not in done.stdout + done.stderr


def test_report_of_a_file_without_sidecar_exits_2(tmp_path: Path) -> None:
    (tmp_path / "r.jsonl").write_text('{"index": 0, "scores": {}}\n')
    done = convoeval("report", "r.jsonl", cwd=tmp_path)
    assert done.returncode == 2 and "sidecar r.jsonl.meta.json is missing" in done.stderr


def test_ctrl_c_stops_cleanly_and_the_run_resumes(tmp_path: Path, fault_server: Any) -> None:
    # Records 0-2 are answered; every request for a later record is held unanswered until the
    # interrupt was sent, so the run cannot end before it arrives however loaded the machine.
    verdict = {"verdicts": [{"exchange": 0, "relevant": True, "reason": ""}]}
    fault_server.reply(verdict).forever()
    fault_server.hold(lambda body: _question(body) >= 3)
    _relevancy_file(tmp_path / "d.jsonl", 20)
    env = {**os.environ, "CONVOEVAL_CACHE_DIR": str(tmp_path / "cache")}
    args = [
        "run", "d.jsonl", "-m", "conversation_relevancy", "--judge", "openai/test-model",
        "--base-url", fault_server.url, "--concurrency", "1", "-o", "r.jsonl",
    ]  # fmt: skip
    out = tmp_path / "r.jsonl"
    process = subprocess.Popen(
        [sys.executable, "-m", "convoeval.cli", *args],
        cwd=tmp_path,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert fault_server.wait_until(lambda server: server.holding == 1, timeout=120)
        _wait_for_rows(out, 3, process)
        process.send_signal(signal.SIGINT)
        _, stderr = process.communicate(timeout=60)
    finally:
        if process.poll() is None:
            process.kill()
    assert process.returncode == 130, stderr
    assert "interrupted: run the same command again to resume" in stderr
    assert out.read_text().count("\n") == 3 and out.read_text().endswith("\n")
    assert sorted(_asked(fault_server.bodies)) == [0, 1, 2, 3]  # one request held, then dropped
    fault_server.release()
    done = convoeval(*args, cwd=tmp_path, env=env)
    assert done.returncode == 0, done.stderr
    assert [r["index"] for r in _rows(out)] == list(range(20))
    assert sorted(_asked(fault_server.bodies)) == [0, 1, 2, 3, *range(3, 20)]  # 0-2 not again


def test_a_401_echoing_the_key_never_stores_or_prints_it(tmp_path: Path, fault_server: Any) -> None:
    # A refused key stops the run with exit 5 (tests/cli/test_wrong_key.py); whatever the
    # server echoed is stored and printed nowhere.
    echoed = f"Incorrect API key provided: Bearer {SECRET}. Check the key {SECRET} and retry."
    fault_server.error(401, echoed).forever()
    _relevancy_file(tmp_path / "d.jsonl", 3)
    env = {**os.environ, "CONVOEVAL_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("OPENAI_API_KEY", None)
    done = convoeval(
        "run", "d.jsonl", "-m", "conversation_relevancy", "--judge", "openai/test-model",
        "--base-url", fault_server.url, "--api-key", SECRET, "-o", "r.jsonl",
        "--report", "report.html", cwd=tmp_path, env=env,
    )  # fmt: skip
    assert done.returncode == 5, done.stderr
    assert fault_server.headers and all(
        h.get("authorization") == f"Bearer {SECRET}" for h in fault_server.headers
    )  # the key was sent, and the server echoed it back
    assert "HTTP 401" in done.stderr and "Incorrect API key provided" in done.stderr
    assert _rows(tmp_path / "r.jsonl") == []
    shown = [p.read_text() for p in tmp_path.glob("r.jsonl*")] + [done.stdout, done.stderr]
    for text in shown:
        assert SECRET not in text and "NEVER-WRITE-THIS" not in text
