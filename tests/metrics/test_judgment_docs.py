"""The examples in docs/metrics for the conversation judgments run as written and give what their
comments say: the LLM judge is the scripted server on 127.0.0.1 behind OPENAI_BASE_URL."""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest

if TYPE_CHECKING:
    from conftest import FaultServer

DOCS = Path(__file__).resolve().parents[2] / "docs" / "metrics"


def _run(name: str) -> dict[str, Any]:
    doc = DOCS / name
    code = doc.read_text(encoding="utf-8").split("```python\n", 1)[1].split("```", 1)[0]
    namespace: dict[str, Any] = {}
    exec(compile(code, str(doc), "exec"), namespace)
    return namespace


@pytest.fixture
def llm(fault_server: FaultServer, monkeypatch: pytest.MonkeyPatch) -> FaultServer:
    monkeypatch.setenv("OPENAI_BASE_URL", fault_server.url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-test")
    return fault_server


def _verdicts(key: str, ok: str, values: dict[int, bool]) -> dict[str, Any]:
    return {
        "verdicts": [
            {key: k, ok: v, "reason": "" if v else "scripted miss"} for k, v in values.items()
        ]
    }


def test_knowledge_retention_example(llm: FaultServer) -> None:
    llm.reply({"facts": [{"message": 0, "fact": "name Ana"}, {"message": 0, "fact": "order 4417"}]})
    llm.reply(_verdicts("message", "retained", {1: True, 3: False}))
    metric = _run("knowledge-retention.md")["metric"]
    assert (metric.score, metric.is_successful()) == (0.5, False)
    assert "message 4" in metric.reason and llm.attempts == 2  # user_input[3]


def test_role_adherence_example(llm: FaultServer) -> None:
    llm.reply(_verdicts("message", "in_role", {1: True, 3: False}))
    metric = _run("role-adherence.md")["metric"]
    assert (metric.score, metric.is_successful()) == (0.5, True)
    assert (
        "message 4" in metric.reason and "Cards > Block" in llm.bodies[0]["messages"][1]["content"]
    )


def test_conversation_completeness_example(llm: FaultServer) -> None:
    llm.reply(
        {
            "intentions": [
                {"message": 0, "intention": "locate the parcel"},
                {"message": 0, "intention": "change the delivery address"},
            ]
        }
    )
    llm.reply(_verdicts("intention", "satisfied", {1: True, 2: False}))
    metric = _run("conversation-completeness.md")["metric"]
    assert (metric.score, metric.is_successful()) == (0.5, True)
    assert "change the delivery address" in metric.reason


def test_user_frustration_example(llm: FaultServer) -> None:
    llm.reply({"frustration": "resolved", "first_message": 2, "reason": "refund calmed them"})
    result = _run("user-frustration.md")["result"]
    assert (result.value, result.details["frustration"], result.details["first_message"]) == (
        0.5,
        "resolved",
        2,
    )


def test_turn_relevancy_example() -> None:
    metric = _run("turn-relevancy.md")["metric"]
    assert (metric.score, metric.is_successful(), metric.window_size) == (0.5, True, 10)


def test_conversational_geval_example(llm: FaultServer) -> None:
    llm.reply({"score": 8, "reason": "It apologises first."})
    metric = _run("conversational-geval.md")["empathy"]
    assert (metric.score, metric.name, metric.reason) == (
        0.8,
        "geval_empathy",
        "8/10: It apologises first.",
    )
    assert "<<<SCENARIO" in llm.bodies[0]["messages"][1]["content"]
