"""Where an offline run's idle cores go: the model beside the steps' Python code, or apart from it.

Usage: python benchmarks/model_process.py [--metric topic_adherence] [--reps 3]
[--conversations 500]

An experiment, not what ships. The offline judge runs its model in two threads of the process
that runs the steps' Python code, so after each model run a thread waits for the GIL to come back
(benchmarks/speed.py prints that wait and the idle cores). This script times the same offline run
three ways, each in a fresh process, taking turns so that the host's drift falls on all alike:

- `shipped`: as convoeval runs it;
- `switch_0.5ms`: with Python's thread switch interval at 0.5 ms instead of 5 ms, so a waiting
  thread gets the GIL sooner;
- `model_process`: every model run goes over a pipe to a spawned process that holds the model
  (one pipe and one thread there per runner thread of the embedder), so no step thread ever
  holds the GIL that the model's threads need. Its CPU is counted with the run's.

It prints conversations per second, CPU per conversation (the model process's included) and the
cores the machine left idle during the timed part, per run and as medians.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import multiprocessing
import statistics
import subprocess
import sys
import threading
import time
from multiprocessing.connection import Connection
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))
sys.path.insert(0, str(HERE))

from _machine import cpu_seconds, idle_between, machine_ticks  # noqa: E402
from _workload import conversations  # noqa: E402
from speed import WARMUP  # noqa: E402

ARMS = ("shipped", "switch_0.5ms", "model_process")


def serve_model(conns: list[Connection]) -> None:
    """The model process: a thread per pipe runs each padded run it receives (ids and mask) and
    sends back the vectors and the run's CPU and wall nanoseconds."""
    import numpy as np

    from convoeval.judges.offline.embedder import Embedder

    embedder = Embedder(threads=len(conns), cache_size=0)
    embedder.load()

    def serve(conn: Connection) -> None:
        while (shape := conn.recv()) is not None:
            data = conn.recv_bytes()
            ids = np.frombuffer(data, dtype=np.int64).reshape(2, *shape)
            vectors, cpu, wall = embedder._forward(ids[0], ids[1])
            conn.send((cpu, wall))
            conn.send_bytes(vectors.tobytes())

    threads = [threading.Thread(target=serve, args=(conn,)) for conn in conns]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()


def run_arm(arm: str, metric: str, n: int) -> dict[str, Any]:
    """Score n conversations offline the way `arm` says, in this process; return the figures."""
    import numpy as np

    from convoeval import aevaluate
    from convoeval.judges.offline import embedder as embedding

    helper = None
    if arm == "switch_0.5ms":
        sys.setswitchinterval(0.0005)
    elif arm == "model_process":
        context = multiprocessing.get_context("spawn")
        pipes = [context.Pipe() for _ in range(2)]  # one per runner thread of the embedder
        helper = context.Process(target=serve_model, args=([t for _, t in pipes],), daemon=True)
        helper.start()
        free = [mine for mine, _ in pipes]
        lock = threading.Lock()

        def over_the_pipe(self: Any, ids: Any, mask: Any) -> Any:
            with lock:
                mine = free.pop()
            try:
                mine.send(ids.shape)
                mine.send_bytes(np.stack([ids, mask]).tobytes())
                cpu, wall = mine.recv()
                data = mine.recv_bytes()
            finally:
                with lock:
                    free.append(mine)
            vectors = np.frombuffer(data, dtype=np.float32).reshape(len(ids), embedding.DIM)
            return vectors, cpu, wall

        embedding.Embedder._forward = over_the_pipe  # type: ignore[method-assign]
    rows = conversations(n + WARMUP, tools=True)
    asyncio.run(aevaluate(rows[:WARMUP], [metric], judge="offline", show_progress=False))
    ticks = machine_ticks()
    helper_cpu = cpu_seconds(f"/proc/{helper.pid}/stat") if helper and helper.pid else 0.0
    started, cpu = time.perf_counter(), time.process_time()
    result = asyncio.run(aevaluate(rows[WARMUP:], [metric], judge="offline", show_progress=False))
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    if helper is not None and helper.pid:
        cpu += cpu_seconds(f"/proc/{helper.pid}/stat") - helper_cpu
        for mine, _ in pipes:
            mine.send(None)
        helper.join(10)
    summary = result.summary()[metric]
    return {
        "arm": arm,
        "per_second": n / wall,
        "cpu_ms_per_conversation": 1000 * cpu / n,
        "idle_cores": idle_between(ticks, machine_ticks()),
        "scored": summary["scored"],
        "failed": summary["failed"],
    }


def main() -> int:
    """Take turns over the arms, each run in a fresh process; print each run and the medians."""
    from _machine import print_machine

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--metric", default="topic_adherence")
    parser.add_argument("--reps", type=int, default=3)
    parser.add_argument("--conversations", type=int, default=500)
    parser.add_argument("--arm", choices=ARMS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.arm:
        print(json.dumps(run_arm(args.arm, args.metric, args.conversations)))
        return 0
    print_machine()
    runs: dict[str, list[dict[str, Any]]] = {arm: [] for arm in ARMS}
    for rep in range(args.reps):
        for arm in ARMS:
            command = [sys.executable, __file__, "--arm", arm, "--metric", args.metric]
            command += ["--conversations", str(args.conversations)]
            done = subprocess.run(command, capture_output=True, text=True)
            if done.returncode != 0:
                print(done.stdout, done.stderr, sep="\n")
                return 1
            figures = json.loads(done.stdout.strip().splitlines()[-1])
            runs[arm].append(figures)
            idle = figures["idle_cores"]
            print(
                f"rep {rep + 1} {arm}: {figures['per_second']:.1f} conversations/s, "
                f"{figures['cpu_ms_per_conversation']:.2f} ms CPU per conversation, "
                f"idle cores {'n/a' if idle is None else f'{idle:.2f}'}, "
                f"scored {figures['scored']}, failed {figures['failed']}"
            )
    for arm, done_runs in runs.items():
        rate = statistics.median(r["per_second"] for r in done_runs)
        cpu = statistics.median(r["cpu_ms_per_conversation"] for r in done_runs)
        idles = [r["idle_cores"] for r in done_runs if r["idle_cores"] is not None]
        idle = f"{statistics.median(idles):.2f}" if idles else "n/a"
        print(f"{args.metric}.{arm}.median: {rate:.1f} conversations/s, {cpu:.2f} ms CPU per "
              f"conversation, idle cores {idle}")  # fmt: skip
    return 0 if all(r["failed"] == 0 for rs in runs.values() for r in rs) else 1


if __name__ == "__main__":
    raise SystemExit(main())
