"""Framework overhead: CPU time per (conversation, metric) with a judge that answers instantly.

Usage: python benchmarks/overhead.py [--conversations N] [--profile]

Every metric is scored on N seeded conversations (6 exchanges, tool calls, reference topics,
reference and rubrics) with a `FakeJudge` whose scripts are functions of the step's inputs, so
judge latency is zero and what is measured is convoeval itself: rendering prompts, validating
and checking answers, building results. Measured with time.process_time, twice per metric:
through `aevaluate` (rows written to a temporary results file) and through `metric.score`
directly. Target (issue 7): under 1 ms per (conversation, metric). `--profile` prints the top
cProfile entries of the `aevaluate` path.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import pstats
import sys
import tempfile
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(REPO / "src"))
sys.path.insert(0, str(Path(__file__).resolve().parent))

from _workload import conversations  # noqa: E402

from convoeval import aevaluate  # noqa: E402
from convoeval.judges import FakeJudge  # noqa: E402
from convoeval.metrics import (  # noqa: E402
    AgentGoalAccuracyWithoutReference,
    AgentGoalAccuracyWithReference,
    ConversationRelevancy,
    Metric,
    RubricsScore,
    ToolCallAccuracy,
    ToolCallF1,
    TopicAdherenceScore,
)
from convoeval.metrics._base import as_sample  # noqa: E402

TARGET_MS = 1.0
RUBRICS = {"score1_description": "unhelpful", "score5_description": "fully helpful"}


def _topics(inputs: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "topics": [
            {"topic": " ".join(text.split()[:4]), "message_index": i, "quote": text[:200]}
            for i, text in zip(inputs["user_positions"], inputs["user_texts"], strict=True)
        ]
    }


def _verdicts(field: str) -> Callable[[Mapping[str, Any]], dict[str, Any]]:
    def answer(inputs: Mapping[str, Any]) -> dict[str, Any]:
        return {"verdicts": [{"topic": t.topic, field: True} for t in inputs["topics"]]}

    return answer


def _relevancy(inputs: Mapping[str, Any]) -> dict[str, Any]:
    return {
        "verdicts": [{"exchange": i, "relevant": True, "reason": ""} for i, _ in inputs["windows"]]
    }


def fake_judge() -> FakeJudge:
    """A judge answering every convoeval step at once from the step's inputs."""
    goal = {"user_goal": "help", "end_state": "helped", "achieved": True, "reason": "ok"}
    return FakeJudge(
        {
            "topic_adherence.extract_topics": _topics,
            "topic_adherence.answered": _verdicts("answered"),
            "topic_adherence.in_scope": _verdicts("in_scope"),
            "conversation_relevancy.verdicts": _relevancy,
            "agent_goal_accuracy.with_reference": lambda _: goal,
            "agent_goal_accuracy.without_reference": lambda _: goal,
            "rubrics.level": lambda _: {"level": 5, "reason": "helpful throughout"},
        }
    )


def metrics() -> list[Metric]:
    """One instance of every registered metric."""
    return [
        TopicAdherenceScore(),
        ConversationRelevancy(),
        ToolCallAccuracy(),
        ToolCallF1(),
        AgentGoalAccuracyWithReference(),
        AgentGoalAccuracyWithoutReference(),
        RubricsScore(RUBRICS),
    ]


def data(n: int) -> list[dict[str, Any]]:
    """N seeded conversations with every field some metric needs."""
    rows = conversations(n, tools=True)
    for row in rows:
        row["reference"] = "The user's card and transfer questions are answered."
    return rows


async def _through_evaluate(metric: Metric, rows: list[dict[str, Any]], out: str) -> float:
    judge = fake_judge()
    started = time.process_time()
    result = await aevaluate(
        rows, [metric], judge=judge, show_progress=False, output=out, overwrite=True
    )
    spent = time.process_time() - started
    summary = result.summary()[metric.name]
    if summary["failed"] or summary["scored"] != len(rows):
        raise SystemExit(f"{metric.name}: {summary['failed']} failed, {summary['scored']} scored")
    return spent


async def _direct(metric: Metric, rows: list[dict[str, Any]]) -> float:
    judge = fake_judge()
    samples = [as_sample(r) for r in rows]
    started = time.process_time()
    for sample in samples:
        result = await metric.score(sample, judge=judge)
        if result.value is None:
            raise SystemExit(f"{metric.name}: {result.reason}")
    return time.process_time() - started


def main() -> int:
    """Measure each metric both ways, print the figures and a table; exit 1 over target."""
    from _machine import print_machine

    print_machine()
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--conversations", type=int, default=1000)
    parser.add_argument("--profile", action="store_true", help="cProfile the aevaluate path")
    args = parser.parse_args()
    rows = data(args.conversations)
    n = len(rows)
    table = []
    ok = True
    print(f"conversations: {n}")
    with tempfile.TemporaryDirectory(prefix="convoeval-overhead-") as tmp:
        out = str(Path(tmp) / "results.jsonl")
        asyncio.run(_through_evaluate(ToolCallF1(), rows[:20], out))  # warm imports and caches
        for metric in metrics():
            via_eval = asyncio.run(_through_evaluate(metric, rows, out)) * 1000 / n
            direct = asyncio.run(_direct(metric, rows)) * 1000 / n
            print(f"{metric.name}.aevaluate_cpu_ms_per_conversation: {via_eval:.3f}")
            print(f"{metric.name}.score_cpu_ms_per_conversation: {direct:.3f}")
            table.append((metric.name, via_eval, direct))
            ok &= via_eval < TARGET_MS and direct < TARGET_MS
        started = time.process_time()
        asyncio.run(aevaluate(rows, metrics(), judge=fake_judge(), show_progress=False, output=out,
                              overwrite=True))  # fmt: skip
        together = (time.process_time() - started) * 1000 / (n * len(metrics()))
        print(f"all_metrics_in_one_run.aevaluate_cpu_ms_per_conversation_metric: {together:.3f}")
        ok &= together < TARGET_MS
    print()
    print(f"{'metric':<36} {'aevaluate ms':>12} {'score ms':>9} {'target':>7}")
    for name, via_eval, direct in table:
        mark = "ok" if max(via_eval, direct) < TARGET_MS else "MISSED"
        print(f"{name:<36} {via_eval:>12.3f} {direct:>9.3f} {mark:>7}")
    print(f"{'all 7 metrics in one aevaluate run':<36} {together:>12.3f} {'-':>9} {'':>7}")
    print("targets met" if ok else "a target was missed (see above)")
    if args.profile:
        _profile(rows)
    return 0 if ok else 1


def _profile(rows: list[dict[str, Any]]) -> None:
    """Print the top cProfile entries (own time) of aevaluate with every metric at once."""
    profiler = cProfile.Profile()
    with tempfile.TemporaryDirectory(prefix="convoeval-overhead-") as tmp:
        out = str(Path(tmp) / "results.jsonl")
        profiler.enable()
        asyncio.run(aevaluate(rows, metrics(), judge=fake_judge(), show_progress=False,
                              output=out))  # fmt: skip
        profiler.disable()
    text = io.StringIO()
    pstats.Stats(profiler, stream=text).sort_stats("tottime").print_stats(25)
    print("\n# cProfile of aevaluate with all metrics (top 25 by own time)")
    print(text.getvalue())


if __name__ == "__main__":
    raise SystemExit(main())
