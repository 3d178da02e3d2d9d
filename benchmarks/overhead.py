"""Framework overhead: CPU time per (conversation, metric) with a judge that answers instantly,
and the fixed cost of a run (issue 35 §4).

Usage: python benchmarks/overhead.py [--conversations N] [--profile] [--only per-pair|fixed]
       [--repeats N]

Every metric is scored on N seeded conversations (6 exchanges, tool calls, reference topics,
reference and rubrics) with a `FakeJudge` whose scripts are functions of the step's inputs, so
judge latency is zero and what is measured is convoeval itself: rendering prompts, validating
and checking answers, building results. Measured with time.process_time, twice per metric:
through `aevaluate` (rows written to a temporary results file) and through `metric.score`
directly. Target (issue 7): under 1 ms per (conversation, metric). `--profile` prints the top
cProfile entries of the `aevaluate` path.

Fixed costs (benchmarks/_fixed_costs.py, each command in a process of its own, best of
`--repeats`): `convoeval --help` and `convoeval metrics` against the interpreter's own start-up
(`python -c pass`), targets 0.3 s; a warm re-run through the command line of a finished
200-conversation run, on the mock judge (0 requests) and on the offline judge, target 0.5 s;
and `evaluate()` of 40 conversations with ConversationRelevancy on the mock OpenAI-compatible
judge (benchmarks/_fake_openai_server.py, 0.2 s per answer, concurrency 16) against the ideal
(requests x delay / concurrency) and the floor (the same requests sent by plain httpx), target
at most 0.1 s beyond the floor, for the first call in a process (making the judge included, as
a script does; its floor is a fresh process that imports httpx and sends them, as a script
sending them itself would) and for later calls with the same judge (the floor: a process that
has httpx loaded). The first call's margin over the warm floor is printed too.
"""

from __future__ import annotations

import argparse
import asyncio
import cProfile
import io
import math
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
    parser.add_argument(
        "--only", choices=["per-pair", "fixed"], help="measure only this part (default: both)"
    )
    parser.add_argument("--repeats", type=int, default=7, help="runs per fixed-cost figure")
    args = parser.parse_args()
    ok = True
    if args.only != "per-pair":
        ok &= fixed_costs(args.repeats)
        if args.only == "fixed":
            return 0 if ok else 1
    rows = data(args.conversations)
    n = len(rows)
    table = []
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


#: Fixed-cost targets (issue 35 §4), seconds.
STARTUP_TARGET_S = 0.3
RERUN_TARGET_S = 0.5
EVALUATE_OVERHEAD_TARGET_S = 0.1
#: evaluate() at a fixed size: conversations, mock delay, concurrency (the issue's setting).
EVAL_CONVERSATIONS, EVAL_DELAY_S, EVAL_CONCURRENCY = 40, 0.2, 16
RERUN_CONVERSATIONS = 200


def fixed_costs(repeats: int) -> bool:
    """Measure and print the fixed costs; True when every target is met."""
    from _fake_openai_server import ServerProcess
    from _fixed_costs import (
        bare_floor,
        cli,
        evaluate_calls,
        fresh_floor,
        run_once,
        timed,
        write_data,
    )

    rows: list[tuple[str, float, float, str, bool]] = []  # name, wall, cpu, ratios, met
    print(f"fixed.repeats: {repeats} (best of)")
    with tempfile.TemporaryDirectory(prefix="convoeval-fixed-") as tmp:
        folder = Path(tmp)
        floor = timed([sys.executable, "-c", "pass"], folder, repeats)
        _line("python_startup", floor)
        for name, args in (("help", ["--help"]), ("metrics", ["metrics"])):
            took = timed(cli(*args), folder, repeats)
            _line(f"cli_{name}", took, target=STARTUP_TARGET_S, floor=floor.wall_s)
            rows.append(_row(f"convoeval {' '.join(args)}", took, STARTUP_TARGET_S, floor.wall_s))
        data = write_data(folder / "data.jsonl", RERUN_CONVERSATIONS)
        with ServerProcess(delay=EVAL_DELAY_S) as server:
            mock = ["--judge", "openai/bench", "--base-url", server.url, "--api-key", "x"]
            runs = {
                "mock": [*mock, "-m", "conversation_relevancy", "-o", "mock.jsonl"],
                "offline": ["-m", "topic_adherence", "-m", "conversation_relevancy"],
            }
            for judge, options in runs.items():
                command = cli("run", str(data), *options)
                first = run_once(command, folder)  # scores and writes every row
                print(f"rerun_{judge}.first_run_s: {first:.3f}")
                server.reset()
                took = timed(command, folder, repeats)
                sent = server.reset().requests
                print(f"rerun_{judge}.requests_sent: {sent}")
                _line(f"rerun_{judge}", took, target=RERUN_TARGET_S, floor=floor.wall_s)
                label = f"warm re-run, {RERUN_CONVERSATIONS} conversations, {judge} judge"
                rows.append(_row(label, took, RERUN_TARGET_S, floor.wall_s, ok=sent == 0))
            rows += _evaluate_overhead(server, repeats, bare_floor, fresh_floor, evaluate_calls)
    print()
    print(f"{'fixed cost':<52} {'wall s':>7} {'cpu s':>6}  {'ratios':<34} {'target'}")
    for name, wall, cpu, ratios, met in rows:
        cpu_text = f"{cpu:>6.3f}" if not math.isnan(cpu) else f"{'-':>6}"
        print(f"{name:<52} {wall:>7.3f} {cpu_text}  {ratios:<34} {'met' if met else 'MISSED'}")
    print()
    return all(met for *_, met in rows)


def _line(key: str, took: Any, *, target: float | None = None, floor: float | None = None) -> None:
    print(f"{key}.wall_s: {took.wall_s:.3f}")
    print(f"{key}.cpu_s: {took.cpu_s:.3f}")
    if floor is not None:
        print(f"{key}.wall_over_python_startup: {took.wall_s / floor:.2f}")
    if target is not None:
        print(f"{key}.wall_over_target: {took.wall_s / target:.2f}")


def _row(
    name: str, took: Any, target: float, floor: float, ok: bool = True
) -> tuple[str, float, float, str, bool]:
    ratios = f"{took.wall_s / floor:.1f}x python, {took.wall_s / target:.2f}x target"
    return name, took.wall_s, took.cpu_s, ratios, ok and took.wall_s <= target


def _evaluate_overhead(
    server: Any, repeats: int, bare_floor: Any, fresh_floor: Any, evaluate_calls: Any
) -> list[tuple[str, float, float, str, bool]]:
    """evaluate() against the ideal and the plain-httpx floor of the same requests: for the
    first call of a process, the floor of a fresh process (importing httpx included, as the
    judge imports it on first use); for later calls, that of a process that has it."""
    n, limit, delay = EVAL_CONVERSATIONS, EVAL_CONCURRENCY, EVAL_DELAY_S
    ideal = n * delay / limit
    floor = bare_floor(server.url, n, limit, repeats)
    fresh = fresh_floor(server.url, n, limit, repeats)
    server.reset()
    found = evaluate_calls(server.url, n, limit, repeats)
    sent = server.reset().requests
    calls = list(found["calls_s"])
    first, later = calls[0], min(calls[1:])
    print(f"evaluate.conversations: {n}")
    print(f"evaluate.ideal_s: {ideal:.3f} ({n} requests x {delay} s / {limit})")
    print(f"evaluate.floor_bare_httpx_s: {floor:.3f}")
    print(f"evaluate.floor_fresh_process_s: {fresh:.3f} (importing httpx included)")
    print(f"evaluate.requests_per_call: {sent / len(calls):.1f}")
    print(f"evaluate.import_s: {found['import_s']:.3f}")
    rows = []
    for key, wall, base in (("first_call", first, fresh), ("later_calls", later, floor)):
        print(f"evaluate.{key}.wall_s: {wall:.3f}")
        print(f"evaluate.{key}.wall_over_ideal: {wall / ideal:.2f}")
        print(f"evaluate.{key}.wall_over_floor: {wall / base:.2f}")
        print(f"evaluate.{key}.overhead_beyond_floor_s: {wall - base:.3f}")
        print(f"evaluate.{key}.overhead_beyond_warm_floor_s: {wall - floor:.3f}")
        what = "judge + first call" if key == "first_call" else "later calls (best)"
        ratios = f"{wall / ideal:.2f}x ideal, {wall - base:+.3f} s over floor"
        met = wall - base <= EVALUATE_OVERHEAD_TARGET_S and sent == n * len(calls)
        rows.append((f"evaluate() of {n} conversations, {what}", wall, math.nan, ratios, met))
    rows.append(
        ("  floor, first call: plain httpx, fresh process", fresh, math.nan,
         f"{fresh / ideal:.2f}x ideal", True)
    )  # fmt: skip
    rows.append(
        ("  floor, later calls: plain httpx", floor, math.nan, f"{floor / ideal:.2f}x ideal",
         True)
    )  # fmt: skip
    return rows


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
