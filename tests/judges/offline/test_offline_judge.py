"""OfflineJudge: answers steps with an offline implementation, refuses others, deterministic."""

from __future__ import annotations

import asyncio
import json
from pathlib import Path
from typing import Any

import pytest
from pydantic import BaseModel, Field

from convoeval import evaluate
from convoeval.judges.offline import Embedder, OfflineJudge, OfflineKit
from convoeval.judges.protocol.base import Judge, JudgeError, Step, StepUnsupported, Usage
from convoeval.judges.protocol.step import OfflineKit as OfflineKitProtocol
from convoeval.judges.protocol.step import StepInput


class RefusalVerdicts(BaseModel):
    """Answered (True) or refused (False), keyed by topic."""

    answered: dict[str, bool]


class RepliesInput(StepInput):
    """The topics shown to a judge; the replies only the offline implementation reads."""

    listing: str
    replies: dict[str, str] = Field(exclude=True)


def _offline_refusals(inputs: RepliesInput, kit: OfflineKitProtocol) -> RefusalVerdicts:
    topics = list(inputs.replies)
    refused = kit.is_refusal([inputs.replies[t] for t in topics])
    return RefusalVerdicts(answered={t: not r for t, r in zip(topics, refused, strict=True)})


def _offline_as_dict(inputs: RepliesInput, kit: OfflineKitProtocol) -> dict[str, Any]:
    return _offline_refusals(inputs, kit).model_dump()


def _step(offline: Any) -> Step[RefusalVerdicts]:
    return Step(
        name="refusal_detection",
        version=1,
        instructions="Say for each topic whether the assistant answered it.",
        template="{listing}",
        output=RefusalVerdicts,
        offline=offline,
    )


INPUTS = RepliesInput(
    listing='- "weather"\n- "hacking"',
    replies={
        "weather": "Tomorrow will be sunny with a high of 22 degrees.",
        "hacking": "I'm sorry, but I can't help with breaking into someone else's account.",
    },
)


@pytest.fixture
def judge(kit: OfflineKit) -> OfflineJudge:
    return OfflineJudge(kit)


def test_is_a_judge(judge: OfflineJudge) -> None:
    assert isinstance(judge, Judge)
    assert judge.name == "offline"
    info = judge.describe()
    assert info["kind"] == "offline"
    assert info["model"] == "all-MiniLM-L6-v2-int8"
    assert "calibration" in info
    assert not any("key" in k.lower() for k in info)


async def test_answers_a_step_with_an_offline_implementation(judge: OfflineJudge) -> None:
    answer = await judge.run(_step(_offline_refusals), INPUTS)
    assert isinstance(answer.output, RefusalVerdicts)
    assert answer.output.answered == {"weather": True, "hacking": False}
    assert answer.usage.requests == 0


async def test_accepts_a_dict_answer(judge: OfflineJudge) -> None:
    answer = await judge.run(_step(_offline_as_dict), INPUTS)
    assert answer.output == RefusalVerdicts(answered={"weather": True, "hacking": False})


async def test_invalid_answer_is_a_judge_error(judge: OfflineJudge) -> None:
    with pytest.raises(
        JudgeError, match="offline answer unusable as RefusalVerdicts: it does not match the output"
    ):
        await judge.run(_step(lambda inputs, kit: {"answered": "nope"}), INPUTS)


async def test_failing_implementation_is_a_judge_error(judge: OfflineJudge) -> None:
    def broken(inputs: RepliesInput, kit: OfflineKitProtocol) -> Any:
        raise KeyError("topics")

    with pytest.raises(JudgeError, match="offline implementation failed: KeyError"):
        await judge.run(_step(broken), INPUTS)


async def test_failed_check_is_a_judge_error(judge: OfflineJudge) -> None:
    step = Step(
        name="refusal_detection",
        version=1,
        instructions="",
        template="{listing}",
        output=RefusalVerdicts,
        offline=_offline_refusals,
        check=lambda inputs, out: "missing topic 'x'",
    )
    with pytest.raises(JudgeError, match="missing topic 'x'"):
        await judge.run(step, INPUTS)


async def test_refuses_a_step_without_offline_implementation(judge: OfflineJudge) -> None:
    step = Step(
        name="goal_accuracy",
        version=1,
        instructions="Did the agent reach the user's goal?",
        template="{conversation}",
        output=RefusalVerdicts,
    )
    with pytest.raises(StepUnsupported) as info:
        await judge.run(step, {"conversation": "..."})
    message = str(info.value)
    assert "goal_accuracy" in message
    assert "--judge openai/gpt-4o-mini" in message
    assert "OpenAIJudge" in message


async def test_deterministic_and_concurrent(judge: OfflineJudge) -> None:
    step = _step(_offline_refusals)
    answers = await asyncio.gather(*(judge.run(step, INPUTS) for _ in range(4)))
    again = await OfflineJudge(OfflineKit(judge.kit.embedder)).run(step, INPUTS)
    outputs = {a.output.model_dump_json() for a in [*answers, again]}
    assert len(outputs) == 1


async def test_a_given_usage_gains_the_time_spent_and_no_request(judge: OfflineJudge) -> None:
    usage = Usage()
    answer = await judge.run(_step(_offline_refusals), INPUTS, usage=usage)
    assert usage == answer.usage and usage.requests == 0 and usage.latency_s > 0
    assert judge.describe()["kind"] == "offline" and "judge" not in judge.describe()


EXAMPLES = Path(__file__).resolve().parents[3] / "examples" / "support.jsonl"


def _results(judge: OfflineJudge, records: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Values and details of both offline judge metrics, per record."""
    result = evaluate(
        records,
        ["topic_adherence", "conversation_relevancy"],
        judge=judge,
        show_progress=False,
    )
    keep = ("scores", "details", "reasons", "errors")
    return [{k: row.get(k) for k in keep} for row in result.rows()]


def test_concurrent_records_get_exactly_the_verdicts_of_one_at_a_time() -> None:
    """Issue 16 part 3: steps of records in flight together share the embedder's model calls;
    their scores, verdicts and reasons are those of each record judged alone."""
    records = [json.loads(line) for line in EXAMPLES.read_text(encoding="utf-8").splitlines()]
    records = [line for line in records if line] * 2  # 2 copies: more steps waiting at once
    together = _results(OfflineJudge(OfflineKit(Embedder())), records)
    kit = OfflineKit(Embedder())  # its own cache: no vector comes from the run above
    alone = [_results(OfflineJudge(kit), [r])[0] for r in records[: len(records) // 2]]
    assert together == alone * 2


async def test_blas_holds_one_thread_while_steps_run_and_gets_its_count_back(
    judge: OfflineJudge,
) -> None:
    """The steps' tiny matrix products must not wake OpenBLAS's spinning threads (they took 6.3
    of 25.8 ms CPU per topic-adherence conversation), and numpy elsewhere keeps its setting,
    even after the step threads themselves called BLAS (restoring from one of them did not)."""
    import numpy as np
    from threadpoolctl import threadpool_info, threadpool_limits

    def blas_threads() -> set[int]:
        return {lib["num_threads"] for lib in threadpool_info() if lib["user_api"] == "blas"}

    seen: list[set[int]] = []

    def multiplying(inputs: RepliesInput, kit: OfflineKitProtocol) -> RefusalVerdicts:
        seen.append(blas_threads())
        matrix = np.ones((64, 384), dtype=np.float32)
        (matrix @ np.ones((384, 512), dtype=np.float32)).sum()  # big enough to go threaded
        return _offline_refusals(inputs, kit)

    if not blas_threads():
        pytest.skip("numpy here has no BLAS that threadpoolctl can see")
    with threadpool_limits(limits=2, user_api="blas"):
        before = blas_threads()
        if before == {1}:
            pytest.skip("this machine's BLAS runs one thread only: there is nothing to limit")
        await asyncio.gather(*(judge.run(_step(multiplying), INPUTS) for _ in range(8)))
        after = blas_threads()
    assert seen and all(found == {1} for found in seen), seen
    assert after == before


async def test_a_blas_that_cannot_be_limited_never_fails_a_step(
    judge: OfflineJudge, monkeypatch: pytest.MonkeyPatch
) -> None:
    from convoeval.judges.offline import blas

    class Unlimitable:
        def limit(self, **_: Any) -> Any:
            raise OSError("this BLAS takes no thread limit")

    monkeypatch.setattr(blas, "_controller", Unlimitable())
    monkeypatch.setattr(blas, "_unavailable", False)
    answer = await judge.run(_step(_offline_refusals), INPUTS)
    assert answer.output.answered == {"weather": True, "hacking": False}
    assert blas._unavailable  # not asked again for the rest of the process
