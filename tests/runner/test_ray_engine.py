"""The Ray engine on a real local Ray runtime (one per test session, 127.0.0.1 only, no dashboard,
no usage stats): rows identical to a local run and in input order, a small run split over every
worker and the whole limit (joined through `RAY_ADDRESS`, start-up apart in the summary), the
endpoint limit shared by the workers, a worker killed mid-run (replaced, the records whose rows
had not come back sent again, its requests counted), a killed
`convoeval run --engine ray` resumed with no request repeated for a written row, and a run that
loses every worker (exit 130, its rows kept, resumed).

Ray is in the test extra, so a missing Ray fails these tests (CONVOEVAL_SKIP_RAY=1 skips them on
purpose, with that reason)."""

from __future__ import annotations

import contextlib
import json
import logging
import os
import re
import signal
import socket
import subprocess
import sys
import threading
import time
from collections import Counter
from collections.abc import Iterator
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
from _runner_samples import tool_sample, write_jsonl

from convoeval import evaluate
from convoeval.engines.ray.engine import RayEngineError
from convoeval.engines.ray.worker import build, recipe, shares
from convoeval.judges import FakeJudge, OpenAIJudge
from convoeval.judges.core.endpoints import EndpointRegistry
from convoeval.runner._plan import UsageError

SKIP_RAY = "CONVOEVAL_SKIP_RAY"
#: What the fault server answers for a one-exchange conversation_relevancy record.
RELEVANT = {"verdicts": [{"exchange": 0, "relevant": True, "reason": ""}]}


def _import_ray() -> ModuleType:
    try:
        import ray
    except ImportError as exc:
        if os.environ.get(SKIP_RAY) == "1":
            pytest.skip(f"{SKIP_RAY}=1 and ray cannot be imported: {exc}")
        pytest.fail(
            f"ray cannot be imported ({exc}); it is in the test extra (pip install -e '.[test]'); "
            f"set {SKIP_RAY}=1 to skip the Ray tests on purpose",
            pytrace=False,
        )
    return ray


@pytest.fixture(scope="session")
def ray_address(_session_cache_dir: Path) -> Iterator[str]:
    """The GCS address of the session's local Ray runtime (2 CPUs, bound to 127.0.0.1); its
    workers keep the session's judge cache directory, set while the runtime starts."""
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"  # a single machine: loopback only
    ray = _import_ray()
    before = os.environ.get("CONVOEVAL_CACHE_DIR")
    os.environ["CONVOEVAL_CACHE_DIR"] = str(_session_cache_dir)
    try:
        ray.init(
            num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level=logging.WARNING
        )
    finally:
        if before is None:
            os.environ.pop("CONVOEVAL_CACHE_DIR", None)
        else:
            os.environ["CONVOEVAL_CACHE_DIR"] = before
    address = str(ray.get_runtime_context().gcs_address)
    assert address.startswith("127.0.0.1:"), address
    yield address
    ray.shutdown()


def _questions(n: int, path: Path) -> Path:
    """`n` one-exchange conversations, record i asking 'question i: ...'."""
    records = [
        {
            "id": f"q{i}",
            "user_input": [
                {"type": "human", "content": f"question {i}: what is the status?"},
                {"type": "ai", "content": f"answer {i}: all good"},
            ],
        }
        for i in range(n)
    ]
    return write_jsonl(path, records)


def _asked(body: dict[str, Any]) -> int:
    text = " ".join(str(m.get("content")) for m in body["messages"])
    found = re.search(r"question (\d+):", text)
    assert found is not None
    return int(found.group(1))


def _rows(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def test_engine_options_are_checked() -> None:
    samples = [tool_sample(0)]
    for options, message in (
        ({"engine": "spark"}, "engine must be 'local' or 'ray'"),
        ({"ray_workers": 2}, r"ray_workers \(--ray-workers\): only with engine='ray'"),
        ({"engine": "ray", "ray_address": "head-node"}, "must be HOST:PORT or ray://HOST:PORT"),
        ({"engine": "ray", "ray_block_size": 0}, "ray_block_size must be a whole number"),
    ):
        with pytest.raises(UsageError, match=message):
            evaluate(samples, ["tool_call_accuracy"], show_progress=False, **options)  # type: ignore[arg-type]


def test_an_unreachable_ray_address_is_an_error_at_once(tmp_path: Path) -> None:
    with socket.socket() as probe:  # a loopback port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    data = write_jsonl(tmp_path / "d.jsonl", [tool_sample(0)])
    command = [
        sys.executable, "-m", "convoeval.cli", "run", str(data), "-m", "tool_call_accuracy",
        "-o", str(tmp_path / "out.jsonl"), "--engine", "ray", "--ray-address", f"127.0.0.1:{port}",
    ]  # fmt: skip
    done = subprocess.run(command, capture_output=True, text=True, timeout=60)
    assert done.returncode == 2, done.stderr
    assert f"error: cannot reach the Ray cluster at 127.0.0.1:{port}" in done.stderr
    assert "Traceback" not in done.stderr


def test_worker_limits_add_up_to_the_driver_limits() -> None:
    """Two judges sharing an endpoint's default limit keep sharing one limiter on a worker,
    a judge with its own limit keeps its own, and the workers' parts add up to each limit."""
    registry = EndpointRegistry()
    url = "http://127.0.0.1:9/v1"
    shared_a = OpenAIJudge("a", base_url=url, registry=registry, cache=False)
    shared_b = OpenAIJudge("b", base_url=url, registry=registry, cache=False)
    own = OpenAIJudge("c", base_url=url, registry=registry, cache=False, concurrency=5)
    limits: dict[str, int] = {}
    made = [recipe(judge, limits) for judge in (shared_a, shared_b, own)]
    assert sorted(limits.values()) == [5, 16]
    parts = shares(limits, 3)
    assert [sum(part[key] for part in parts) for key in limits] == list(limits.values())
    worker = EndpointRegistry()
    a, b, c = (build(one, parts[2], worker) for one in made)
    assert a._limiter is b._limiter and a.concurrency == 5  # 16 = 6 + 5 + 5
    assert c._limiter is not a._limiter and c.concurrency == 1  # 5 = 2 + 2 + 1
    assert (a.model, c.base_url, a.cache) == ("a", url, None)


def test_a_judge_that_cannot_be_sent_to_workers_is_a_clear_error(
    ray_address: str, tmp_path: Path
) -> None:
    with pytest.raises(RayEngineError, match=r"cannot be sent to Ray workers .*FakeJudge"):
        evaluate(
            [tool_sample(0)],
            ["conversation_relevancy"],
            FakeJudge({}),
            output=tmp_path / "out.jsonl",
            show_progress=False,
            engine="ray",
        )
    assert (tmp_path / "out.jsonl").read_text() == ""  # nothing scored, nothing written


def test_rows_match_a_local_run_in_input_order(ray_address: str, tmp_path: Path) -> None:
    samples = [tool_sample(i, right=i % 3 != 0) for i in range(60)]
    metrics = ["tool_call_accuracy", "tool_call_f1"]
    local = evaluate(samples, metrics, output=tmp_path / "local.jsonl", show_progress=False)
    remote = evaluate(
        samples,
        metrics,
        output=tmp_path / "ray.jsonl",
        show_progress=False,
        engine="ray",
        ray_workers=2,
        ray_block_size=7,  # blocks finish out of order across the two workers
    )
    keys = ("index", "id", "where", "scores", "reasons", "details", "errors", "sample")
    ours, theirs = _rows(tmp_path / "ray.jsonl"), _rows(tmp_path / "local.jsonl")
    assert [r["index"] for r in ours] == list(range(60))
    assert [{k: r[k] for k in keys} for r in ours] == [{k: r[k] for k in keys} for r in theirs]
    assert remote.summary() == local.summary()
    assert remote.meta["metrics"] == local.meta["metrics"]


def _worker_pids() -> list[int]:
    """Processes of the engine's Ray actors (their title is `ray::Worker...`) in this session's
    runtime: descendants of this process only, never another run's on a shared machine."""
    parent: dict[int, int] = {}
    actors = []
    for entry in Path("/proc").iterdir():
        if entry.name.isdigit():
            try:
                command = (entry / "cmdline").read_bytes()
                stat = (entry / "stat").read_text()
            except OSError:
                continue
            pid = int(entry.name)
            parent[pid] = int(stat.rpartition(")")[2].split()[1])
            if command.startswith(b"ray::Worker"):
                actors.append(pid)
    ours = []
    for pid in actors:
        seen = pid
        while seen > 1 and seen != os.getpid():
            seen = parent.get(seen, 0)
        if seen == os.getpid():
            ours.append(pid)
    return sorted(ours)


def test_a_small_run_uses_every_worker_and_the_whole_limit(
    ray_address: str, tmp_path: Path, fault_server: Any
) -> None:
    """20 records, 2 workers, `--concurrency 8`: the run is cut into one block per worker, so 8
    requests are in flight at once (not 4 on one worker). `RAY_ADDRESS` is honoured (the run
    connects to the session's runtime) and the summary gives start-up apart from scoring."""
    fault_server.reply(RELEVANT, gather=8).forever()  # each answer waits for 8 in flight
    data = _questions(20, tmp_path / "d.jsonl")
    out = tmp_path / "out.jsonl"
    command = [
        sys.executable, "-m", "convoeval.cli", "run", str(data), "-m", "conversation_relevancy",
        "--judge", "openai/test-model", "--base-url", fault_server.url, "--no-cache",
        "--concurrency", "8", "-o", str(out), "--engine", "ray", "--ray-workers", "2",
    ]  # fmt: skip
    env = {**os.environ, "RAY_ADDRESS": ray_address}
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stderr
    assert fault_server.peak == 8
    assert [r["index"] for r in _rows(out)] == list(range(20))
    assert re.search(r"^engine ray: 2 workers, start-up \d+\.\d s, scoring \d+\.\d s$",
                     done.stdout, re.MULTILINE), done.stdout  # fmt: skip
    engine = json.loads(out.with_name("out.jsonl.meta.json").read_text())["engine"]
    assert engine["address"] == ray_address and engine["workers"] == 2
    assert engine["startup_s"] > 0 and engine["scoring_s"] > 0


def test_workers_share_the_limit_and_a_killed_ones_requests_are_counted(
    ray_address: str, tmp_path: Path, fault_server: Any
) -> None:
    """Two workers get 2 + 2 of the limit of 4 (each alone would send up to 8: two blocks of 4
    records). Once both hold 2 requests at the server (records from 20 on are held) and have
    reported them, one is killed: Ray starts another, the records whose rows had not come back
    are sent again, every row is written once, and the run's request count is the server's,
    the dead worker's requests included."""
    fault_server.reply(RELEVANT).forever()
    fault_server.hold(lambda body: bool(body) and _asked(body) >= 20)
    data = _questions(40, tmp_path / "d.jsonl")
    killed: list[int] = []

    def kill_one() -> None:
        if fault_server.wait_until(lambda server: server.holding >= 4, timeout=120):
            time.sleep(1.0)  # the workers report requests sent every 0.05 s (worker.py)
            killed.append(_worker_pids()[0])
            os.kill(killed[0], signal.SIGKILL)
        fault_server.release()

    killer = threading.Thread(target=kill_one, daemon=True)
    killer.start()
    result = evaluate(
        data,
        ["conversation_relevancy"],
        "openai/test-model",
        base_url=fault_server.url,
        cache=False,
        max_concurrency=4,
        output=tmp_path / "out.jsonl",
        show_progress=False,
        engine="ray",
        ray_workers=2,
        ray_block_size=4,
    )
    killer.join()
    assert killed, "the workers never held 4 requests"
    with pytest.raises(ProcessLookupError):
        os.kill(killed[0], 0)  # that worker is gone; Ray started another
    rows = _rows(tmp_path / "out.jsonl")
    assert [r["index"] for r in rows] == list(range(40))
    assert all(r["scores"]["conversation_relevancy"] == 1.0 and not r["errors"] for r in rows)
    assert result.summary()["conversation_relevancy"]["scored"] == 40
    asked = Counter(_asked(b) for b in fault_server.bodies if b)
    assert set(asked) == set(range(40)) and sum(asked.values()) > 40  # some asked again
    assert {i for i, n in asked.items() if n > 1} <= set(range(20, 40))  # only rows not back
    assert {r["index"]: r["usage"]["requests"] for r in rows} == dict(asked)
    assert result.usage.requests == len(fault_server.bodies) == sum(asked.values())
    engine = result.meta["engine"]  # in Python too: start-up apart from scoring
    assert engine["workers"] == 2 and engine["startup_s"] > 0 and engine["scoring_s"] > 0
    assert fault_server.peak <= 4


#: Records the server holds unanswered in the killed runs below: blocks of 4 from record 16 on.
HELD_FROM = 16


def _start_ray_run(data: Path, out: Path, server: Any, address: str) -> subprocess.Popen[bytes]:
    """`convoeval run --engine ray` on 2 workers in blocks of 4, with every request from record
    `HELD_FROM` on held by the server: waited on until the 16 rows before are written, so the
    run is mid-way, and stays so, whatever the load. (A worker scores its blocks in the order
    they came and its requests queue for its slot in order, so no held request stands before
    an earlier record's.)"""
    server.hold(lambda body: bool(body) and _asked(body) >= HELD_FROM)
    command = [
        sys.executable, "-m", "convoeval.cli", "run", str(data), "-m", "conversation_relevancy",
        "--judge", "openai/test-model", "--base-url", server.url, "--no-cache",
        "--concurrency", "2", "-o", str(out), "-q",
        "--engine", "ray", "--ray-address", address, "--ray-workers", "2",
        "--ray-block-size", "4",
    ]  # fmt: skip
    process = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and process.poll() is None:
        if out.exists() and out.read_bytes().count(b"\n") >= HELD_FROM:
            break
        time.sleep(0.05)
    assert process.poll() is None, "the held run ended"
    assert out.read_bytes().count(b"\n") == HELD_FROM, "the run never wrote its first rows"
    return process


def _resume(data: Path, out: Path, url: str, workers: int) -> Any:
    """The same run resumed through `evaluate` on the Ray engine."""
    return evaluate(
        data,
        ["conversation_relevancy"],
        "openai/test-model",
        base_url=url,
        cache=False,
        max_concurrency=2,
        output=out,
        show_progress=False,
        engine="ray",
        ray_workers=workers,
    )


def test_a_killed_ray_run_resumes_without_asking_again_for_written_rows(
    ray_address: str, tmp_path: Path, fault_server: Any
) -> None:
    fault_server.reply(RELEVANT).forever()
    data = _questions(60, tmp_path / "d.jsonl")
    out = tmp_path / "out.jsonl"
    process = _start_ray_run(data, out, fault_server, ray_address)
    process.kill()
    _, stderr = process.communicate()
    assert process.returncode == -signal.SIGKILL, stderr.decode()
    complete = out.read_bytes().split(b"\n")[:-1]  # a partial last row is cut off on resume
    written = {json.loads(line)["index"] for line in complete}
    assert written == set(range(HELD_FROM))
    fault_server.release()
    before = len(fault_server.bodies)
    result = _resume(data, out, fault_server.url, workers=2)
    again = {_asked(b) for b in fault_server.bodies[before:] if b}
    assert not again & written
    assert again | written == set(range(60))
    assert [r["index"] for r in _rows(out)] == list(range(60))
    assert result.summary()["conversation_relevancy"]["scored"] == 60


def test_a_run_that_loses_every_worker_stops_keeps_its_rows_and_resumes(
    ray_address: str, tmp_path: Path, fault_server: Any
) -> None:
    """Once 16 rows are written, every Ray worker process is killed as soon as it appears (the
    workers and each of Ray's 3 restarts) until the command ends: it exits 130 with the engine's
    error and no traceback, the rows written before are kept, and a rerun writes the rest
    without asking again for a written row."""
    fault_server.reply(RELEVANT).forever()
    data = _questions(24, tmp_path / "d.jsonl")
    out = tmp_path / "out.jsonl"
    process = _start_ray_run(data, out, fault_server, ray_address)
    deadline = time.monotonic() + 120
    killed: set[int] = set()
    while time.monotonic() < deadline and process.poll() is None:
        for pid in set(_worker_pids()) - killed:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, signal.SIGKILL)
            killed.add(pid)
        with contextlib.suppress(subprocess.TimeoutExpired):
            process.wait(0.01)
    if process.poll() is None:
        process.kill()
    _, raw = process.communicate()
    stderr = raw.decode()
    assert process.returncode == 130, stderr  # stopped part-way, like an interrupted run
    said = [line for line in stderr.splitlines() if line.startswith("error: ")]
    assert len(said) == 1 and said[0].startswith("error: every Ray worker died (3 restarts each)")
    assert said[0].endswith("Every row before them is written: run again to resume"), stderr
    assert "Traceback" not in stderr and "never" not in stderr  # no 'never awaited/retrieved'
    assert len(killed) >= 2 * 4  # each worker and its 3 restarts
    rows = _rows(out)
    assert [r["index"] for r in rows] == list(range(HELD_FROM))
    assert all(r["scores"]["conversation_relevancy"] == 1.0 and not r["errors"] for r in rows)

    fault_server.release()  # nothing is killed now
    before = len(fault_server.bodies)
    result = _resume(data, out, fault_server.url, workers=1)
    again = {_asked(b) for b in fault_server.bodies[before:] if b}
    assert again == set(range(len(rows), 24))  # nothing written is asked again
    assert [r["index"] for r in _rows(out)] == list(range(24))
    assert result.summary()["conversation_relevancy"]["scored"] == 24
