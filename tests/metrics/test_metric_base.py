"""The metric base: result states, required fields, judge handling, sync and Ragas wrappers,
and one instance scoring many samples concurrently."""

from __future__ import annotations

import asyncio
import json
import math
from collections.abc import Mapping
from typing import Any

import pytest
from _tool_call_samples import sample, tc
from pydantic import BaseModel

from convoeval import (
    AIMessage,
    ConversationalTestCase,
    HumanMessage,
    MultiTurnSample,
    ToolMessage,
    Turn,
)
from convoeval.judges import resolve_judge
from convoeval.judges.protocol.base import Answer, Judge, JudgeError, Step, StepUnsupported, Usage
from convoeval.metrics import (
    Ask,
    Metric,
    MetricFailedError,
    MetricResult,
    MissingFieldsError,
    ToolCallAccuracy,
    ToolCallF1,
    as_sample,
)
from convoeval.metrics._base import concurrently

# --- MetricResult -------------------------------------------------------------------------


@pytest.mark.parametrize("bad", [math.nan, math.inf, -math.inf], ids=["nan", "inf", "-inf"])
def test_result_rejects_non_finite_values(bad: float) -> None:
    with pytest.raises(ValueError, match="finite"):
        MetricResult(bad, "x")


def test_result_states_and_validation() -> None:
    scored = MetricResult(1, "ok")
    assert scored.value == 1.0 and isinstance(scored.value, float)
    assert scored.scored and not scored.failed
    unscored = MetricResult.unscored("no topics were raised")
    assert not unscored.scored and not unscored.failed and unscored.reason
    failed = MetricResult.failure("JudgeError", "gave up", usage=Usage(requests=2))
    assert failed.failed and not failed.scored
    assert failed.error == {"type": "JudgeError", "message": "gave up"}
    with pytest.raises(ValueError, match="needs a reason"):
        MetricResult(None)
    with pytest.raises(ValueError, match="cannot carry a value"):
        MetricResult(0.5, error={"type": "X", "message": "y"})
    with pytest.raises(TypeError):
        MetricResult(True, "a bool is not a score")


def test_result_to_dict_is_json_ready() -> None:
    failed = MetricResult.failure("JudgeError", "gave up", {"k": [1]}, Usage(requests=2))
    data = json.loads(json.dumps(failed.to_dict()))
    assert data["value"] is None
    assert data["error"] == {"type": "JudgeError", "message": "gave up"}
    assert data["usage"]["requests"] == 2 and data["details"] == {"k": [1]}
    assert json.loads(json.dumps(MetricResult(0.25, "r").to_dict()))["value"] == 0.25


# --- required fields and sample conversion ------------------------------------------------


@pytest.mark.parametrize("metric", [ToolCallAccuracy(), ToolCallF1()], ids=["accuracy", "f1"])
async def test_missing_reference_tool_calls_raises(metric: Metric) -> None:
    no_reference = sample([tc("a")], None, sample_id="conv-7")
    assert metric.missing_fields(no_reference) == ["reference_tool_calls"]
    with pytest.raises(MissingFieldsError) as caught:
        await metric.score(no_reference)
    assert isinstance(caught.value, ValueError)
    message = str(caught.value)
    assert "reference_tool_calls" in message and metric.name in message and "conv-7" in message
    assert caught.value.fields == ["reference_tool_calls"]
    assert metric.missing_fields(sample([tc("a")], [])) == []  # [] means "no calls expected"


def test_as_sample_accepts_the_three_layouts() -> None:
    ragas = {
        "user_input": [
            {"type": "human", "content": "hi"},
            {"type": "ai", "content": "", "tool_calls": [{"name": "a", "args": {"x": 1}}]},
            {"type": "tool", "content": "out"},
        ],
        "reference_tool_calls": [{"name": "a", "args": {"x": 1.0}}],
    }
    converted = as_sample(ragas)
    assert isinstance(converted, MultiTurnSample)
    assert ToolCallAccuracy().score_sync(ragas).value == 1.0
    existing = sample([], [])
    assert as_sample(existing) is existing
    case = ConversationalTestCase(
        turns=[Turn(role="user", content="hi"), Turn(role="assistant", content="hello")]
    )
    assert as_sample(case).user_input == case.to_sample().user_input
    with pytest.raises(TypeError, match=r"a dict \(Ragas, OpenAI chat or DeepEval layout\)"):
        as_sample(["not", "a", "sample"])  # type: ignore[arg-type]


# --- sync and Ragas wrappers --------------------------------------------------------------


def test_score_sync_and_ragas_wrappers_outside_a_loop() -> None:
    s = sample([tc("a"), tc("b")], [tc("a")])
    assert ToolCallAccuracy().score_sync(s).value == 0.5
    assert ToolCallAccuracy().multi_turn_score(s) == 0.5
    assert asyncio.run(ToolCallF1().multi_turn_ascore(s)) == 2 / 3


async def test_score_sync_works_inside_a_running_loop() -> None:
    # As in Jupyter: sync wrappers called while an event loop is running.
    s = sample([tc("a")], [tc("a"), tc("b")])
    assert ToolCallAccuracy().score_sync(s).value == 0.5
    assert ToolCallF1().multi_turn_score(s) == 2 / 3
    with pytest.raises(MissingFieldsError):
        ToolCallF1().score_sync(sample([tc("a")], None))


# --- judge-using metrics ------------------------------------------------------------------


class Verdict(BaseModel):
    """The test step's answer."""

    relevant: bool


STEP = Step(
    name="test_relevance",
    version=1,
    instructions="Say whether the reply answers the message.",
    template="Message: {message}",
    output=Verdict,
)


class KeywordJudge:
    """A small real Judge: answers `relevant` by a keyword, fails on a marker, counts calls."""

    def __init__(self, name: str = "keyword", fail_on: str = "FAIL") -> None:
        self.name = name
        self.fail_on = fail_on
        self.calls = 0

    async def run(
        self, step: Step[Any], inputs: Mapping[str, Any], *, usage: Usage | None = None
    ) -> Answer[Any]:
        self.calls += 1
        text = step.render(inputs)
        spent = Usage(requests=1, prompt_tokens=len(text), completion_tokens=3)
        if usage is not None:  # counted as sent, before the answer is known
            usage.add(spent)
        await asyncio.sleep(0)  # let concurrent scorings interleave
        if self.fail_on in text:
            raise JudgeError(step.name, "no valid answer after 3 attempts", raw="{oops")
        if "UNSUPPORTED" in text:
            raise StepUnsupported(step.name, f"the {self.name} judge cannot answer this")
        output = step.output.model_validate({"relevant": "ok" in text})
        return Answer(output, spent)

    def describe(self) -> dict[str, Any]:
        return {"kind": "keyword", "name": self.name}


class HumanRelevance(Metric):
    """Share of user messages the judge calls relevant (one step per user message)."""

    name = "test_human_relevance"
    uses_judge = True
    needs_llm = True
    default_threshold = 0.5

    async def _score(self, sample: MultiTurnSample, ask: Ask) -> MetricResult:
        humans = [m.content for m in sample.user_input if isinstance(m, HumanMessage)]
        verdicts = [(await ask(STEP, {"message": text})).relevant for text in humans]
        judge = ask.judge.name if ask.judge is not None else None
        return MetricResult(sum(verdicts) / len(verdicts), "counted", {"judge": judge})


def _chat(*user_texts: str) -> MultiTurnSample:
    messages: list[Any] = []
    for text in user_texts:
        messages += [HumanMessage(content=text), AIMessage(content="reply")]
    return MultiTurnSample(user_input=messages)


async def test_judge_usage_is_summed_per_call() -> None:
    judge = KeywordJudge()
    result = await HumanRelevance(judge=judge).score(_chat("ok one", "two", "ok three"))
    assert result.value == 2 / 3
    assert result.usage.requests == 3 and judge.calls == 3
    assert result.usage.prompt_tokens == sum(
        len(STEP.render({"message": t})) for t in ("ok one", "two", "ok three")
    )


async def test_judge_error_becomes_a_failed_result_with_partial_usage() -> None:
    result = await HumanRelevance(judge=KeywordJudge()).score(_chat("ok", "ok", "FAIL now", "ok"))
    assert result.failed and result.value is None
    assert result.error is not None and result.error["type"] == "JudgeError"
    assert "no valid answer after 3 attempts" in result.error["message"]
    assert result.usage.requests == 3  # two answers and the failed request, all sent
    unsupported = await HumanRelevance(judge=KeywordJudge()).score(_chat("UNSUPPORTED"))
    assert unsupported.error is not None and unsupported.error["type"] == "StepUnsupported"
    with pytest.raises(MetricFailedError, match="JudgeError") as caught:
        await HumanRelevance(judge=KeywordJudge()).multi_turn_ascore(_chat("FAIL"))
    assert caught.value.result.failed
    with pytest.raises(MetricFailedError):
        HumanRelevance(judge=KeywordJudge()).multi_turn_score(_chat("FAIL"))


async def test_judge_given_to_score_overrides_the_metric_judge() -> None:
    own, given = KeywordJudge("own"), KeywordJudge("given")
    metric = HumanRelevance(judge=own)
    assert (await metric.score(_chat("ok"), judge=given)).details["judge"] == "given"
    assert (await metric.score(_chat("ok"))).details["judge"] == "own"
    assert (own.calls, given.calls) == (1, 1)


async def test_missing_fields_are_checked_before_any_judge_call() -> None:
    class NeedsReference(HumanRelevance):
        name = "test_needs_reference"
        required = ("user_input", "reference")

    judge = KeywordJudge()
    with pytest.raises(MissingFieldsError, match="reference"):
        await NeedsReference(judge=judge).score(_chat("ok"))
    assert judge.calls == 0


async def test_concurrent_scoring_keeps_usage_apart() -> None:
    metric = HumanRelevance(judge=KeywordJudge())
    chats = [_chat(*(["ok"] * (i % 5 + 1))) for i in range(40)]
    results = await asyncio.gather(*(metric.score(c) for c in chats))
    assert [r.usage.requests for r in results] == [i % 5 + 1 for i in range(40)]


class GatheringJudge(KeywordJudge):
    """A `KeywordJudge` whose answers wait until `expected` questions are in flight at once."""

    def __init__(self, expected: int) -> None:
        super().__init__()
        self.expected = expected
        self.in_flight = self.peak = 0
        self.all_in = asyncio.Event()

    async def run(
        self, step: Step[Any], inputs: Mapping[str, Any], *, usage: Usage | None = None
    ) -> Answer[Any]:
        self.in_flight += 1
        self.peak = max(self.peak, self.in_flight)
        if self.in_flight >= self.expected:
            self.all_in.set()
        try:
            try:
                await asyncio.wait_for(self.all_in.wait(), 10)
            except TimeoutError:  # never all at once: the test's peak assertion says so
                self.all_in.set()
            return await super().run(step, inputs, usage=usage)
        finally:
            self.in_flight -= 1


async def test_one_instance_scores_many_samples_concurrently() -> None:
    """One metric instance, 20 samples at once: every sample's first question is in flight
    before any is answered (the judge holds its answers until then), and each result is the
    one that sample gets alone."""
    chats = [_chat(*(["ok"] * (i % 3 + 1) + ["no"] * (i % 2 + 1))) for i in range(20)]
    metric = HumanRelevance()
    alone = [await metric.score(c, judge=KeywordJudge()) for c in chats]
    gathering = GatheringJudge(expected=len(chats))
    together = await asyncio.gather(*(metric.score(c, judge=gathering) for c in chats))
    assert gathering.peak == len(chats)  # all 20 were being scored at the same moment
    assert [r.to_dict() for r in together] == [r.to_dict() for r in alone]
    assert len({r.value for r in alone}) > 1  # the samples really differ


async def test_a_metric_without_judge_cannot_ask_one() -> None:
    class Sneaky(Metric):
        name = "test_sneaky"

        async def _score(self, sample: MultiTurnSample, ask: Ask) -> MetricResult:
            await ask(STEP, {"message": "x"})
            return MetricResult(1.0, "unreachable")

    with pytest.raises(RuntimeError, match="uses_judge=False"):
        await Sneaky().score(_chat("ok"), judge=KeywordJudge())


def test_unscored_result_passes_through_and_ragas_wrapper_returns_none() -> None:
    class NothingToJudge(Metric):
        name = "test_nothing"

        async def _score(self, sample: MultiTurnSample, ask: Ask) -> MetricResult:
            return MetricResult.unscored("no tool output to judge")

    metric = NothingToJudge()
    conversation = MultiTurnSample(
        user_input=[
            HumanMessage(content="hi"),
            AIMessage(content="", tool_calls=[tc("a")]),
            ToolMessage(content="x"),
        ]
    )
    result = metric.score_sync(conversation)
    assert result.value is None and not result.failed and result.reason == "no tool output to judge"
    assert metric.multi_turn_score(conversation) is None
    assert metric.passed(result) is None


def test_threshold_defaults_and_pass_marks() -> None:
    assert ToolCallAccuracy().threshold == 1.0 and ToolCallF1().threshold == 1.0
    assert HumanRelevance().threshold == 0.5
    lenient = ToolCallAccuracy(threshold=0.5)
    assert lenient.passed(MetricResult(0.5, "r")) is True
    assert ToolCallAccuracy().passed(MetricResult(0.5, "r")) is False


def test_default_judge_comes_from_resolve_judge() -> None:
    judge = HumanRelevance()._judge_for(None)
    assert isinstance(judge, Judge)
    assert type(judge) is type(resolve_judge(None))


async def test_concurrently_cancels_the_rest_and_raises_the_error_itself() -> None:
    cancelled: list[str] = []

    async def slow() -> int:
        try:
            await asyncio.sleep(3600)
        except asyncio.CancelledError:
            cancelled.append("slow")
            raise
        return 0

    async def fails(error: Exception) -> int:
        await asyncio.sleep(0)
        raise error

    async def ok(value: int) -> int:
        return value

    assert await concurrently([ok(1), ok(2)]) == [1, 2]
    with pytest.raises(JudgeError, match="gave up"):
        await concurrently([slow(), fails(JudgeError("s", "gave up"))])
    assert cancelled == ["slow"]
    with pytest.raises(TypeError, match="a bug"):  # a bug is never hidden behind a judge error
        await concurrently([fails(JudgeError("s", "gave up")), fails(TypeError("a bug"))])
