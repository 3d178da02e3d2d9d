"""docs/migrating-from-ragas.md: every `python` block that does not import Ragas runs as written
(its asserts are the numbers the page promises); `evaluator_llm` is bound to a scripted judge."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

from convoeval.judges.fake import FakeJudge
from convoeval.metrics.agent_goal_accuracy import WITH_REFERENCE
from convoeval.metrics.rubrics import RUBRIC

PAGE = Path(__file__).resolve().parents[2] / "docs" / "migrating-from-ragas.md"
BLOCKS = re.findall(r"```python\n(.*?)```", PAGE.read_text(encoding="utf-8"), re.S)
AFTER = [b for b in BLOCKS if not re.search(r"^(from|import) ragas", b, re.M)]
JUDGE_LINE = 'evaluator_llm = "openai/gpt-4o-mini"\n'


def test_the_page_has_before_and_after_examples() -> None:
    before = [b for b in BLOCKS if "from ragas" in b]
    assert len(before) >= 2 and len(AFTER) >= 5


@pytest.mark.parametrize("code", AFTER, ids=[f"block{i}" for i in range(len(AFTER))])
def test_after_block_runs(code: str) -> None:
    namespace: dict[str, object] = {}
    if JUDGE_LINE in code:
        code = code.replace(JUDGE_LINE, "")
        namespace["evaluator_llm"] = FakeJudge(
            {
                WITH_REFERENCE.name: [
                    {"end_state": "booked 8pm", "achieved": True, "reason": "booked"}
                ],
                RUBRIC.name: [{"level": 4, "reason": "minor issues"}],
            }
        )
    exec(compile(code, str(PAGE), "exec"), namespace)
