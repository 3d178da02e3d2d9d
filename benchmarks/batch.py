"""The Batch API judge at scale: N conversations (topic adherence and conversation relevancy)
through the local Files + Batches server of the tests (`tests/judges/_batch_server.py`, run in a
child process so its CPU is not counted): the batches each round makes, wall time, and the
client's CPU time per conversation and peak memory.

    python benchmarks/batch.py [--records 2000] [--exchanges 6]
"""

from __future__ import annotations

import argparse
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from _workload import conversations

from convoeval import evaluate
from convoeval.judges import JudgeCache
from convoeval.judges.openai.batch import OpenAIBatchJudge

SERVER = Path(__file__).resolve().parents[1] / "tests" / "judges" / "_batch_server.py"


def main() -> int:
    from _machine import print_machine

    print_machine()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--records", type=int, default=2000)
    parser.add_argument("--exchanges", type=int, default=6)
    args = parser.parse_args()
    data = conversations(args.records, args.exchanges)
    server = subprocess.Popen([sys.executable, str(SERVER)], stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        url = server.stdout.readline().split(": ", 1)[1].strip()
        with tempfile.TemporaryDirectory() as tmp:
            judge = OpenAIBatchJudge(
                "bench", base_url=url, cache=JudgeCache(Path(tmp) / "cache.sqlite3"), poll=0.05
            )
            started, cpu = time.perf_counter(), time.process_time()
            result = evaluate(
                data,
                ["topic_adherence", "conversation_relevancy"],
                judge,
                output=Path(tmp) / "results.jsonl",
                show_progress=False,
            )
            wall, cpu = time.perf_counter() - started, time.process_time() - cpu
            batches = [entry["requests"] for entry in result.meta.get("batches", [])]
    finally:
        server.terminate()
        server.wait(10)
    failed = result.failed()
    print(f"records: {args.records} ({args.exchanges} exchanges each)")
    print(f"batches (requests each): {batches}")
    print(f"requests: {result.usage.requests}, failed pairs: {failed}")
    print(f"wall_s: {wall:.2f}")
    print(f"client_cpu_ms_per_conversation: {1000 * cpu / args.records:.2f}")
    peak = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    print(f"client_peak_rss_mb: {peak:.0f}")
    return 0 if failed == 0 else 1


if __name__ == "__main__":
    raise SystemExit(main())
