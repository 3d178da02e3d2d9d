"""Repeated judge samples (issue 15 part 2): `samples=N` asks every step N times, each sample its
own request, re-ask, retries and cache entry, at a sampling temperature; keyed verdicts are voted
per key (ties to the earliest sample's value), the share that agreed is each verdict's confidence,
and the metric scores from the vote while its details keep every sample."""

from __future__ import annotations

import json
import os
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from _parcel import PARCEL
from pydantic import BaseModel

from _cli import convoeval
from convoeval import evaluate
from convoeval.judges import JudgeCache, JudgeConfigError, OpenAIJudge, Step, resolve_judge
from convoeval.judges.core.backend import BackendFailure, Failure
from convoeval.judges.ensembles.samples import SAMPLE_TEMPERATURE, quorum
from convoeval.judges.fake import FakeJudge
from convoeval.metrics.conversation_relevancy import VERDICTS, ConversationRelevancy
from convoeval.metrics.user_frustration import UserFrustration
from convoeval.report.details import metric_details

if TYPE_CHECKING:
    from conftest import FaultServer, Verdict

SAMPLE = PARCEL


def _relevancy(*pairs: tuple[bool, bool]) -> list[dict[str, Any]]:
    """One answer per sample: (exchange 0 relevant, exchange 1 relevant), reasons naming it."""
    return [
        {
            "verdicts": [
                {"exchange": 0, "relevant": a, "reason": f"sample {i}"},
                {"exchange": 1, "relevant": b, "reason": f"sample {i}"},
            ]
        }
        for i, (a, b) in enumerate(pairs)
    ]


def _fatal(message: str = "boom") -> BackendFailure:
    return BackendFailure(Failure.FATAL, message)


async def test_keyed_verdicts_are_voted_per_key_with_confidence() -> None:
    judge = FakeJudge(
        {VERDICTS.name: _relevancy((True, False), (True, True), (False, False))}, samples=3
    )
    result = await ConversationRelevancy().score(SAMPLE, judge=judge)
    assert result.value == 0.5  # exchange 0 relevant (2 of 3), exchange 1 not (2 of 3)
    verdicts = result.details["verdicts"]
    assert [v["relevant"] for v in verdicts] == [True, False]
    # the text comes from the earliest sample that agrees with the combined verdict
    assert [v["reason"] for v in verdicts] == ["sample 0", "sample 0"]
    [record] = result.details["judge_samples"]
    assert record["step"] == VERDICTS.name
    assert record["samples"] == 3 and record["answered"] == 3 and record["errors"] == {}
    assert record["confidence"] == {"0": pytest.approx(2 / 3), "1": pytest.approx(2 / 3)}
    assert [[v["relevant"] for v in a["verdicts"]] for a in record["answers"]] == [
        [True, False],
        [True, True],
        [False, False],
    ]
    assert [call.temperature for call in judge.calls] == [SAMPLE_TEMPERATURE] * 3
    assert result.usage.requests == 3


async def test_ties_go_to_the_earliest_samples_value() -> None:
    pairs = ((False, True), (True, False), (True, False), (False, True))
    judge = FakeJudge({VERDICTS.name: _relevancy(*pairs)}, samples=4)
    result = await ConversationRelevancy().score(SAMPLE, judge=judge)
    assert [v["relevant"] for v in result.details["verdicts"]] == [False, True]  # sample 0's
    assert result.details["judge_samples"][0]["confidence"] == {"0": 0.5, "1": 0.5}


async def test_a_three_way_tie_of_a_literal_goes_to_the_first_sample() -> None:
    answers = [
        {"frustration": value, "first_message": None if value == "none" else 2, "reason": value}
        for value in ("unresolved", "resolved", "none")
    ]
    judge = FakeJudge({UserFrustration.steps[0].name: answers}, samples=3)
    result = await UserFrustration().score(SAMPLE, judge=judge)
    [record] = result.details["judge_samples"]
    assert record["confidence"] == {"answer": pytest.approx(1 / 3)}
    assert result.details["frustration"] == "unresolved"  # as the first sample said


async def test_failed_samples_are_left_out_while_a_majority_answers() -> None:
    script: list[Any] = _relevancy((True, True), (False, False), (True, True))
    script[1] = _fatal("the server refused the request")
    judge = FakeJudge({VERDICTS.name: script}, samples=3)
    result = await ConversationRelevancy().score(SAMPLE, judge=judge)
    assert result.value == 1.0
    [record] = result.details["judge_samples"]
    assert record["answered"] == 2 and record["answers"][1] is None
    assert "the server refused the request" in record["errors"]["1"]
    assert record["confidence"] == {"0": 1.0, "1": 1.0}
    assert result.usage.requests == 3


async def test_the_step_fails_when_no_majority_of_samples_answered() -> None:
    script: list[Any] = [_fatal(), _fatal(), *_relevancy((True, True))]
    judge = FakeJudge({VERDICTS.name: script}, samples=3)
    result = await ConversationRelevancy().score(SAMPLE, judge=judge)
    assert result.failed and result.value is None
    assert result.error is not None
    assert "only 1 of 3 judge samples answered (at least 2 needed" in result.error["message"]
    assert result.usage.requests == 3  # every sample's request counted
    assert [quorum(n) for n in (1, 2, 3, 4, 5)] == [1, 2, 2, 3, 3]


async def test_a_sample_that_is_re_asked_counts_its_requests() -> None:
    script: list[Any] = ["not json", *_relevancy((True, True), (True, True), (True, True))]
    judge = FakeJudge({VERDICTS.name: script}, samples=3)
    result = await ConversationRelevancy().score(SAMPLE, judge=judge)
    assert result.value == 1.0 and result.usage.requests == 4
    assert [call.reask is not None for call in judge.calls] == [False, True, False, False]


async def test_every_sample_has_its_own_cache_entry(tmp_path: Path) -> None:
    cache = JudgeCache(tmp_path / "cache.sqlite")
    script = _relevancy((True, False), (True, True), (False, False))
    first = FakeJudge({VERDICTS.name: script}, samples=3, cache=cache)
    one = await ConversationRelevancy().score(SAMPLE, judge=first)
    assert one.usage.requests == 3 and len(cache) == 3
    again = FakeJudge({VERDICTS.name: []}, samples=3, cache=cache)  # any request would fail
    two = await ConversationRelevancy().score(SAMPLE, judge=again)
    assert two.usage.requests == 0 and two.usage.cached == 3 and again.calls == []
    assert two.value == one.value
    assert two.details["judge_samples"] == one.details["judge_samples"]
    single = FakeJudge({VERDICTS.name: _relevancy((True, True))}, cache=cache)
    assert (await ConversationRelevancy().score(SAMPLE, judge=single)).usage.requests == 1


@pytest.mark.parametrize("samples", [1, 3, 5])
async def test_usage_is_samples_times_the_requests(samples: int) -> None:
    script = _relevancy(*[(True, True)] * samples)
    judge = FakeJudge({VERDICTS.name: script}, samples=samples)
    result = await ConversationRelevancy().score(SAMPLE, judge=judge)
    baseline = FakeJudge({VERDICTS.name: _relevancy((True, True))})
    single = await ConversationRelevancy().score(SAMPLE, judge=baseline)
    assert result.usage.requests == samples
    assert result.usage.prompt_tokens == samples * single.usage.prompt_tokens
    assert ("judge_samples" in result.details) is (samples > 1)


class Score(BaseModel):
    """An answer with one numeric score and a rationale."""

    score: int
    reason: str


class Items(BaseModel):
    """An extraction: a list of free-text items."""

    items: list[str]


def _step(output: type[BaseModel]) -> Step[Any]:
    return Step(name="adhoc", version=1, instructions="Judge.", template="{x}", output=output)


async def test_a_single_numeric_field_takes_the_lower_median() -> None:
    answers = [{"score": s, "reason": f"r{s}"} for s in (3, 9, 7, 7)]
    answer = await FakeJudge({"adhoc": answers}, samples=4).run(_step(Score), {"x": "?"})
    assert answer.output == Score(score=7, reason="r7")
    assert answer.vote is not None and answer.vote.confidence == {"answer": 0.5}


async def test_other_answers_take_the_most_common_whole_answer() -> None:
    answers = [{"items": ["a"]}, {"items": ["b"]}, {"items": ["b"]}]
    answer = await FakeJudge({"adhoc": answers}, samples=3).run(_step(Items), {"x": "?"})
    assert answer.output.items == ["b"]
    assert answer.vote is not None and answer.vote.confidence == {"answer": pytest.approx(2 / 3)}


async def test_boolean_fields_of_a_whole_answer_are_voted(verdict_step: Step[Verdict]) -> None:
    answers = [{"verdict": v, "label": "yes" if v else "no"} for v in (False, True, True)]
    judge = FakeJudge({verdict_step.name: answers}, samples=3)
    answer = await judge.run(verdict_step, {"statement": "s"})
    assert answer.output.verdict is True and answer.output.label == "yes"
    assert answer.usage.requests == 3


def test_samples_are_validated_and_described() -> None:
    bad: list[Any] = [0, -1, True, 2.0]
    for samples in bad:
        with pytest.raises(JudgeConfigError, match="samples must be a whole number"):
            FakeJudge({}, samples=samples)
    judge = resolve_judge("openai/m", base_url="http://127.0.0.1:9/v1", samples=3, cache=False)
    assert isinstance(judge, OpenAIJudge) and judge.samples == 3
    assert judge.describe()["samples"] == 3
    assert resolve_judge("openai/m", base_url="http://127.0.0.1:9/v1").describe()["samples"] == 1


def _by_temperature(body: dict[str, Any]) -> dict[str, Any]:
    """Exchange 0 relevant for every sample; exchange 1 only for seed 6 (one sample of three)."""
    keys = body["response_format"]["json_schema"]["schema"]["properties"]["verdicts"]["required"]
    return {
        "verdicts": {
            key: {"relevant": key == "0" or body.get("seed") == 6, "reason": ""} for key in keys
        }
    }


async def test_over_http_each_sample_is_its_own_request(fault_server: FaultServer) -> None:
    fault_server.responder = _by_temperature
    judge = OpenAIJudge(
        "m", base_url=fault_server.url, api_key="sk-test", cache=False, samples=3, seed=5
    )
    result = await ConversationRelevancy().score(SAMPLE, judge=judge)
    await judge.aclose()
    assert fault_server.attempts == 3 and result.usage.requests == 3
    assert sorted(b["seed"] for b in fault_server.bodies) == [5, 6, 7]
    assert {b["temperature"] for b in fault_server.bodies} == {SAMPLE_TEMPERATURE}
    assert result.value == 0.5
    confidence = result.details["judge_samples"][0]["confidence"]
    assert confidence == {"0": 1.0, "1": pytest.approx(2 / 3)}


def test_evaluate_keyword_reaches_the_judge(fault_server: FaultServer, tmp_path: Path) -> None:
    fault_server.responder = _by_temperature
    result = evaluate(
        [SAMPLE],
        ["conversation_relevancy"],
        "openai/m",
        base_url=fault_server.url,
        api_key="sk-test",
        cache=False,
        judge_samples=3,
        output=tmp_path / "r.jsonl",
        show_progress=False,
    )
    assert fault_server.attempts == 3
    [row] = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert len(row["details"]["conversation_relevancy"]["judge_samples"]) == 1
    assert row["scores"]["conversation_relevancy"] == 0.5
    assert result.usage.requests == 3


def test_cli_flag_reaches_the_judge(fault_server: FaultServer, tmp_path: Path) -> None:
    fault_server.responder = _by_temperature
    data = tmp_path / "d.jsonl"
    data.write_text(json.dumps({"user_input": [m.model_dump() for m in SAMPLE.user_input]}) + "\n")
    env = {**os.environ, "CONVOEVAL_CACHE_DIR": str(tmp_path / "cache")}
    args = [
        "run", str(data), "-m", "conversation_relevancy", "--judge", "openai/x",
        "--base-url", fault_server.url, "--api-key", "sk-test", "--judge-samples", "3",
        "-o", str(tmp_path / "r.jsonl"), "-q",
    ]  # fmt: skip
    done = convoeval(*args, env=env, timeout=120)
    assert done.returncode == 0, done.stderr
    assert fault_server.attempts == 3
    [row] = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert row["scores"]["conversation_relevancy"] == 0.5
    assert row["details"]["conversation_relevancy"]["judge_samples"][0]["samples"] == 3
    meta = (tmp_path / "r.jsonl.meta.json").read_text()
    assert '"samples": 3' in meta
    again = convoeval(*args, env=env, timeout=120)
    assert again.returncode == 0, again.stderr  # resumed: nothing asked again
    assert fault_server.attempts == 3
    bad = convoeval(*args[:-3], "--judge-samples", "0", env=env)
    assert bad.returncode == 2 and "--judge-samples" in bad.stderr


async def test_the_report_shows_how_the_samples_agreed() -> None:
    judge = FakeJudge(
        {VERDICTS.name: _relevancy((True, False), (True, True), (False, False))}, samples=3
    )
    result = await ConversationRelevancy().score(SAMPLE, judge=judge)
    row = {"scores": {"r": result.value}, "details": {"r": result.details}}
    html = metric_details("r", row)
    assert "samples agreeing" in html and "<td><bdi>67%</bdi></td>" in html
    assert "<td><bdi>3 of 3</bdi></td>" in html
    assert html.count("<bdi>conversation_relevancy.verdicts</bdi>") == 2  # one row per exchange
