"""The fixed cost of a run (issue 35 §4), measured for overhead.py: command-line start-up, a warm
re-run of a finished run, and what one `evaluate()` adds to the time its requests take.

Every command runs in a process of its own, as a user runs it: `python -m convoeval.cli ...`
with this checkout's `src` first on the path and bytecode caching on (PYTHONDONTWRITEBYTECODE
removed), so after the first, untimed run each start reads compiled modules, as an installed
package does. Wall times are the best of N runs (the machine is shared: the best is the one
least slowed by others); CPU times (user + system of the child) are the best of the same runs.
"""

from __future__ import annotations

import asyncio
import json
import math
import os
import resource
import subprocess
import sys
import time
from dataclasses import dataclass
from pathlib import Path

HERE = Path(__file__).resolve().parent
REPO = HERE.parent


@dataclass(frozen=True)
class Timing:
    """The best wall and CPU seconds of N runs of one command."""

    wall_s: float
    cpu_s: float
    runs: int


def child_env() -> dict[str, str]:
    """This environment with the checkout's `src` first on the path and bytecode caching on."""
    env = dict(os.environ)
    env.pop("PYTHONDONTWRITEBYTECODE", None)
    env["PYTHONPATH"] = os.pathsep.join([str(REPO / "src"), env.get("PYTHONPATH", "")]).rstrip(
        os.pathsep
    )
    return env


def timed(command: list[str], cwd: Path, runs: int) -> Timing:
    """Run `command` once untimed (caches warm), then `runs` times: the best wall and CPU.
    Stops the benchmark when the command fails."""
    env = child_env()
    _checked(subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True), command)
    walls, cpus = [], []
    for _ in range(runs):
        before = resource.getrusage(resource.RUSAGE_CHILDREN)
        started = time.perf_counter()
        done = subprocess.run(command, cwd=cwd, env=env, capture_output=True, text=True)
        walls.append(time.perf_counter() - started)
        after = resource.getrusage(resource.RUSAGE_CHILDREN)
        cpus.append(after.ru_utime - before.ru_utime + after.ru_stime - before.ru_stime)
        _checked(done, command)
    return Timing(min(walls), min(cpus), runs)


def run_once(command: list[str], cwd: Path) -> float:
    """Run `command` once (e.g. the first run that a warm re-run repeats): its wall time."""
    started = time.perf_counter()
    _checked(subprocess.run(command, cwd=cwd, env=child_env(), capture_output=True, text=True),
             command)  # fmt: skip
    return time.perf_counter() - started


def _checked(done: subprocess.CompletedProcess[str], command: list[str]) -> None:
    if done.returncode != 0:
        raise SystemExit(f"{' '.join(command)} exited {done.returncode}:\n{done.stderr[-2000:]}")


def cli(*args: str) -> list[str]:
    """`convoeval ARGS` as this interpreter runs it."""
    return [sys.executable, "-m", "convoeval.cli", *args]


def write_data(path: Path, count: int) -> Path:
    """`count` seeded benchmark conversations (benchmarks/_workload.py) as JSONL."""
    sys.path.insert(0, str(HERE))
    from _workload import conversations

    with path.open("w", encoding="utf-8") as handle:
        for record in conversations(count, 6):
            handle.write(json.dumps(record) + "\n")
    return path


#: One process: import convoeval, then make the judge and `evaluate()` the same conversations
#: REPEATS times with it (answer cache off, so each call sends its requests); prints the import
#: time and each call's wall time (the first with making the judge) as JSON. argv: URL,
#: conversations, concurrency, repeats.
_EVALUATE = """
import json, os, sys, tempfile, time
sys.path.insert(0, {here!r})
from _workload import conversations
url, count, limit, repeats = sys.argv[1], *map(int, sys.argv[2:5])
data = conversations(count, 6)
started = time.perf_counter()
from convoeval import evaluate
from convoeval.judges import OpenAIJudge
from convoeval.metrics import ConversationRelevancy
imported = time.perf_counter() - started
calls = []
with tempfile.TemporaryDirectory() as folder:
    for i in range(repeats):
        started = time.perf_counter()
        if i == 0:  # the first call's time includes making the judge, as a script's does
            judge = OpenAIJudge("bench", base_url=url, api_key="x", concurrency=limit, cache=False)
        result = evaluate(data, [ConversationRelevancy()], judge, show_progress=False,
                          output=os.path.join(folder, f"r{{i}}.jsonl"))
        calls.append(time.perf_counter() - started)
        summary = result.summary()["conversation_relevancy"]
        assert summary["scored"] == count and not summary["failed"], summary
print(json.dumps({{"import_s": imported, "calls_s": calls}}))
"""


def evaluate_calls(url: str, count: int, limit: int, repeats: int) -> dict[str, object]:
    """Import time and per-call wall times of `evaluate()` in a fresh process (see _EVALUATE)."""
    script = _EVALUATE.format(here=str(HERE))
    command = [sys.executable, "-c", script, url, str(count), str(limit), str(repeats)]
    done = subprocess.run(command, env=child_env(), capture_output=True, text=True)
    _checked(done, command[:2])
    found: dict[str, object] = json.loads(done.stdout.strip().splitlines()[-1])
    return found


#: One process: the same plain-httpx requests as `bare_floor`, timed from before `import httpx`,
#: as a script that sends them itself pays for its HTTP library too. Prints the wall seconds.
_FRESH_FLOOR = """
import asyncio, sys, time
sys.path.insert(0, {here!r})
import traffic
assert "httpx" not in sys.modules, "the floor's import of httpx would not be counted"
url, count, limit = sys.argv[1], int(sys.argv[2]), int(sys.argv[3])
started = time.perf_counter()
asyncio.run(traffic._bare_requests(url, count, limit))
print(time.perf_counter() - started)
"""


def fresh_floor(url: str, count: int, limit: int, repeats: int) -> float:
    """The best wall time of `bare_floor`'s requests in a fresh process, its import of httpx
    included: what the first `evaluate()` of a process is compared with (its judge imports
    httpx on first use)."""
    script = _FRESH_FLOOR.format(here=str(HERE))
    best = math.inf
    for _ in range(repeats):
        command = [sys.executable, "-c", script, url, str(count), str(limit)]
        done = subprocess.run(command, env=child_env(), capture_output=True, text=True)
        _checked(done, command[:2])
        best = min(best, float(done.stdout.strip().splitlines()[-1]))
    return best


def bare_floor(url: str, count: int, limit: int, repeats: int) -> float:
    """The best wall time of `count` plain httpx requests at `limit` at once (traffic.py's
    floor: the server and HTTP, no convoeval), a fresh client each time."""
    sys.path.insert(0, str(HERE))
    from traffic import _bare_requests

    return min(asyncio.run(_bare_requests(url, count, limit)) for _ in range(repeats))
