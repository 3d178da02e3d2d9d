"""How well tool-call metrics tell solved from unsolved tau-bench runs, and pass^k from rewards.

Data: ../shared/data/tau_bench_gpt4o_airline_trajectories.json (200 GPT-4o airline runs, 50
tasks x 4 trials; `reward` 1 = the task was solved, computed by tau-bench from the database state
and the required outputs). For every metric and configuration: AUROC of the score against the
reward, and agreement of "passes at threshold 1.0" with "reward is 1". Then pass^k / pass@k by k
from the reward and from the trajectory match.

    python benchmarks/tau_bench.py [--data FILE] [--show-disagreements]
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path
from typing import Any

from _data import TAU_BENCH, missing_data
from _stats import auroc

from convoeval.io import read_samples
from convoeval.metrics import Metric, ToolCallAccuracy, ToolCallF1, TrajectoryMatch
from convoeval.stats.trials import TaskTrials, summarize_trials

DATA = TAU_BENCH

#: The airline tools that change the database (tau-bench's reward compares the database with the
#: one the reference actions produce). Chosen from what each tool does, before looking at scores:
#: book_/cancel_/update_/send_ write; get_/search_/list_, calculate and think only read or think;
#: transfer_to_human_agents ends the conversation without changing the database.
WRITE_TOOLS = (
    "book_reservation",
    "cancel_reservation",
    "update_reservation_flights",
    "update_reservation_baggages",
    "update_reservation_passengers",
    "send_certificate",
)
#: The configuration documented in docs/metrics/trajectory.md.
CHOSEN = TrajectoryMatch(mode="unordered", only_tools=WRITE_TOOLS, skip_errors=True)


def configurations() -> list[tuple[str, Metric]]:
    """Every metric and configuration compared, labelled for the table."""
    rows: list[tuple[str, Metric]] = [
        ("ToolCallAccuracy (in order)", ToolCallAccuracy()),
        ("ToolCallAccuracy (any order)", ToolCallAccuracy(strict_order=False)),
        ("ToolCallF1", ToolCallF1()),
    ]
    for mode in ("strict", "unordered", "subset", "superset"):
        rows.append((f"TrajectoryMatch {mode}, all tools", TrajectoryMatch(mode=mode)))
    for mode in ("strict", "unordered", "subset", "superset"):
        rows.append(
            (
                f"TrajectoryMatch {mode}, write tools",
                TrajectoryMatch(mode=mode, only_tools=WRITE_TOOLS),
            )
        )
    for mode in ("strict", "unordered", "subset", "superset"):
        rows.append(
            (
                f"TrajectoryMatch {mode}, write tools, errors left out",
                TrajectoryMatch(mode=mode, only_tools=WRITE_TOOLS, skip_errors=True),
            )
        )
    return rows


def main(argv: list[str] | None = None) -> int:
    from _machine import print_machine

    print_machine()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--data", type=Path, default=DATA)
    parser.add_argument("--show-disagreements", action="store_true")
    args = parser.parse_args(argv)
    if missing_data("tau_bench.py", [args.data], "data", "--data"):
        return 2
    samples = list(
        read_samples(
            args.data,
            messages_field="traj",
            fields={"reference_tool_calls": "info.task.actions"},
        )
    )
    solved = [float((s.metadata or {})["reward"]) == 1.0 for s in samples]
    print(f"{len(samples)} runs, {sum(solved)} solved (reward 1)\n")
    print(f"| {'metric and configuration':<72} | AUROC | agreement at 1.0 |")
    print(f"|{'-' * 74}|------:|-----------------:|")
    for label, metric in configurations():
        scores = [metric.score_sync(s).value or 0.0 for s in samples]
        agree = sum((v >= 1.0) == ok for v, ok in zip(scores, solved, strict=True))
        print(
            f"| {label:<72} | {auroc(scores, solved):.3f} | "
            f"{agree}/{len(samples)} = {agree / len(samples):.1%} |"
        )
    chosen = [CHOSEN.score_sync(s) for s in samples]
    print()
    for name, outcome in (
        ("reward", solved),
        ("TrajectoryMatch (documented configuration)", [r.value == 1.0 for r in chosen]),
    ):
        summary = summarize_trials(_tasks(samples, outcome), "task_id", name)
        print(f"pass^k / pass@k from {name}:")
        for k in summary.pass_hat_k:
            print(f"  k={k}: pass^k {summary.pass_hat_k[k]:.4f}  pass@k {summary.pass_at_k[k]:.4f}")
    if args.show_disagreements:
        print("\nDisagreements of the documented configuration with the reward:")
        for s, result, ok in zip(samples, chosen, solved, strict=True):
            if (result.value == 1.0) != ok:
                meta = s.metadata or {}
                print(f"- task {meta['task_id']} trial {meta['trial']}: reward {meta['reward']}")
                print(f"  {result.reason}")
    return 0


def _tasks(samples: list[Any], outcome: list[bool]) -> list[TaskTrials]:
    counts: dict[str, list[int]] = {}
    for sample, ok in zip(samples, outcome, strict=True):
        entry = counts.setdefault(str(sample.metadata["task_id"]), [0, 0])
        entry[0] += 1
        entry[1] += ok
    return [TaskTrials(task, n, c) for task, (n, c) in counts.items()]


if __name__ == "__main__":
    sys.exit(main())
