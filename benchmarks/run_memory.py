"""Memory benchmark of `convoeval run`: peak RSS of a run over many conversations.

It writes N tool-calling conversations (default 100,000) to a temporary JSONL file, runs
`convoeval run` on it with ToolCallAccuracy and ToolCallF1 (no judge) in a child process, and
reports the child's peak RSS (resource.getrusage), the time taken and the rows written.
Target: 100,000 conversations under 1 GiB. Not a test: run it by hand,
`python benchmarks/run_memory.py [--records N]`.
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

TARGET_BYTES = 1 << 30


def _record(i: int) -> dict[str, object]:
    """One conversation: a question, a tool call (sometimes wrong), the tool's answer, a reply."""
    n = i % 97
    wrong = i % 5 == 0
    return {
        "id": f"conv-{i}",
        "user_input": [
            {"type": "human", "content": f"Where is my order {i}? It was due on day {n}."},
            {
                "type": "ai",
                "content": "Let me check.",
                "tool_calls": [
                    {"name": "get_order", "args": {"order_id": str(i), "detail": n % 2 == 0}}
                ],
            },
            {"type": "tool", "content": json.dumps({"order_id": str(i), "status": "shipped"})},
            {"type": "ai", "content": f"Order {i} has shipped and should arrive in {n} days."},
            {"type": "human", "content": "Thanks!"},
            {"type": "ai", "content": "You are welcome."},
        ],
        "reference_tool_calls": [
            {"name": "get_order", "args": {"order_id": str(i), "detail": wrong != (n % 2 == 0)}},
        ],
    }


def main() -> int:
    """Generate the data, run the command, print the numbers; exit 1 if over the target."""
    from _machine import print_machine

    print_machine()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="convoeval-bench-") as tmp:
        data = Path(tmp) / "data.jsonl"
        started = time.perf_counter()
        with data.open("w", encoding="utf-8") as handle:
            for i in range(args.records):
                handle.write(json.dumps(_record(i)) + "\n")
        print(
            f"wrote {args.records} conversations ({data.stat().st_size / 1e6:.1f} MB) "
            f"in {time.perf_counter() - started:.1f} s"
        )
        out = Path(tmp) / "results.jsonl"
        command = [
            sys.executable, "-m", "convoeval.cli", "run", str(data),
            "-m", "tool_call_accuracy", "-m", "tool_call_f1", "-o", str(out),
        ]  # fmt: skip
        started = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True)
        elapsed = time.perf_counter() - started
        peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # KiB on Linux
        if done.returncode != 0:
            print(done.stdout, done.stderr, sep="\n")
            print(f"convoeval run failed with exit code {done.returncode}")
            return 1
        with out.open("rb") as handle:
            rows = sum(1 for _ in handle)
        print(done.stdout.rstrip())
        peak = peak_kib * 1024
        print(
            f"records: {args.records}; rows written: {rows}; results file "
            f"{out.stat().st_size / 1e6:.1f} MB"
        )
        print(f"time: {elapsed:.1f} s ({args.records / elapsed:.0f} records/s)")
        print(
            f"peak RSS of `convoeval run`: {peak / 2**20:.1f} MiB "
            f"(target < {TARGET_BYTES / 2**20:.0f} MiB)"
        )
        ok = rows == args.records and peak < TARGET_BYTES
        print("OK" if ok else "OVER TARGET or rows missing")
        return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
