"""Offline judge speed and memory: conversations per second and peak RSS per metric.

Usage: python benchmarks/speed.py [--conversations N] [--metric NAME ...] [--stream-records M |
--no-stream]

Each offline-capable metric (TopicAdherenceScore, ConversationRelevancyMetric, ToolCallAccuracy,
ToolCallF1) runs in its own child process: it scores a few conversations first (model load and
warm-up, timed apart), then N seeded conversations (6 exchanges, tool calls, 3 reference topics)
through `aevaluate(..., judge="offline")`, and reports conversations per second (wall clock),
CPU seconds and its peak RSS (resource.getrusage, so one metric's memory never hides another's),
the CPU per conversation of each kind of thread (the event loop's, the offline steps', the
model runs' and threads no Python code started, such as a BLAS library's, from /proc), the
cores the whole machine left idle meanwhile (/proc/stat), and for the judge metrics what went to
the embedding model (`Embedder.counts()`: texts, tokens, padding, calls and runs, the runs' own
CPU time and the time they waited beyond it) and the floor: the texts the timed part
added to the cache, embedded again afterwards in the same process by a fresh embedder alone in
one call, one model run at a time, give the model's own CPU per text; texts embedded per
conversation times that is the least CPU a conversation can cost, and the CPU per conversation is
printed as a ratio to it, and to the model's CPU during the timed part itself (the machine's
speed can drift between the run and the floor measured after it; the second ratio cannot).
`--metric` (repeatable) runs only the metrics named; `--warmup 0` times a cold run (the model
load included); `--run-sizes 4,8,32` also measures the floor with model runs of those sizes.
Then, unless --no-stream, it runs benchmarks/run_memory.py: `convoeval run` over M generated
conversations (default 100,000) streaming to a results file, peak RSS target under 1 GiB.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

HERE = Path(__file__).resolve().parent
REPO = HERE.parent
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(HERE))

from _machine import cpu_seconds, idle_between, machine_ticks  # noqa: E402
from _workload import conversations  # noqa: E402

METRICS = ("topic_adherence", "conversation_relevancy", "tool_call_accuracy", "tool_call_f1")
WARMUP = 5


def child(metric: str, n: int, warmup: int = WARMUP, sizes: tuple[int, ...] = ()) -> dict[str, Any]:
    """Score in this process (the child) and return its figures."""
    from convoeval import aevaluate
    from convoeval.judges.offline.embedder import get_embedder

    rows = conversations(n + warmup, tools=True)
    with tempfile.TemporaryDirectory(prefix="convoeval-speed-") as tmp:
        out = Path(tmp) / "results.jsonl"
        started = time.perf_counter()
        if warmup:
            asyncio.run(aevaluate(rows[:warmup], [metric], judge="offline", show_progress=False))
        warmup_s = time.perf_counter() - started
        before, known = get_embedder().counts(), set(get_embedder().cached_texts())
        threads_before, machine_before = thread_cpu(), machine_ticks()
        started, cpu = time.perf_counter(), time.process_time()
        result = asyncio.run(
            aevaluate(rows[warmup:], [metric], judge="offline", show_progress=False, output=out)
        )
        wall, cpu = time.perf_counter() - started, time.process_time() - cpu
        threads = by_kind(threads_before, thread_cpu())
        idle_cores = idle_between(machine_before, machine_ticks())
    model = {k: v - before[k] for k, v in get_embedder().counts().items()}
    summary = result.summary()[metric]
    peak_kib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss  # KiB on Linux
    added = [t for t in get_embedder().cached_texts() if t not in known]
    run_vectors = get_embedder().embed(added)  # cache hits: the vectors the run computed
    return {
        "metric": metric,
        "conversations": n,
        "warmup_s": warmup_s,
        "wall_s": wall,
        "cpu_s": cpu,
        "per_second": n / wall,
        "peak_rss_mib": peak_kib / 1024,
        "scored": summary["scored"],
        "failed": summary["failed"],
        "mean": summary["mean"],
        "model": model,
        "thread_cpu_s": threads,
        "idle_cores": idle_cores,
        "floor": floor(added, run_vectors),
        "run_sizes": {size: floor(added, run_vectors, size) for size in sizes},
    }


def thread_cpu() -> dict[tuple[int, str], float]:
    """CPU seconds of each thread of this process so far, by (native id, kind): the thread's
    name without its number for threads Python started, else "not started by Python" (those of
    a native library: a BLAS pool, say). Linux only (/proc); empty elsewhere."""
    import os
    import threading

    names = {t.native_id: t.name.rstrip("_0123456789") for t in threading.enumerate()}
    found = {}
    for tid in os.listdir("/proc/self/task") if os.path.isdir("/proc/self/task") else []:
        try:
            seconds = cpu_seconds(f"/proc/self/task/{tid}/stat")
        except FileNotFoundError:  # the thread ended meanwhile
            continue
        found[(int(tid), names.get(int(tid), "not started by Python"))] = seconds
    return found


def by_kind(
    before: dict[tuple[int, str], float], after: dict[tuple[int, str], float]
) -> dict[str, float]:
    """CPU seconds spent between two `thread_cpu` readings, summed by kind of thread."""
    spent: dict[str, float] = {}
    for key, seconds in after.items():
        spent[key[1]] = spent.get(key[1], 0.0) + seconds - before.get(key, 0.0)
    return spent


def floor(texts: list[str], expected: Any, size: int | None = None) -> dict[str, Any]:
    """The model's own CPU per text on `texts`: a fresh embedder (runs of `size` texts, else the
    shipped size; one run at a time, no cache) embeds them in one call, twice; the cheaper pass
    counts. `same_vectors` says whether it gave exactly `expected` (the run's vectors)."""
    import numpy as np

    from convoeval.judges.offline.embedder import Embedder

    if not texts:
        return {"texts": 0, "cpu_ms_per_text": 0.0, "same_vectors": True}
    alone = Embedder(threads=1, cache_size=0, **({"batch_size": size} if size else {}))
    alone.load()
    passes, same = [], True
    for _ in range(2):
        spent = alone.counts()["run_cpu_ns"]
        same &= bool(np.array_equal(alone.embed(texts), expected))
        passes.append((alone.counts()["run_cpu_ns"] - spent) / 1e6 / len(texts))
    return {"texts": len(texts), "cpu_ms_per_text": min(passes), "same_vectors": same}


def model_figures(f: dict[str, Any]) -> list[str]:
    """The lines on what a child's timed part gave the embedding model (texts not already
    cached), and its CPU per conversation as a ratio to two costs of that model: the floor
    (measured after the run) and the model's CPU during the run itself. This machine's speed
    drifts by 10-20% within minutes, so the floor can be measured faster or slower than the run
    was; the second ratio compares the run with its own model work, under the same conditions."""
    m, model, count = f["metric"], f["model"], f["conversations"]
    if not model["texts"]:
        return []
    cpu = model["run_cpu_ns"] / 1e6
    # A run's wall time beyond its CPU: its thread waiting for the GIL to come back (held by
    # the steps' Python code) or for a core.
    waited = (model["run_wall_ns"] - model["run_cpu_ns"]) / 1e6 / count
    per_text = f["floor"]["cpu_ms_per_text"]
    least = per_text * model["texts"] / count
    spent = 1000 * f["cpu_s"] / count
    lines = [
        f"{m}.model_texts_per_conversation: {model['texts'] / count:.2f}",
        f"{m}.model_tokens_per_text: {model['tokens'] / model['texts']:.1f}",
        f"{m}.model_padding_share: {1 - model['tokens'] / model['padded_tokens']:.3f}",
        f"{m}.model_calls_runs: {model['calls']} / {model['runs']}",
        f"{m}.model_run_cpu_ms_per_conversation: {cpu / count:.2f}",
        f"{m}.model_run_cpu_ms_per_text: {cpu / model['texts']:.3f}",
        f"{m}.model_run_waiting_ms_per_conversation: {waited:.2f}",
        f"{m}.floor_texts_measured: {f['floor']['texts']}",
        f"{m}.floor_same_vectors_as_the_run: {f['floor']['same_vectors']}",
        f"{m}.floor_cpu_ms_per_text: {per_text:.3f}",
        f"{m}.floor_cpu_ms_per_conversation: {least:.2f}",
        f"{m}.cpu_per_conversation_vs_floor: {spent / least:.2f}x",
        f"{m}.cpu_per_conversation_vs_model_in_run: {spent / (cpu / count):.2f}x",
    ]
    for size, at in f["run_sizes"].items():
        lines.append(f"{m}.floor_cpu_ms_per_text.runs_of_{size}: {at['cpu_ms_per_text']:.3f}")
        lines.append(f"{m}.floor_same_vectors_as_the_run.runs_of_{size}: {at['same_vectors']}")
    return lines


def main() -> int:
    """Run every metric in a child process, then the streaming run; print figures and a table."""
    from _machine import print_machine

    print_machine()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=500)
    parser.add_argument("--stream-records", type=int, default=100_000)
    parser.add_argument("--no-stream", action="store_true", help="skip the run_memory.py part")
    parser.add_argument("--metric", action="append", choices=METRICS, help="only these metrics")
    parser.add_argument("--warmup", type=int, default=WARMUP, help="conversations before timing")
    parser.add_argument(
        "--run-sizes",
        default="",
        help="also the floor with model runs of these sizes, e.g. 4,8,32 (same texts, one run "
        "at a time)",
    )
    parser.add_argument("--child", choices=METRICS, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        sizes = tuple(int(x) for x in args.run_sizes.split(",") if x.strip())
        print(json.dumps(child(args.child, args.conversations, args.warmup, sizes)))
        return 0
    figures = []
    for metric in args.metric or METRICS:
        command = [sys.executable, __file__, "--child", metric]
        command += ["--conversations", str(args.conversations), "--warmup", str(args.warmup)]
        command += ["--run-sizes", args.run_sizes]
        done = subprocess.run(command, capture_output=True, text=True)
        if done.returncode != 0:
            print(done.stdout, done.stderr, sep="\n")
            return 1
        # The child's figures are its one JSON line (its machine block comes before it and the
        # load after it, as in every benchmark).
        line = next(x for x in reversed(done.stdout.splitlines()) if x.startswith("{"))
        figures.append(json.loads(line))
    for f in figures:
        m = f["metric"]
        print(f"{m}.conversations_per_second: {f['per_second']:.1f}")
        print(f"{m}.cpu_ms_per_conversation: {1000 * f['cpu_s'] / f['conversations']:.2f}")
        print(f"{m}.warmup_s: {f['warmup_s']:.2f}")
        print(f"{m}.peak_rss_mib: {f['peak_rss_mib']:.0f}")
        print(f"{m}.scored: {f['scored']}")
        print(f"{m}.failed: {f['failed']}")
        # Cores with nothing to run while the timed part ran (n/a off Linux, or when it took
        # less than one tick of /proc/stat's clock).
        idle = "n/a" if f["idle_cores"] is None else f"{f['idle_cores']:.2f}"
        print(f"{m}.machine_idle_cores: {idle}")
        for kind, seconds in sorted(f["thread_cpu_s"].items(), key=lambda kv: -kv[1]):
            per = 1000 * seconds / f["conversations"]
            print(f"{m}.thread_cpu_ms_per_conversation[{kind}]: {per:.2f}")
        for line in model_figures(f):
            print(line)
    print()
    print(
        f"{'metric':<24} {'conv/s':>8} {'cpu ms/conv':>12} {'warm-up s':>10} {'peak RSS MiB':>13}"
    )
    for f in figures:
        cpu_ms = 1000 * f["cpu_s"] / f["conversations"]
        print(
            f"{f['metric']:<24} {f['per_second']:>8.1f} {cpu_ms:>12.2f} {f['warmup_s']:>10.2f} "
            f"{f['peak_rss_mib']:>13.0f}"
        )
    ok = all(f["failed"] == 0 for f in figures)
    if not args.no_stream:
        print(f"\n# streaming run: benchmarks/run_memory.py --records {args.stream_records}")
        sys.stdout.flush()
        command = [sys.executable, str(HERE / "run_memory.py"), "--records"]
        ok &= subprocess.run([*command, str(args.stream_records)]).returncode == 0
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
