"""Every judge step's prompts and output schema are tied to its `Step.version` (issue 10 §4).

Resume refuses to mix rows scored under different step fingerprints; this table makes sure a
prompt or schema change also bumps the version, so the change is visible and deliberate.
"""

from __future__ import annotations

import inspect
import json
from typing import Any

import pytest

from convoeval.judges.step import Step
from convoeval.metrics import METRICS

#: step name -> (version, fingerprint). Change a prompt or schema: bump the version, pin both.
PINNED = {
    "agent_goal_accuracy.with_reference": (2, "96754372da617662"),
    "agent_goal_accuracy.without_reference": (2, "00799f13828cafa3"),
    "conversation_relevancy.verdicts": (2, "bce520ccbdf7fee0"),
    "rubrics.level": (2, "c7b3ec08b99bf919"),
    "topic_adherence.answered": (2, "19fce33ec49bdffc"),
    "topic_adherence.extract_topics": (2, "fceff0df5f57f5a4"),
    "topic_adherence.in_scope": (2, "5f78f9216ee773af"),
}
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
