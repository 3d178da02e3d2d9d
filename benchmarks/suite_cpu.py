"""What the test suite costs: wall time, CPU seconds (user+sys of pytest and every process it
started, xdist workers and CLI children included), load average, and the slowest tests.

On a shared machine CPU seconds are the fair figure: wall time stretches with other load, CPU
time much less. Run by hand from the repository root:

    python benchmarks/suite_cpu.py                       # the whole suite, as CI runs it
    python benchmarks/suite_cpu.py tests/cli -n 0        # a selection, extra pytest arguments
"""

from __future__ import annotations

import argparse
import os
import re
import resource
import subprocess
import sys
import time

from _machine import ROOT, print_machine


def _children_cpu() -> tuple[float, float]:
    """User and system seconds of every finished child process so far."""
    usage = resource.getrusage(resource.RUSAGE_CHILDREN)
    return usage.ru_utime, usage.ru_stime


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--top", type=int, default=15, help="slowest tests to list")
    options, pytest_args = parser.parse_known_args()
    print_machine()
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src"), "CONVOEVAL_REQUIRE_SHARED_DATA": "1"}
    command = [sys.executable, "-m", "pytest", "-q", f"--durations={options.top}", *pytest_args]
    print(f"# command: {' '.join(command[1:])}", flush=True)
    before, started = _children_cpu(), time.monotonic()
    done = subprocess.run(command, cwd=ROOT, env=env, capture_output=True, text=True)
    wall, after = time.monotonic() - started, _children_cpu()
    user, system = after[0] - before[0], after[1] - before[1]
    cpu = user + system
    summary = [line for line in done.stdout.splitlines() if re.search(r"\d+ (passed|failed)", line)]
    durations = re.findall(r"^\d+\.\d+s (?:call|setup|teardown) .*$", done.stdout, re.MULTILINE)
    print(f"result: {summary[-1] if summary else done.stdout[-2000:]}")
    print(f"wall {wall:.1f} s, cpu {cpu:.1f} s (user {user:.1f} + sys {system:.1f})")
    print(f"cpu / wall {cpu / wall:.2f} (2 cores: at most 2)")
    print("slowest:")
    for line in durations[: options.top]:
        print(f"  {line}")
    if done.returncode not in (0, 5):
        print(done.stdout[-4000:], done.stderr[-2000:], sep="\n", file=sys.stderr)
    sys.exit(done.returncode)


if __name__ == "__main__":
    main()
