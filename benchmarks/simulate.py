"""What a simulated conversation costs: requests and tokens per conversation of 6 turns, and the
wall time against the ideal (issue 26).

Usage: python benchmarks/simulate.py [--conversations N] [--turns T] [--delay S]

A local OpenAI-compatible server (benchmarks/_fake_openai_server.py, 127.0.0.1, a child process)
plays both sides after a fixed delay: the simulated user (its structured answers are built from
the schema, so the user always continues with a message) and the bot (it answers `{}`). N
conversations of T turns are played at once through `simulate(...)` with the answer cache off;
then the same command runs again on the same output file, which must send nothing (resume).

The ideal wall time is T turns x 2 round trips (the user's message, then the bot's reply) x the
delay: a turn cannot start before the previous one ended. Prints one `name: value` line per
figure; exits 1 when a target is missed (exactly one user-model and one bot request per turn, no
re-ask, a wall time within 1.5 x the ideal, nothing sent by the rerun).
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _fake_openai_server import ServerProcess  # noqa: E402

from convoeval.simulate import simulate  # noqa: E402


def main() -> int:
    from _machine import print_machine

    print_machine()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=8)
    parser.add_argument("--turns", type=int, default=6)
    parser.add_argument("--delay", type=float, default=0.2, help="seconds per answer")
    args = parser.parse_args()
    n, turns = args.conversations, args.turns
    scenarios = [{"scenario": f"Customer {i} wants to change a booking."} for i in range(n)]
    failures: list[str] = []
    with ServerProcess(delay=args.delay) as server, tempfile.TemporaryDirectory() as folder:
        output = Path(folder) / "conversations.jsonl"
        options = {
            "base_url": server.url,
            "bot_base_url": server.url,
            "max_turns": turns,
            "concurrency": n,
            "cache": False,
            "output": output,
        }
        server.reset()
        started = time.perf_counter()
        result = simulate(scenarios, "openai/bench-bot", "openai/bench-user", **options)
        wall = time.perf_counter() - started
        stats = server.reset()
        again = simulate(scenarios, "openai/bench-bot", "openai/bench-user", **options)
        rerun = server.reset()
    user, bot = result.usage["user"], result.usage["bot"]
    ideal = turns * 2 * args.delay
    per = {
        "user_requests": user["requests"] / n,
        "bot_requests": bot["requests"] / n,
        "user_prompt_tokens": user["prompt_tokens"] / n,
        "user_completion_tokens": user["completion_tokens"] / n,
        "bot_prompt_tokens": bot["prompt_tokens"] / n,
        "bot_completion_tokens": bot["completion_tokens"] / n,
    }
    print(f"conversations: {n} of {turns} turns, {args.delay:g} s per answer, all at once")
    print(f"stops: {result.stops()}")
    for name, value in per.items():
        print(f"per_conversation.{name}: {value:g}")
    print(f"server.requests: {stats.requests} (re-asks {stats.reasks})")
    print(f"wall_s: {wall:.2f}")
    print(f"ideal_s: {ideal:.2f} ({turns} turns x 2 round trips x {args.delay:g} s)")
    print(f"wall_over_ideal: {wall / ideal:.2f}")
    print(f"rerun.requests: {rerun.requests} ({len(again)} conversations kept)")
    if per["user_requests"] != turns or per["bot_requests"] != turns:
        failures.append(f"expected {turns} user and {turns} bot requests per conversation")
    if stats.requests != 2 * turns * n or stats.reasks:
        failures.append("the server received other requests than one per message")
    if wall > 1.5 * ideal:
        failures.append(f"wall time {wall:.2f} s is over 1.5 x the ideal {ideal:.2f} s")
    if rerun.requests:
        failures.append("the rerun of a finished simulation sent requests")
    for failure in failures:
        print(f"MISSED: {failure}")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
