"""FakeJudge: scripted answers go through the same validate / check / re-ask path as real judges."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any

import pytest

from convoeval.judges import FakeJudge, Judge, JudgeError, Step, StepUnsupported
from convoeval.judges.fake import FakeScriptError

if TYPE_CHECKING:
    from conftest import Verdict

NAME = "statement_check"


async def test_queue_of_answer_kinds_is_popped_in_order(verdict_step: Step[Verdict]) -> None:
    model = verdict_step.output(verdict=False, label="no")
    judge = FakeJudge(
        {NAME: [{"verdict": True, "label": "yes"}, '{"verdict": false, "label": "no"}', model]}
    )
    outputs = [(await judge.run(verdict_step, {"statement": s})).output for s in "abc"]
    assert [o.verdict for o in outputs] == [True, False, False]
    assert all(isinstance(o, verdict_step.output) for o in outputs)
    assert judge.remaining(NAME) == 0
    with pytest.raises(FakeScriptError, match="used up after 3 answers"):
        await judge.run(verdict_step, {"statement": "d"})


async def test_calls_and_usage_are_recorded(verdict_step: Step[Verdict]) -> None:
    judge = FakeJudge({NAME: [{"verdict": True, "label": "yes"}]})
    answer = await judge.run(verdict_step, {"statement": "grass is green"})
    assert answer.usage.requests == 1
    assert answer.usage.prompt_tokens > 0 and answer.usage.completion_tokens > 0
    assert answer.usage.cached == 0
    [call] = judge.calls
    assert call.step == NAME and call.inputs == {"statement": "grass is green"}
    assert call.prompt == "Statement: grass is green" and call.reask is None
    assert judge.calls_for(NAME) == [call] and judge.calls_for("other") == []
    assert isinstance(judge, Judge)
    assert judge.describe() == {"kind": "fake", "name": "fake", "steps": [NAME]}


async def test_function_script_sees_the_inputs(verdict_step: Step[Verdict]) -> None:
    def answer(inputs: Mapping[str, Any]) -> dict[str, Any]:
        true = "true" in str(inputs["statement"])
        return {"verdict": true, "label": "yes" if true else "no"}

    judge = FakeJudge({NAME: answer})
    assert (await judge.run(verdict_step, {"statement": "this is true"})).output.verdict is True
    assert (await judge.run(verdict_step, {"statement": "nope"})).output.verdict is False
    assert judge.remaining(NAME) is None and len(judge.calls) == 2


async def test_invalid_answer_is_reasked_once(verdict_step: Step[Verdict]) -> None:
    judge = FakeJudge({NAME: ["not json at all", {"verdict": True, "label": "yes"}]})
    answer = await judge.run(verdict_step, {"statement": "x"})
    assert answer.output.verdict is True and answer.usage.requests == 2
    first, second = judge.calls
    assert first.reask is None
    assert second.reask is not None and "does not match the output schema" in second.reask


async def test_failed_check_is_reasked_then_judge_error(verdict_step: Step[Verdict]) -> None:
    bad = {"verdict": True, "label": "no"}
    judge = FakeJudge({NAME: [bad, bad]})
    with pytest.raises(JudgeError, match="label must be 'yes'") as caught:
        await judge.run(verdict_step, {"statement": "x"})
    assert caught.value.step == NAME and caught.value.raw == '{"verdict": true, "label": "no"}'
    assert len(judge.calls) == 2 and judge.remaining(NAME) == 0


async def test_scripted_exceptions_are_raised(verdict_step: Step[Verdict]) -> None:
    judge = FakeJudge({NAME: [StepUnsupported(NAME, "not offline"), TimeoutError]})
    with pytest.raises(StepUnsupported, match="not offline"):
        await judge.run(verdict_step, {"statement": "x"})
    with pytest.raises(TimeoutError):
        await judge.run(verdict_step, {"statement": "x"})
    assert len(judge.calls) == 2


async def test_unscripted_step_is_a_clear_error(verdict_step: Step[Verdict]) -> None:
    judge = FakeJudge({"other_step": []})
    with pytest.raises(FakeScriptError, match=r"no script for step 'statement_check'.*other_step"):
        await judge.run(verdict_step, {"statement": "x"})
    assert not isinstance(FakeScriptError("x"), JudgeError)  # a test mistake, not a judge failure


def test_a_single_answer_must_be_wrapped() -> None:
    with pytest.raises(TypeError, match="wrap it in a list"):
        FakeJudge({NAME: {"verdict": True}})  # type: ignore[dict-item]


async def test_fenced_or_wrapped_json_is_accepted(verdict_step: Step[Verdict]) -> None:
    fenced = '```json\n{"verdict": true, "label": "yes"}\n```'
    wrapped = 'Here it is: {"verdict": false, "label": "no"} Hope it helps.'
    judge = FakeJudge({NAME: [fenced, wrapped]})
    assert (await judge.run(verdict_step, {"statement": "a"})).output.verdict is True
    assert (await judge.run(verdict_step, {"statement": "b"})).output.verdict is False
    assert len(judge.calls) == 2  # neither needed a re-ask
