"""`convoeval run --batch` and `convoeval batch export` / `import` as real commands against the
local Files + Batches server: a run killed (SIGKILL) while its batch is in flight resumes it
without sending any request twice, or finds it refused (exit 4 when a round is refused);
export/import rounds end with a run that sends nothing."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from _batch_server import BatchServer, schema_answer
from _parcel import parcels

from _cli import convoeval

#: A port nothing listens on: the export/import commands must never reach a server.
NOWHERE = "http://127.0.0.1:9/v1"


def _data(tmp_path: Path, count: int) -> Path:
    path = tmp_path / "data.jsonl"
    with path.open("w") as handle:
        for sample in parcels(count):
            handle.write(json.dumps(sample.to_dict()) + "\n")
    return path


def _env(tmp_path: Path) -> dict[str, str]:
    return {
        **os.environ,
        "CONVOEVAL_CACHE_DIR": str(tmp_path / "cache"),
        "OPENAI_API_KEY": "sk-test",
    }


def _command(*args: str) -> list[str]:
    return [sys.executable, "-m", "convoeval.cli", *args]


def _convoeval(tmp_path: Path, *args: str) -> subprocess.CompletedProcess[str]:
    return convoeval(*args, cwd=tmp_path, env=_env(tmp_path), timeout=120)


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def _submitted(sidecar: Path) -> bool:
    try:
        meta = json.loads(sidecar.read_text())
    except (OSError, ValueError):
        return False
    return any(e.get("status") == "submitted" for e in meta.get("batches", []))


def _kill_with_batch_in_flight(server: BatchServer, tmp_path: Path, args: list[str]) -> Path:
    """Start `convoeval ARGS` with the server holding its first batch in progress, SIGKILL it
    once the results sidecar records that batch; the sidecar's path."""
    server.hold()  # the first batch stays in progress until released
    first = subprocess.Popen(
        _command(*args),
        cwd=tmp_path,
        env=_env(tmp_path),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    sidecar = tmp_path / "results.jsonl.meta.json"
    deadline = time.monotonic() + 60
    while not _submitted(sidecar) and first.poll() is None and time.monotonic() < deadline:
        time.sleep(0.02)
    assert _submitted(sidecar), "the run never recorded its batch"
    first.send_signal(signal.SIGKILL)
    first.wait(30)
    return sidecar


def test_a_killed_run_resumes_its_batch_in_flight_and_sends_no_request_twice(
    server: BatchServer, tmp_path: Path
) -> None:
    data = _data(tmp_path, 4)
    args = ["run", str(data), "-m", "topic_adherence", "--judge", "openai/m"]
    args += ["--base-url", server.url, "--batch", "-o", "results.jsonl"]
    sidecar = _kill_with_batch_in_flight(server, tmp_path, args)
    server.release()

    done = _convoeval(tmp_path, *args)
    assert done.returncode == 0, done.stderr
    assert server.twice() == [] and [len(b) for b in server.batches] == [4, 8]
    assert "batch batch_1: resuming" in done.stderr
    assert [r["scores"]["topic_adherence"] for r in _rows(tmp_path / "results.jsonl")] == [1.0] * 4
    assert "12 requests by batch" in done.stdout
    meta = json.loads(sidecar.read_text())
    assert [(e["id"], e["status"]) for e in meta["batches"]] == [
        ("batch_1", "collected"),
        ("batch_2", "collected"),
    ]


def test_a_resumed_run_meets_its_batch_refused_then_a_refused_round_exits_4(
    server: BatchServer, tmp_path: Path
) -> None:
    """The batch a killed run left in flight was then refused as a whole: the resumed run
    records it as failed and asks its requests afresh (none was answered). That run's round-2
    batch is refused too: its pairs fail naming the batch and the server's error, exit code 4,
    and the refused batch is not sent again."""
    data = _data(tmp_path, 3)
    args = ["run", str(data), "-m", "topic_adherence", "--judge", "openai/m"]
    args += ["--base-url", server.url, "--batch", "-o", "results.jsonl"]
    sidecar = _kill_with_batch_in_flight(server, tmp_path, args)
    server.refuse = {
        1: ("invalid_json_line", "This line is not parseable as valid JSON."),
        3: ("token_limit_exceeded", "Enqueued token limit reached for m."),
    }
    server.release()

    done = _convoeval(tmp_path, *args)
    assert done.returncode == 4, done.stderr
    assert [len(b) for b in server.batches] == [3, 3, 6]  # no batch sent after the refused one
    assert sorted(server.batches[1]) == sorted(server.batches[0])
    assert "failed: 3 (record, metric) pairs could not be scored" in done.stderr
    assert "--retry-failed" in done.stderr and "Traceback" not in done.stderr
    rows = _rows(tmp_path / "results.jsonl")
    assert [r["scores"]["topic_adherence"] for r in rows] == [None] * 3
    for row in rows:
        message = row["errors"]["topic_adherence"]["message"]
        assert "the server refused batch batch_3: token_limit_exceeded: Enqueued" in message
    meta = json.loads(sidecar.read_text())
    assert [(e["id"], e["status"]) for e in meta["batches"]] == [
        ("batch_1", "failed"),
        ("batch_2", "collected"),
        ("batch_3", "failed"),
    ]
    assert "invalid_json_line: This line is not parseable" in meta["batches"][0]["error"]


def _answer(requests: Path, answers: Path) -> int:
    """Act as an offline batch runner: answer every request line of `requests`."""
    lines = [json.loads(line) for line in requests.read_text().splitlines()]
    with answers.open("w") as handle:
        for line in lines:
            content = json.dumps(schema_answer(line["body"]))
            body = {
                "id": "chatcmpl-offline",
                "object": "chat.completion",
                "choices": [
                    {
                        "index": 0,
                        "message": {"role": "assistant", "content": content},
                        "finish_reason": "stop",
                    }
                ],
            }
            response = {"status_code": 200, "body": body}
            handle.write(json.dumps({"custom_id": line["custom_id"], "response": response}) + "\n")
    return len(lines)


def test_export_and_import_rounds_then_a_run_that_sends_nothing(tmp_path: Path) -> None:
    data = _data(tmp_path, 3)
    judge = ["-m", "topic_adherence", "--judge", "openai/m", "--base-url", NOWHERE]
    requests, answers = tmp_path / "requests.jsonl", tmp_path / "answers.jsonl"

    done = _convoeval(tmp_path, "batch", "export", str(data), "-o", str(requests), *judge)
    assert done.returncode == 0, done.stderr
    assert f"exported 3 requests to {requests}" in done.stdout
    first = [json.loads(line) for line in requests.read_text().splitlines()]
    assert {line["url"] for line in first} == {"/v1/chat/completions"}
    assert all(len(line["custom_id"]) == 64 for line in first)  # the cache keys
    assert _answer(requests, answers) == 3
    with answers.open("a") as handle:
        handle.write("not json\n")
    done = _convoeval(tmp_path, "batch", "import", str(answers))
    assert done.returncode == 2  # the bad line is named; the good ones are imported
    assert f"imported 3 answers from {answers}" in done.stdout
    assert f"{answers}:4: not JSON" in done.stderr

    done = _convoeval(tmp_path, "batch", "export", str(data), "-o", str(requests), *judge)
    assert done.returncode == 0, done.stderr
    assert "exported 6 requests" in done.stdout  # round 2: both verdict steps of 3 records
    _answer(requests, answers)
    assert _convoeval(tmp_path, "batch", "import", str(answers)).returncode == 0

    done = _convoeval(tmp_path, "batch", "export", str(data), "-o", str(requests), *judge)
    assert done.returncode == 0, done.stderr
    assert "nothing to export" in done.stdout and not requests.exists()

    out = tmp_path / "results.jsonl"
    done = _convoeval(tmp_path, "run", str(data), *judge, "--batch", "-o", str(out))
    assert done.returncode == 0, done.stderr  # scored from the cache: nothing was sent
    assert [r["scores"]["topic_adherence"] for r in _rows(out)] == [1.0] * 3
    assert "0 requests (9 answered from cache)" in done.stdout  # the exports cached them
