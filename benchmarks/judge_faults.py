"""Judge robustness: a slow healthy judge, and 30% injected faults (issue 11 items 1 and 2).

Usage: python benchmarks/judge_faults.py [--case slow|faults|both] [--conversations N] ...

A local OpenAI-compatible server (benchmarks/_fake_openai_server.py, 127.0.0.1, a child
process) answers every step correctly after a delay, and counts requests, injected faults and
requests whose client hung up. Conversations (benchmarks/_workload.py) are scored through
`aevaluate(...)` with TopicAdherenceScore and ConversationRelevancyMetric (4 judge requests per
conversation) and `OpenAIJudge(..., concurrency=16, cache=False)`.

- slow: every answer takes `--delay` (2 s: the reported 8 s scaled by 1/4, as is `--timeout`
  15 s from 60 s). The report's failure needs requests to queue longer than the retry budget
  (there 7 metrics queued about 224 s of work against 120 s). With 2 metrics the runner's window
  (64 records) queues about 128 requests, 8 rounds of 2 s = 16 s, so `--retry-budget` is 10 s.
  Nothing may fail, no request may be abandoned, and the client counts exactly what the server
  received.
- faults: 200 conversations fault-free, then with `--rate` (0.3) of requests answered 429
  (Retry-After: 1), 500 or 503. Targets: all scored, requests <= 1.5 x the fault-free number.

Prints one `name: value` line per figure; exits 1 when a target is missed.
"""

from __future__ import annotations

import argparse
import asyncio
import sys
import time
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _fake_openai_server import ServerProcess  # noqa: E402
from _workload import conversations  # noqa: E402

from convoeval import aevaluate  # noqa: E402
from convoeval.judges.core.retry import RetryPolicy  # noqa: E402
from convoeval.judges.openai.judge import OpenAIJudge  # noqa: E402
from convoeval.metrics import ConversationRelevancyMetric, TopicAdherenceScore  # noqa: E402


@dataclass
class Figures:
    """What one run cost and gave."""

    client_requests: int
    server_requests: int
    faults: int
    abandoned: int
    peak: int
    scored: int
    failed: int
    wall_s: float


def score(
    server: ServerProcess, n: int, *, conc: int, timeout: float, budget: float
) -> tuple[Figures, list[str]]:
    """Score `n` conversations with both metrics; the figures and the distinct failure messages."""
    judge = OpenAIJudge(
        "bench",
        base_url=server.url,
        api_key="x",
        concurrency=conc,
        cache=False,
        timeout=timeout,
        retry=RetryPolicy(max_total_s=budget),  # as retry_budget=budget; older judges take it too
    )
    metrics = [TopicAdherenceScore(), ConversationRelevancyMetric(include_reason=True)]
    server.reset()

    async def run() -> tuple[int, int, list[str]]:
        try:
            result = await aevaluate(conversations(n), metrics, judge=judge, show_progress=False)
        finally:
            await judge.aclose()
        summary = result.summary()
        scored = sum(int(summary[m.name]["scored"]) for m in metrics)
        failed = sum(int(summary[m.name]["failed"]) for m in metrics)
        errors = {
            str(e.get("message", ""))[:200]
            for row in result.rows()
            for e in (row.get("errors") or {}).values()
        }
        return scored, failed, sorted(errors)

    started = time.perf_counter()
    scored, failed, errors = asyncio.run(run())
    wall = time.perf_counter() - started
    stats = server.reset()
    figures = Figures(
        client_requests=judge.total.requests,
        server_requests=stats.requests,
        faults=stats.faults,
        abandoned=stats.abandoned,
        peak=stats.peak_concurrency,
        scored=scored,
        failed=failed,
        wall_s=wall,
    )
    return figures, errors


def report(prefix: str, figures: Figures, errors: list[str]) -> None:
    """Print one `name: value` line per figure, then up to 5 distinct failure messages."""
    for name, value in vars(figures).items():
        shown = f"{value:.1f}" if isinstance(value, float) else str(value)
        print(f"{prefix}.{name}: {shown}")
    for message in errors[:5]:
        print(f"{prefix}.error: {message}")


def slow_case(args: argparse.Namespace) -> bool:
    """Every answer correct after `--delay`; the queue outlasts the retry budget."""
    n = args.conversations or 100
    print(f"slow.conversations: {n}")
    print(f"slow.delay_s: {args.delay}")
    print(f"slow.timeout_s: {args.timeout}")
    print(f"slow.retry_budget_s: {args.retry_budget}")
    print(f"slow.concurrency: {args.concurrency}")
    with ServerProcess(delay=args.delay) as server:
        figures, errors = score(
            server, n, conc=args.concurrency, timeout=args.timeout, budget=args.retry_budget
        )
    report("slow", figures, errors)
    return (
        figures.failed == 0
        and figures.abandoned == 0
        and figures.client_requests == figures.server_requests == 4 * n
        and figures.peak <= args.concurrency
    )


def faults_case(args: argparse.Namespace) -> bool:
    """Fault-free, then `--rate` of requests answered 429/500/503."""
    n = args.conversations or 200
    print(f"faults.conversations: {n}")
    print(f"faults.rate: {args.rate}")
    print(f"faults.concurrency: {args.concurrency}")
    options = {"conc": args.concurrency, "timeout": 60.0, "budget": 120.0}
    with ServerProcess(delay=args.fault_delay) as server:
        clean, _ = score(server, n, **options)
    report("faults.fault_free", clean, [])
    with ServerProcess(delay=args.fault_delay, faults=args.rate) as server:
        faulty, errors = score(server, n, **options)
    report("faults.injected", faulty, errors)
    ratio = faulty.server_requests / clean.server_requests
    print(f"faults.requests_over_fault_free: {ratio:.3f}")
    return faulty.failed == 0 and clean.failed == 0 and ratio <= 1.5


def main() -> int:
    """Run the chosen cases; print their figures; exit 1 if a target is missed."""
    from _machine import print_machine

    print_machine()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--case", choices=["slow", "faults", "both"], default="both")
    parser.add_argument("--conversations", type=int, default=0, help="default 100 / 200")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--delay", type=float, default=2.0, help="slow case: seconds per answer")
    parser.add_argument("--timeout", type=float, default=15.0, help="slow case: per request")
    parser.add_argument("--retry-budget", type=float, default=10.0, help="slow case: per step")
    parser.add_argument("--rate", type=float, default=0.3, help="faults case: share injected")
    parser.add_argument("--fault-delay", type=float, default=0.05, help="faults case: per answer")
    args = parser.parse_args()
    ok = True
    if args.case in ("slow", "both"):
        ok &= slow_case(args)
    if args.case in ("faults", "both"):
        ok &= faults_case(args)
    print("targets met" if ok else "a target was missed (see above)")
    return 0 if ok else 1


if __name__ == "__main__":
    raise SystemExit(main())
