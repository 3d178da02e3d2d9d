"""Builders shared by the runner, report and CLI tests: samples, data files, test-only metrics."""

from __future__ import annotations

import asyncio
import json
from collections.abc import Iterable
from pathlib import Path
from typing import Any, ClassVar

from convoeval import AIMessage, HumanMessage, MultiTurnSample, ToolCall
from convoeval.judges import JudgeError
from convoeval.metrics import Ask, Metric, MetricResult


def tool_sample(i: int, *, right: bool = True, sample_id: str | None = None) -> MultiTurnSample:
    """A conversation whose assistant calls `lookup(n=i)`; the reference wants n=i (or not)."""
    return MultiTurnSample(
        user_input=[
            HumanMessage(content=f"please look up item {i}"),
            AIMessage(content="", tool_calls=[ToolCall(name="lookup", args={"n": i})]),
            AIMessage(content=f"item {i} is in stock"),
        ],
        reference_tool_calls=[ToolCall(name="lookup", args={"n": i if right else -1})],
        reference_topics=["inventory"],
        id=sample_id if sample_id is not None else f"s{i}",
    )


def write_jsonl(path: Path, samples: Iterable[MultiTurnSample | dict[str, Any]]) -> Path:
    """Write samples (or raw dicts) one JSON object per line."""
    with path.open("w", encoding="utf-8") as handle:
        for item in samples:
            data = item.to_dict() if isinstance(item, MultiTurnSample) else item
            handle.write(json.dumps(data) + "\n")
    return path


def index_of(sample: MultiTurnSample) -> int:
    """The number a `tool_sample` was built with."""
    return int(str(sample.id).lstrip("s"))


class DelayMetric(Metric):
    """Test metric (not registered): each of the first `reverse` records waits until the next
    one has finished, so later records finish first (no timers); counts what it saw."""

    name: ClassVar[str] = "delay_metric"
    required: ClassVar[tuple[str, ...]] = ("user_input",)
    default_threshold: ClassVar[float | None] = 0.5

    def __init__(self, total: int, reverse: int = 0) -> None:
        super().__init__()
        self.total = total
        self.reverse = reverse
        self.seen: list[str] = []
        self.active = 0
        self.peak = 0
        self._finished: dict[int, asyncio.Event] = {}

    def _done(self, number: int) -> asyncio.Event:
        return self._finished.setdefault(number, asyncio.Event())

    async def _score(self, sample: MultiTurnSample, ask: Ask) -> MetricResult:
        number = index_of(sample)
        self.active += 1
        self.peak = max(self.peak, self.active)
        try:
            if number < self.reverse:
                await asyncio.wait_for(self._done(number + 1).wait(), 60)
        finally:
            self.active -= 1
        self.seen.append(str(sample.id))
        self._done(number).set()
        return MetricResult(number / self.total, f"record {number}", {"number": number})


class BoomMetric(Metric):
    """Test metric (not registered): its judge fails (`JudgeError`) on odd-numbered records."""

    name: ClassVar[str] = "boom_metric"
    required: ClassVar[tuple[str, ...]] = ("user_input",)

    async def _score(self, sample: MultiTurnSample, ask: Ask) -> MetricResult:
        number = index_of(sample)
        if number % 2:
            raise JudgeError("boom", f"boom on {number}")
        return MetricResult(1.0, "fine")
