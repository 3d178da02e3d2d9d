"""First-call cost of the offline scope step with and without broad topics expanded (issue 36).

Usage: python benchmarks/scope_cold.py [--rounds N]

A fresh kit on a fresh, warmed embedder per round; the first scope call embeds the topic
phrasings (with expansion, the 355 IAB tier-2 names of the background too), the second reuses
them. Prints the best of N rounds per setting, since the machine is shared.
"""

from __future__ import annotations

import argparse
import sys
import time
from collections.abc import Sequence
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent.parent / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _machine import print_machine

from convoeval.judges.offline import calibration as cal
from convoeval.judges.offline.embedder import Embedder
from convoeval.judges.offline.kit import OfflineKit

TOPICS = ["billing", "travel"]


def first_and_second(expand: bool) -> tuple[float, float]:
    """Seconds of the first and of the second scope call of a fresh kit."""
    cal.SCOPE_EXPAND = expand
    kit = OfflineKit(Embedder())
    kit.embed(["warm the model up"])
    started = time.perf_counter()
    kit.scope_scores(["Can I get a refund?"], TOPICS)
    first = time.perf_counter() - started
    started = time.perf_counter()
    kit.scope_scores(["Where is my order?"], TOPICS)
    return first, time.perf_counter() - started


def main(argv: Sequence[str] | None = None) -> int:
    """Time both settings, print the best of each."""
    print_machine()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--rounds", type=int, default=3)
    args = parser.parse_args(argv)
    shipped = cal.SCOPE_EXPAND
    try:
        for expand in (False, True):
            runs = [first_and_second(expand) for _ in range(args.rounds)]
            name = f"scope.expand_{str(expand).lower()}"
            print(f"{name}.first_call_seconds: {min(r[0] for r in runs):.3f}")
            print(f"{name}.second_call_ms: {1000 * min(r[1] for r in runs):.1f}")
    finally:
        cal.SCOPE_EXPAND = shipped
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
