"""Runner parts: prices and cost, plain progress lines, metric selection, Welford aggregates."""

from __future__ import annotations

import io
import random
import statistics

import pytest
from _runner_samples import tool_sample

from convoeval import evaluate
from convoeval.judges.protocol.base import Usage
from convoeval.runner import MetricStats, PlainProgress, estimate_cost


def test_cost_uses_the_openai_table_only_at_openai() -> None:
    usage = Usage(requests=2, prompt_tokens=1_000_000, completion_tokens=500_000)
    at_openai = {"model": "gpt-4o-mini", "endpoint": "https://api.openai.com/v1"}
    cost, note = estimate_cost(at_openai, usage)
    assert cost == pytest.approx(0.15 + 0.30) and "list price" in note
    local = {"model": "gpt-4o-mini", "endpoint": "http://127.0.0.1:8080/v1"}
    cost, note = estimate_cost(local, usage)
    assert cost is None and "127.0.0.1" in note
    cost, note = estimate_cost(local, usage, {"gpt-4o-mini": (1.0, 2.0)})
    assert cost == pytest.approx(2.0) and "your price" in note
    assert estimate_cost({"judge": "offline"}, Usage(requests=1))[0] == 0.0
    assert estimate_cost(None, Usage())[0] == 0.0


def test_plain_progress_prints_about_every_tenth() -> None:
    out = io.StringIO()
    progress = PlainProgress(out, interval_s=3600)
    progress.start(100, 20)
    for _ in range(80):
        progress.advance()
    progress.close()
    lines = out.getvalue().splitlines()
    assert lines[0] == "convoeval: scoring 80 of 100 records, 20 already done (resumed)"
    assert lines[-1].startswith("convoeval: scored 100/100 records (100%)")
    assert 8 <= len(lines) <= 10


def test_welford_matches_statistics_on_many_values() -> None:
    rng = random.Random(7)
    values = [rng.random() for _ in range(5000)]
    stats = MetricStats(threshold=0.5)
    for value in values:
        stats.add(value, failed=False)
    stats.add(None, failed=True)
    stats.add(None, failed=False)
    summary = stats.summary()
    assert summary["mean"] == pytest.approx(statistics.fmean(values), abs=1e-12)
    assert summary["std"] == pytest.approx(statistics.stdev(values), abs=1e-12)
    assert (summary["failed"], summary["unscored"], summary["scored"]) == (1, 1, 5000)
    # A failed record counts as not passing: the pass rate is over scored + failed records.
    assert summary["pass_rate"] == pytest.approx(sum(v >= 0.5 for v in values) / 5001)
    one = MetricStats()
    one.add(0.3, failed=False)
    assert one.summary()["std"] is None and one.summary()["pass_rate"] is None


def test_without_metrics_the_scan_keeps_what_the_data_supports() -> None:
    without_topics = tool_sample(1).model_copy(update={"reference_topics": None})
    result = evaluate([tool_sample(0), without_topics], show_progress=False)
    chosen = set(result.metric_names)
    assert {"conversation_relevancy", "tool_call_accuracy", "tool_call_f1"} <= chosen
    assert "agent_goal_accuracy" not in chosen and "tool_schema_check" not in chosen
    assert result.metric_names == sorted(chosen)  # the registry's order, every metric once
    skipped = result.meta["skipped_metrics"]
    assert "2 of 2 records lack it" in skipped["tool_schema_check"]  # no record sets it
    assert "LLM judge" in skipped["agent_goal_accuracy"]
    # A field one record lacks: the metric runs and leaves that record unscored (issue 33).
    assert "topic_adherence" in chosen
    assert result.meta["partial_metrics"]["topic_adherence"].startswith("1 of 2 records lack")


def test_progress_lines_use_singular_for_one_record() -> None:
    out = io.StringIO()
    progress = PlainProgress(out, interval_s=3600)
    progress.start(1, 0)
    progress.advance()
    assert out.getvalue().splitlines() == [
        "convoeval: scoring 1 of 1 record",
        out.getvalue().splitlines()[1],
    ]
    assert out.getvalue().splitlines()[1].startswith("convoeval: scored 1/1 record (100%)")


def test_progress_is_a_rich_bar_in_a_notebook(monkeypatch: pytest.MonkeyPatch) -> None:
    import builtins

    from convoeval.runner import make_progress

    assert type(make_progress(True)).__name__ == "PlainProgress"  # stderr is not a terminal here

    class ZMQInteractiveShell:  # the class name rich looks for to detect a Jupyter kernel
        pass

    monkeypatch.setattr(builtins, "get_ipython", ZMQInteractiveShell, raising=False)
    assert type(make_progress(True)).__name__ == "RichProgress"


def test_thresholds_are_checked_against_each_metrics_scale() -> None:
    from convoeval import ToolCallF1
    from convoeval.runner import UsageError
    from convoeval.runner._plan import build_metrics

    assert build_metrics(["rubrics_score"], {"rubrics_score": 3})[0].threshold == 3  # own levels
    with pytest.raises(UsageError, match=r"outside its scores' range \[0, 1\]"):
        build_metrics(["rubrics_score:normalize=true"], {"rubrics_score": 3})
    with pytest.raises(UsageError, match=r"outside its scores' range \[0, 1\]"):
        build_metrics([ToolCallF1(threshold=1.5)])
    with pytest.raises(UsageError, match="takes its threshold= in its constructor"):
        build_metrics([ToolCallF1()], {"tool_call_f1": 0.5})


def test_the_reachability_check_is_skipped_behind_a_proxy(monkeypatch: pytest.MonkeyPatch) -> None:
    from convoeval.runner._reach import _proxied

    for name in ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "NO_PROXY"):
        monkeypatch.delenv(name, raising=False)
        monkeypatch.delenv(name.lower(), raising=False)
    assert not _proxied("https", "api.example.com")
    monkeypatch.setenv("HTTPS_PROXY", "http://proxy.internal:3128")
    assert _proxied("https", "api.example.com") and not _proxied("http", "api.example.com")
    monkeypatch.setenv("NO_PROXY", "api.example.com")
    assert not _proxied("https", "api.example.com")


async def test_a_job_read_before_its_slot_is_closed_when_the_run_fails() -> None:
    """The run's first job fails while the next one, already read, waits for a window slot:
    the error propagates and the waiting job is closed (no 'coroutine never awaited')."""
    import asyncio
    import inspect

    from convoeval.runner._schedule import Writer, run_jobs

    async def fails() -> dict[str, object]:
        await asyncio.sleep(0)
        raise ValueError("the first record failed")

    async def never_started() -> dict[str, object]:
        return {}

    waiting = never_started()
    with pytest.raises(ValueError, match="the first record failed"):
        await run_jobs(iter([fails(), waiting]), Writer(io.StringIO(), print), window=1)
    assert inspect.getcoroutinestate(waiting) == inspect.CORO_CLOSED
