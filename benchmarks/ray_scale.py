"""The Ray engine on this machine: Ray with 1 worker against a local run on the mock judge,
offline relevancy with 1 and 2 local workers, and a 100,000-conversation tool-metric run through
Ray (time and the driver's peak memory).

Usage: python benchmarks/ray_scale.py [--mock-conversations K] [--concurrency C] [--reps R]
[--conversations N] [--records M] [--skip-mock] [--skip-relevancy] [--skip-tools]
[--block-size B]

A local Ray runtime (2 CPUs, 127.0.0.1, no dashboard, no usage stats) is started once in this
process (its start-up is printed apart) and every Ray run connects to it, as a run given
`--ray-address` does; each run's own start-up (workers started, judges built) is the sidecar's
`engine.startup_s`, its scoring time `engine.scoring_s`.
Mock: K seeded conversations (`_workload.py`) scored with topic adherence by an OpenAI-compatible
mock judge in its own process (`_fake_openai_server.py`, 0.2 s per answer) at concurrency C,
alternately in this process (`engine="local"`) and on 1 Ray worker, R times each; reported: wall,
scoring time, Ray's scoring time / the local wall, the requests the server counted against the
run's count, and the rows (each index once).
Relevancy: N seeded conversations are scored by `evaluate(..., ["conversation_relevancy"],
judge="offline", engine="ray", ray_workers=W)` for W = 1 and 2, alternately, R times each. Each
worker is one Ray actor on one CPU with its own offline judge (model loaded once per worker, one
onnxruntime thread: Ray sets OMP_NUM_THREADS=1). Reported per run: the whole run, the scoring
rate (start-up excluded) and the steady rate, from the first row written to the last.
Tools: M conversations (run_memory.py's records) are written to a temporary JSONL file and
`convoeval run DATA -m tool_call_accuracy -m tool_call_f1 --engine ray --ray-workers 2` runs in a
child process that starts its own local Ray runtime; its time and its peak RSS (VmHWM, read
from /proc while it runs: the driver only, not the Ray processes) are reported.
"""

from __future__ import annotations

import argparse
import json
import logging
import os
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))
sys.path.insert(0, str(HERE))

from _machine import cpu_seconds  # noqa: E402
from _workload import conversations  # noqa: E402
from run_memory import _record  # noqa: E402


class _Clock:
    """Progress that notes when each row was written."""

    def __init__(self) -> None:
        self.times: list[float] = []

    def start(self, total: int, done: int) -> None:
        pass

    def advance(self) -> None:
        self.times.append(time.perf_counter())

    def close(self) -> None:
        pass

    def steady(self) -> float:
        """Rows per second from the first write to the last (the first batch not counted)."""
        first = self.times[0]
        later = [t for t in self.times if t - first > 0.05]
        return len(later) / max(self.times[-1] - first, 1e-9)


class _WorkerCpu:
    """CPU seconds used by the Ray worker processes (`ray::Worker...`) during a run, read from
    /proc every 0.2 s (the last reading of each process counts: they exit at the end); a worker
    process of an earlier run still exiting counts only what it used after the start."""

    def __init__(self) -> None:
        self.seen: dict[int, float] = {}
        self.stop = threading.Event()
        self.thread = threading.Thread(target=self._watch, daemon=True)
        self.before: dict[int, float] = {}

    def __enter__(self) -> _WorkerCpu:
        self._read()
        self.before, self.seen = self.seen, {}
        self.thread.start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.stop.set()
        self.thread.join()

    def _watch(self) -> None:
        while not self.stop.is_set():
            self._read()
            self.stop.wait(0.2)

    def _read(self) -> None:
        for entry in Path("/proc").iterdir():
            if not entry.name.isdigit():
                continue
            try:
                if not (entry / "cmdline").read_bytes().startswith(b"ray::Worker"):
                    continue
                self.seen[int(entry.name)] = cpu_seconds(entry / "stat")
            except OSError:
                continue

    @property
    def seconds(self) -> float:
        return sum(cpu - self.before.get(pid, 0.0) for pid, cpu in self.seen.items())


def start_ray() -> None:
    """The local Ray runtime every Ray run of this benchmark connects to; its start-up printed."""
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"  # one machine: 127.0.0.1 only
    import ray

    started = time.perf_counter()
    ray.init(
        num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level=logging.WARNING
    )
    print(json.dumps({"ray_runtime_startup_s": round(time.perf_counter() - started, 1)}))


def _written(path: Path) -> tuple[int, int]:
    """Rows in a results file and how many distinct record indexes they hold."""
    with path.open(encoding="utf-8") as handle:
        indexes = [json.loads(line)["index"] for line in handle]
    return len(indexes), len(set(indexes))


def mock(n: int, concurrency: int, reps: int, block: int | None) -> list[dict[str, Any]]:
    """Topic adherence on the mock judge: local and 1 Ray worker, alternately."""
    from _fake_openai_server import ServerProcess

    from convoeval import evaluate

    rows = conversations(n, tools=True)
    figures: list[dict[str, Any]] = []
    with ServerProcess(delay=0.2) as server:
        for rep in range(reps):
            for engine in ("local", "ray"):
                ray = {"engine": "ray", "ray_workers": 1, "ray_block_size": block}
                options: dict[str, Any] = ray if engine == "ray" else {}
                with (
                    tempfile.TemporaryDirectory(prefix="convoeval-ray-") as tmp,
                    _WorkerCpu() as cpu,
                ):
                    out = Path(tmp) / "results.jsonl"
                    server.reset()
                    started, driver = time.perf_counter(), time.process_time()
                    result = evaluate(
                        rows,
                        ["topic_adherence"],
                        judge="openai/mock",
                        base_url=server.url,
                        api_key="mock",
                        cache=False,
                        max_concurrency=concurrency,
                        output=out,
                        show_progress=False,
                        **options,
                    )
                    wall, driver = time.perf_counter() - started, time.process_time() - driver
                    written, distinct = _written(out)
                sent = server.reset()
                ran = result.meta.get("engine") or {}
                figures.append(
                    {
                        "rep": rep + 1,
                        "engine": engine,
                        "conversations": n,
                        "scored": result.summary()["topic_adherence"]["scored"],
                        "rows": written,
                        "distinct_rows": distinct,
                        "wall_s": round(wall, 2),
                        "startup_s": ran.get("startup_s", 0.0),
                        "scoring_s": ran.get("scoring_s", round(wall, 2)),
                        "ideal_s": round(sent.requests * 0.2 / concurrency, 2),
                        "server_requests": sent.requests,
                        "run_requests": result.usage.requests,
                        "peak_in_flight": sent.peak_concurrency,
                        "driver_cpu_s": round(driver, 2),
                        "worker_cpu_s": round(cpu.seconds, 2),
                        "load": round(os.getloadavg()[0], 2),
                    }
                )
                print(json.dumps(figures[-1]), flush=True)
            local, remote = figures[-2:]
            print(
                f"rep {rep + 1}: Ray 1 worker scoring / local wall "
                f"{remote['scoring_s'] / local['wall_s']:.2f}x (goal <= 1.15x), whole Ray wall / "
                f"local wall {remote['wall_s'] / local['wall_s']:.2f}x; local wall / ideal "
                f"{local['wall_s'] / local['ideal_s']:.2f}x",
                flush=True,
            )
    return figures


def relevancy(n: int, block: int | None, reps: int) -> list[dict[str, Any]]:
    """Offline relevancy through Ray with 1 and 2 workers, alternately."""
    from convoeval import evaluate

    rows = conversations(n, tools=True)
    figures = []
    for rep in range(reps):
        for workers in (1, 2):
            clock = _Clock()
            with tempfile.TemporaryDirectory(prefix="convoeval-ray-") as tmp, _WorkerCpu() as cpu:
                started, driver = time.perf_counter(), time.process_time()
                result = evaluate(
                    rows,
                    ["conversation_relevancy"],
                    judge="offline",
                    output=Path(tmp) / "results.jsonl",
                    progress=clock,
                    engine="ray",
                    ray_workers=workers,
                    ray_block_size=block,
                )
                wall, driver = time.perf_counter() - started, time.process_time() - driver
            summary = result.summary()["conversation_relevancy"]
            ran = result.meta.get("engine") or {}
            figures.append(
                {
                    "rep": rep + 1,
                    "workers": workers,
                    "conversations": n,
                    "scored": summary["scored"],
                    "failed": summary["failed"],
                    "wall_s": round(wall, 1),
                    "startup_s": ran.get("startup_s"),
                    "scoring_s": ran.get("scoring_s"),
                    "conv_per_s": round(n / wall, 1),
                    "scoring_conv_per_s": round(n / ran["scoring_s"], 1),
                    "steady_conv_per_s": round(clock.steady(), 1),
                    "worker_cpu_ms_per_conv": round(1000 * cpu.seconds / n, 1),
                    "driver_cpu_ms_per_conv": round(1000 * driver / n, 1),
                    "load": round(os.getloadavg()[0], 2),
                }
            )
            print(json.dumps(figures[-1]), flush=True)
        one, two = figures[-2:]
        print(
            f"rep {rep + 1}: speed-up 2 workers / 1: "
            f"{two['scoring_conv_per_s'] / one['scoring_conv_per_s']:.2f}x scoring (start-up "
            f"excluded; goal >= 1.7x), {two['conv_per_s'] / one['conv_per_s']:.2f}x whole run, "
            f"{two['steady_conv_per_s'] / one['steady_conv_per_s']:.2f}x steady",
            flush=True,
        )
    return figures


def _peak_kib(pid: int, stop: threading.Event, seen: list[int]) -> None:
    """Poll the child's VmHWM (its peak RSS so far) until it exits."""
    while not stop.is_set():
        try:
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            return
        for line in status.splitlines():
            if line.startswith("VmHWM:"):
                seen.append(int(line.split()[1]))
        stop.wait(0.2)


def tools(records: int, block: int | None) -> dict[str, Any]:
    """`convoeval run --engine ray` over `records` tool-calling conversations."""
    with tempfile.TemporaryDirectory(prefix="convoeval-ray-") as tmp:
        data = Path(tmp) / "data.jsonl"
        with data.open("w", encoding="utf-8") as handle:
            for i in range(records):
                handle.write(json.dumps(_record(i)) + "\n")
        out = Path(tmp) / "results.jsonl"
        command = [
            sys.executable, "-m", "convoeval.cli", "run", str(data),
            "-m", "tool_call_accuracy", "-m", "tool_call_f1", "-o", str(out), "-q",
            "--engine", "ray", "--ray-workers", "2",
        ]  # fmt: skip
        if block is not None:
            command += ["--ray-block-size", str(block)]
        env = {**os.environ, "RAY_USAGE_STATS_ENABLED": "0"}
        env["PYTHONPATH"] = os.pathsep.join(
            filter(None, [str(HERE.parent / "src"), env.get("PYTHONPATH")])
        )
        started = time.perf_counter()
        child = subprocess.Popen(
            command, env=env, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True
        )
        stop, seen = threading.Event(), []
        watcher = threading.Thread(target=_peak_kib, args=(child.pid, stop, seen), daemon=True)
        watcher.start()
        stdout, stderr = child.communicate()
        wall = time.perf_counter() - started
        stop.set()
        watcher.join()
        if child.returncode != 0:
            print(stdout, stderr, sep="\n")
            raise SystemExit(f"convoeval run failed with exit code {child.returncode}")
        with out.open("rb") as handle:
            rows = sum(1 for _ in handle)
    figures = {
        "records": records,
        "rows_written": rows,
        "wall_s": round(wall, 1),
        "records_per_s": round(records / wall),
        "driver_peak_rss_mib": round(max(seen, default=0) / 1024, 1),
        "load": os.getloadavg()[0],
    }
    print(json.dumps(figures), flush=True)
    return figures


def main() -> int:
    from _machine import print_machine

    print_machine()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--mock-conversations", type=int, default=1000)
    parser.add_argument("--concurrency", type=int, default=64)
    parser.add_argument("--reps", type=int, default=2)
    parser.add_argument("--conversations", type=int, default=800)
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--block-size", type=int, default=None)
    parser.add_argument("--skip-mock", action="store_true")
    parser.add_argument("--skip-relevancy", action="store_true")
    parser.add_argument("--skip-tools", action="store_true")
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()}")
    if not (args.skip_mock and args.skip_relevancy):
        start_ray()
    if not args.skip_mock:
        mock(args.mock_conversations, args.concurrency, args.reps, args.block_size)
    if not args.skip_relevancy:
        relevancy(args.conversations, args.block_size, args.reps)
    if not args.skip_tools:
        tools(args.records, args.block_size)
    print(f"load average at end: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
