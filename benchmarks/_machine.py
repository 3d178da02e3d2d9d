"""What a figure was measured on, printed by every benchmark before its figures (issue 35): the
commit (and whether the tree had changes), the CPU model and count, the thread settings that
change speed (onnxruntime's, numpy's BLAS and OpenMP variables), and the load average, so two
figures are only compared when they were measured alike."""

from __future__ import annotations

import atexit
import os
import platform
import subprocess
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
#: Environment variables that change how many threads the numeric libraries use.
THREAD_VARIABLES = (
    "OMP_NUM_THREADS",
    "OPENBLAS_NUM_THREADS",
    "MKL_NUM_THREADS",
    "OPENBLAS_CORETYPE",
    "RAY_NUM_CPUS",
)


def commit() -> str:
    """`git describe`-like: the short commit, `+changes` when the tree differs from it."""
    try:
        head = subprocess.run(
            ["git", "rev-parse", "--short", "HEAD"], cwd=ROOT, capture_output=True, text=True
        ).stdout.strip()
        dirty = subprocess.run(
            ["git", "status", "--porcelain", "--untracked-files=no"],
            cwd=ROOT,
            capture_output=True,
            text=True,
        ).stdout.strip()
    except OSError:
        return "unknown (no git)"
    return (head or "unknown") + ("+changes" if dirty else "")


def cpu_model() -> str:
    """The CPU's model name from /proc/cpuinfo (Linux), else the platform's processor."""
    try:
        for line in Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or "unknown"


def threads() -> str:
    """The thread settings in force: the variables that are set, and the offline embedder's."""
    given = [f"{name}={os.environ[name]}" for name in THREAD_VARIABLES if name in os.environ]
    from convoeval.judges.offline.embedder import Embedder

    embedder = Embedder.__init__.__kwdefaults__ or {}
    given.append(f"embedder threads={embedder.get('threads', '?')} (1 onnxruntime thread per run)")
    return ", ".join(given)


def load() -> str:
    """The 1, 5 and 15 minute load averages."""
    one, five, fifteen = os.getloadavg()
    return f"{one:.2f} {five:.2f} {fifteen:.2f}"


def describe() -> str:
    """One block of `# machine.KEY: value` lines to print before a benchmark's figures."""
    lines = {
        "commit": commit(),
        "cpu": f"{cpu_model()} x {os.cpu_count()}",
        "threads": threads(),
        "load": load(),
    }
    return "\n".join(f"# machine.{key}: {value}" for key, value in lines.items())


def cpu_seconds(stat: str | Path) -> float:
    """CPU seconds (user + system) so far of the process or thread whose /proc `stat` file this
    is (Linux only; OSError when it is gone)."""
    with open(stat) as handle:
        fields = handle.read().rsplit(")", 1)[1].split()  # after the name, which may hold spaces
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def print_machine() -> None:
    """Print `describe()` now and the load average again when the benchmark ends (a machine
    that got busy during the run shows there). Call it first in a benchmark's main."""
    print(describe(), flush=True)
    atexit.register(lambda: print(f"# machine.load_after: {load()}", flush=True))


def machine_ticks() -> tuple[int, int] | None:
    """(idle, all) CPU ticks of the whole machine so far, from /proc/stat; None elsewhere."""
    try:
        with open("/proc/stat") as handle:
            ticks = [int(x) for x in handle.readline().split()[1:9]]  # user .. steal
    except (OSError, ValueError):
        return None
    return ticks[3], sum(ticks)


def idle_between(before: tuple[int, int] | None, after: tuple[int, int] | None) -> float | None:
    """Cores the machine left idle on average between two `machine_ticks` readings."""
    if before is None or after is None or after[1] == before[1]:
        return None
    return (after[0] - before[0]) / (after[1] - before[1]) * (os.cpu_count() or 1)
