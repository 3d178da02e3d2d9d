"""Every judge step's prompts and output schema are tied to its `Step.version` (issue 10 §4).

Resume refuses to mix rows scored under different step fingerprints; this table makes sure a
prompt or schema change also bumps the version, so the change is visible and deliberate.
"""

from __future__ import annotations

import hashlib
import inspect
import json
from typing import Any

import pytest

from convoeval import AIMessage, HumanMessage, MultiTurnSample, SystemMessage, ToolCall, ToolMessage
from convoeval.judges.fake import FakeJudge
from convoeval.judges.protocol.step import Step
from convoeval.metrics import METRICS

#: step name -> (version, fingerprint). Change a prompt or schema: bump the version, pin both.
PINNED = {
    "aspect_critic.verdict": (2, "11603938e8c28b02"),
    "agent_goal_accuracy.with_reference": (3, "2b33cfdb7b34d0ff"),
    "agent_goal_accuracy.without_reference": (3, "fee3f0ebb39c26e3"),
    "conversation_completeness.intentions": (3, "9d52e83f7dbdf493"),
    "conversation_completeness.verdicts": (4, "3caf6988a5a92425"),
    "conversational_geval.score": (2, "4b1182e51a90615e"),
    "conversation_relevancy.verdicts": (5, "3c6d902788d99120"),
    "knowledge_retention.facts": (3, "5432d35d99fadc47"),
    "knowledge_retention.verdicts": (4, "6fb5e1e85a4d01a4"),
    "role_adherence.verdicts": (4, "d1bc8b881264bf04"),
    "rubrics.level": (3, "8b0f05c53cb98fff"),
    "topic_adherence.answered": (4, "1edfc6b6368ecb47"),
    "topic_adherence.extract_topics": (3, "c5543db650e8b103"),
    "topic_adherence.in_scope": (4, "ca15fe9f898a4ce8"),
    "tool_use.verdicts": (4, "13446c22369e9af0"),
    "user_frustration.verdict": (2, "7b2281a8e6a06140"),
}
#: step name -> (version, hash of its rendered prompts for SAMPLE): ties the way conversations and
#: data values are rendered (schema/render.py, the metrics' input builders) to the version too.
RENDERED: dict[str, tuple[int, str]] = {
    "aspect_critic.verdict": (2, "cf72b5735bc66c8f"),
    "agent_goal_accuracy.with_reference": (3, "823258ac850e7573"),
    "agent_goal_accuracy.without_reference": (3, "a6424dfce232eb70"),
    "conversation_completeness.intentions": (3, "ad8d762b1ea14d6d"),
    "conversation_completeness.verdicts": (4, "6805fd1f61498bd7"),
    "conversational_geval.score": (2, "df9e9f1a50ddbb59"),
    "conversation_relevancy.verdicts": (5, "89185a4405c2564c"),
    "knowledge_retention.facts": (3, "eb3d44a14a6b1da8"),
    "knowledge_retention.verdicts": (4, "03be01505cd2a940"),
    "role_adherence.verdicts": (4, "dba7ebc4241e3d18"),
    "rubrics.level": (3, "b678b75a955e7a1c"),
    "topic_adherence.answered": (4, "f495b18a863e4d64"),
    "topic_adherence.extract_topics": (3, "5b851a4815a175ed"),
    "topic_adherence.in_scope": (4, "073c7df6e572f6dc"),
    "tool_use.verdicts": (4, "4958dddd2a9bfb9c"),
    "user_frustration.verdict": (2, "edd8eae5274e2416"),
}
SAMPLE = MultiTurnSample(
    user_input=[
        SystemMessage(content="You help with orders."),
        HumanMessage(content="Where is order 7?\nIt was due Monday."),
        AIMessage(content="", tool_calls=[ToolCall(name="get_order", args={"id": 7}, id="c1")]),
        ToolMessage(content='{"status": "late"}', tool_call_id="c1"),
        AIMessage(content="It is late; it ships today.\nSorry about that."),
    ],
    reference_topics=["orders and shipping", "returns"],
    reference="The user learns when the order ships.",
    rubrics={"1": "unhelpful", "2": "helpful"},
    chatbot_role="A polite order-support agent.",
)
#: Constructor options that do not shape scores (recorded apart, or display only).
NOT_CONFIG = {"self", "threshold", "judge", "llm", "async_mode", "verbose_mode"}


def _steps() -> dict[str, Step[Any]]:
    return {step.name: step for cls in METRICS.values() for step in cls.steps}


def test_every_step_of_every_metric_is_pinned() -> None:
    assert set(_steps()) == set(PINNED)
    judged = {name for name, cls in METRICS.items() if cls.uses_judge}
    assert judged == {name for name, cls in METRICS.items() if cls.steps}


@pytest.mark.parametrize("name", sorted(PINNED))
def test_prompt_and_schema_match_their_version(name: str) -> None:
    step = _steps()[name]
    version, fingerprint = PINNED[name]
    now = step.fingerprint()
    if step.version != version:
        pytest.fail(f"step {name!r} is now version {step.version}: pin ({step.version}, {now!r})")
    assert now == fingerprint, (
        f"the prompt or output schema of step {name!r} changed but its version is still "
        f"{version}: bump Step.version to {version + 1} (rows scored with the old prompt must "
        f"not be resumed with the new one) and pin ({version + 1}, {now!r}) in PINNED"
    )


def test_a_changed_prompt_changes_the_fingerprint() -> None:
    step = _steps()["topic_adherence.answered"]
    changed = Step(step.name, step.version, step.instructions + " ", step.template, step.output)
    assert changed.fingerprint() != step.fingerprint()


@pytest.mark.parametrize("name", sorted(METRICS))
def test_config_names_every_option_that_shapes_scores(name: str) -> None:
    cls = METRICS[name]
    options = set(inspect.signature(cls.__init__).parameters) - NOT_CONFIG
    config = cls().config()
    assert set(config) == options
    assert json.loads(json.dumps(config)) == config


#: Answers for the conversation judgments of issue 13 (valid for SAMPLE), by step name.
CONVERSATION_ANSWERS = {
    "knowledge_retention.facts": {"facts": [{"message": 1, "fact": "order 7 was due Monday"}]},
    "knowledge_retention.verdicts": {"verdicts": [{"message": 4, "retained": True, "reason": ""}]},
    "role_adherence.verdicts": {"verdicts": [{"message": 4, "in_role": True, "reason": ""}]},
    "conversation_completeness.intentions": {
        "intentions": [{"message": 1, "intention": "find order 7"}]
    },
    "conversation_completeness.verdicts": {
        "verdicts": [{"intention": 1, "satisfied": True, "reason": ""}]
    },
    "user_frustration.verdict": {"frustration": "none", "first_message": None, "reason": "calm"},
    "aspect_critic.verdict": {"reason": "found", "verdict": 1},
    "conversational_geval.score": {"score": 7, "reason": "polite"},
    "tool_use.verdicts": {
        "verdicts": [{"call": 0, "right_tool": True, "right_arguments": True, "reason": ""}],
        "missing": [],
    },
}


def _answer(step: str, inputs: Any) -> dict[str, Any]:
    if step in CONVERSATION_ANSWERS:
        return CONVERSATION_ANSWERS[step]
    if step.endswith("extract_topics"):
        return {"topics": [{"topic": "late order", "message_index": 1, "quote": "order 7"}]}
    if step.endswith(("answered", "in_scope")):
        field = "answered" if step.endswith("answered") else "in_scope"
        return {"verdicts": [{"topic": key, field: True} for key in inputs.expected_keys()]}
    if step.endswith("verdicts"):
        return {"verdicts": [{"exchange": 0, "relevant": True, "reason": ""}]}
    if step.startswith("agent_goal"):
        return {"user_goal": "x", "end_state": "x", "achieved": True, "reason": "x"}
    return {"level": 2, "reason": "x"}


#: Options a metric needs to ask its steps at all (its defaults would leave it nothing to judge).
RENDER_OPTIONS: dict[str, dict[str, Any]] = {
    "aspect_critic": {"name": "helpful", "definition": "The assistant finds the order."},
    "conversational_geval": {
        "name": "Politeness",
        "criteria": "The assistant is polite.",
        "evaluation_params": ["chatbot_role"],
    },
}


def _rendered() -> dict[str, str]:
    script = {name: (lambda inputs, name=name: _answer(name, inputs)) for name in PINNED}
    judge = FakeJudge(script)
    for cls in METRICS.values():
        if cls.uses_judge:
            metric = cls(**RENDER_OPTIONS.get(cls.name, {}))
            assert metric.score_sync(SAMPLE, judge=judge).error is None
    return {
        call.step: hashlib.sha256((call.system + "\n" + call.prompt).encode()).hexdigest()[:16]
        for call in judge.calls
    }


def test_rendered_prompts_match_their_version() -> None:
    rendered = _rendered()
    assert set(rendered) == set(PINNED)
    for name, digest in sorted(rendered.items()):
        version = _steps()[name].version
        pinned_version, pinned = RENDERED.get(name, (None, None))
        assert (version, digest) == (pinned_version, pinned), (
            f"the rendered prompt of step {name!r} changed (how the conversation or a data value "
            f"is shown): if the version is unchanged, bump Step.version; then pin "
            f"({version if version != pinned_version else version + 1}, {digest!r}) in RENDERED"
        )
