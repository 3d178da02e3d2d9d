"""Memory benchmark of `convoeval validate`: peak RSS while checking a large JSONL file.

It writes N conversations (default 100,000; every 1,000th one breaks a tool-message rule) to a
temporary file, runs `convoeval validate` on it in a child process, and reports the child's peak
RSS, the time taken and how many invalid lines were reported (all of them must be).
Not a test: run it by hand, `python benchmarks/validate_memory.py [--records N]`.
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

from run_memory import _record

BROKEN = {"user_input": [{"type": "tool", "content": "orphan tool output"}]}


def main() -> int:
    """Generate the data, run the command, print the numbers; exit 1 if a line went unreported."""
    from _machine import print_machine

    print_machine()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=100_000)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory(prefix="convoeval-bench-") as tmp:
        data = Path(tmp) / "data.jsonl"
        with data.open("w", encoding="utf-8") as handle:
            for i in range(args.records):
                handle.write(json.dumps(BROKEN if i % 1000 == 7 else _record(i)) + "\n")
        size = data.stat().st_size / 1e6
        command = [sys.executable, "-m", "convoeval.cli", "validate", str(data)]
        command += ["--max-errors", "0"]
        started = time.perf_counter()
        done = subprocess.run(command, capture_output=True, text=True)
        elapsed = time.perf_counter() - started
        peak_kib = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss  # KiB on Linux
    expected = len(range(7, args.records, 1000))
    print(f"file: {args.records} records, {size:.1f} MB")
    print(f"output: {done.stdout.strip()} (exit {done.returncode})")
    print(f"time: {elapsed:.2f} s ({args.records / elapsed:.0f} records/s)")
    print(f"peak RSS of `convoeval validate`: {peak_kib / 1024:.1f} MiB")
    ok = done.stdout.strip() == f"{args.records} records, {expected} invalid"
    print("OK: every invalid line reported" if ok else "MISMATCH in the invalid count")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
