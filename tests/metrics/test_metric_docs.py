"""The examples in docs/metrics run as written and print what their comments say."""

from __future__ import annotations

from pathlib import Path
from typing import Any

DOCS = Path(__file__).resolve().parents[2] / "docs" / "metrics"


def _run(name: str) -> dict[str, Any]:
    doc = DOCS / name
    code = doc.read_text(encoding="utf-8").split("```python\n", 1)[1].split("```", 1)[0]
    namespace: dict[str, Any] = {}
    exec(compile(code, str(doc), "exec"), namespace)
    return namespace


def test_topic_adherence_example() -> None:
    result = _run("topic-adherence.md")["result"]
    assert result.value == 1.0
    assert (result.details["tp"], result.details["tn"]) == (1, 1)


def test_conversation_relevancy_example() -> None:
    metric = _run("conversation-relevancy.md")["metric"]
    assert metric.score == 0.5 and metric.is_successful() is True
    assert metric.reason.startswith("1 of 2 replies were relevant; not relevant: exchange 1:")
