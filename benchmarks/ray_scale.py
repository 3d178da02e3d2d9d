"""The Ray engine on this machine: offline relevancy with 1 and 2 local workers, and a 100,000-
conversation tool-metric run through Ray (time and the driver's peak memory).

Usage: python benchmarks/ray_scale.py [--conversations N] [--records M] [--skip-relevancy |
--skip-tools] [--block-size B]

Relevancy: a local Ray runtime (2 CPUs, 127.0.0.1, no dashboard, no usage stats) is started in
this process; N seeded conversations (`_workload.py`, the same kind as speed.py's) are scored by
`evaluate(..., ["conversation_relevancy"], judge="offline", engine="ray", ray_workers=W)` for W =
1 and 2. Each worker is one Ray actor on one CPU with its own offline judge (model loaded once
per worker, one onnxruntime thread). Reported per W: the whole run (workers starting and loading
the model included) and the steady rate, from the first row written to the last.
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
        self.tick = os.sysconf("SC_CLK_TCK")
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
                fields = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            except OSError:
                continue
            self.seen[int(entry.name)] = (int(fields[11]) + int(fields[12])) / self.tick

    @property
    def seconds(self) -> float:
        return sum(cpu - self.before.get(pid, 0.0) for pid, cpu in self.seen.items())


def relevancy(n: int, block: int | None) -> list[dict[str, Any]]:
    """Offline relevancy through Ray with 1 and 2 workers."""
    os.environ["RAY_USAGE_STATS_ENABLED"] = "0"
    os.environ["RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER"] = "0"  # one machine: 127.0.0.1 only
    import ray

    from convoeval import evaluate

    ray.init(
        num_cpus=2, include_dashboard=False, log_to_driver=False, logging_level=logging.WARNING
    )
    rows = conversations(n, tools=True)
    figures = []
    try:
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
            steady = clock.steady()
            figures.append(
                {
                    "workers": workers,
                    "conversations": n,
                    "scored": summary["scored"],
                    "failed": summary["failed"],
                    "wall_s": round(wall, 1),
                    "conv_per_s": round(n / wall, 1),
                    "steady_conv_per_s": round(steady, 1),
                    "worker_cpu_ms_per_conv": round(1000 * cpu.seconds / n, 1),
                    "driver_cpu_ms_per_conv": round(1000 * driver / n, 1),
                    "load": os.getloadavg()[0],
                }
            )
            print(json.dumps(figures[-1]), flush=True)
    finally:
        ray.shutdown()
    one, two = figures
    print(
        f"speed-up 2 workers / 1: {two['conv_per_s'] / one['conv_per_s']:.2f}x whole run, "
        f"{two['steady_conv_per_s'] / one['steady_conv_per_s']:.2f}x steady (goal: 1.8x)"
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
    parser.add_argument("--conversations", type=int, default=400)
    parser.add_argument("--records", type=int, default=100_000)
    parser.add_argument("--block-size", type=int, default=None)
    parser.add_argument("--skip-relevancy", action="store_true")
    parser.add_argument("--skip-tools", action="store_true")
    args = parser.parse_args()
    print(f"load average at start: {os.getloadavg()}")
    if not args.skip_relevancy:
        relevancy(args.conversations, args.block_size)
    if not args.skip_tools:
        tools(args.records, args.block_size)
    print(f"load average at end: {os.getloadavg()}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
