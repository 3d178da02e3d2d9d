"""The conversation judgments of issue 13 end to end: `convoeval run` over HTTP with structured
output against the scripted server on 127.0.0.1 (exact scores, columns such as `geval_tone`, and
request counts), the role pre-check before any request, the offline judge refused; one step
through the real LLM (llama.cpp serving SmolLM2: plumbing, about 10 s; a keyed role-adherence step
took 106 s there)."""

from __future__ import annotations

import json
import os
import subprocess
from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from _cli import convoeval
from convoeval.judges import OpenAIJudge
from convoeval.metrics import (
    ConversationalCriteria,
    KnowledgeRetention,
    RoleAdherence,
    UserFrustration,
)

if TYPE_CHECKING:
    from conftest import FaultServer

NAMES = [
    "knowledge_retention",
    "role_adherence",
    "conversation_completeness",
    "user_frustration",
    "turn_relevancy",
]
#: One answer valid for every step of the five metrics on a one-exchange conversation (each
#: output model ignores the other steps' fields).
UNIVERSAL = {
    "facts": [{"message": 0, "fact": "the user is Ana"}],
    "intentions": [{"message": 0, "intention": "learn the opening hours"}],
    "verdicts": [
        {
            "message": 1,
            "intention": 1,
            "exchange": 0,
            "retained": True,
            "in_role": False,
            "satisfied": True,
            "relevant": True,
            "reason": "scripted",
        }
    ],
    "frustration": "resolved",
    "first_message": 0,
    "reason": "scripted",
}


def _record(i: int, role: str | None) -> dict[str, Any]:
    record: dict[str, Any] = {
        "id": f"r{i}",
        "turns": [
            {"role": "user", "content": "I'm Ana. When are you open?"},
            {"role": "assistant", "content": f"We open at {9 + i}, Ana."},
        ],
    }
    if role is not None:
        record["chatbot_role"] = role
    return record


def _run(
    tmp_path: Path, url: str, *extra: str, names: Sequence[str] = NAMES
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CONVOEVAL_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("OPENAI_API_KEY", None)
    metrics = [arg for name in names for arg in ("-m", name)]
    command = [
        "run", "d.jsonl", *metrics,
        "--judge", "openai/test-model", "--base-url", url, "--api-key", "sk-test",
        "-o", "r.jsonl", "--quiet", *extra,
    ]  # fmt: skip
    return convoeval(*command, cwd=tmp_path, env=env)


def test_cli_scores_every_judgment_over_http(tmp_path: Path, fault_server: FaultServer) -> None:
    fault_server.reply(UNIVERSAL).forever()
    lines = [json.dumps(_record(i, "A bank's front desk.")) for i in range(2)]
    (tmp_path / "d.jsonl").write_text("\n".join(lines) + "\n")
    done = _run(tmp_path, fault_server.url)
    assert done.returncode == 0, done.stderr
    rows = [json.loads(x) for x in (tmp_path / "r.jsonl").read_text().splitlines()]
    expected = {
        "knowledge_retention": 1.0,
        "role_adherence": 0.0,
        "conversation_completeness": 1.0,
        "user_frustration": 0.5,
        "turn_relevancy": 1.0,
    }
    assert [r["scores"] for r in rows] == [expected, expected]
    assert rows[0]["details"]["user_frustration"]["first_message"] == 0
    # 2 + 1 + 2 + 1 + 1 requests per conversation, each with its step's schema.
    assert fault_server.attempts == 14
    assert all(b["response_format"]["type"] == "json_schema" for b in fault_server.bodies)


def test_cli_scores_conversational_geval_under_its_own_column(
    tmp_path: Path, fault_server: FaultServer
) -> None:
    def grade(body: dict[str, Any]) -> dict[str, Any]:
        prompt = body["messages"][-1]["content"]
        return {"score": 8 if "We open at 9," in prompt else 3, "reason": "scripted"}

    fault_server.responder = grade
    lines = [json.dumps(_record(i, None)) for i in range(2)]
    (tmp_path / "d.jsonl").write_text("\n".join(lines) + "\n")
    spec = "conversational_geval:name=Tone,criteria=Warm and calm"
    done = _run(tmp_path, fault_server.url, names=[spec])
    assert done.returncode == 0, done.stderr
    rows = [json.loads(x) for x in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert [r["scores"] for r in rows] == [{"geval_tone": 0.8}, {"geval_tone": 0.3}]
    assert rows[0]["reasons"]["geval_tone"] == "8/10: scripted"
    assert fault_server.attempts == 2  # one request per conversation
    prompt = fault_server.bodies[0]["messages"][-1]["content"]
    assert 'Criteria "Tone": "Warm and calm"' in prompt


def test_a_record_without_a_role_stops_the_run_before_any_request(
    tmp_path: Path, fault_server: FaultServer
) -> None:
    fault_server.reply(UNIVERSAL).forever()
    lines = [json.dumps(_record(0, "a bot")), json.dumps(_record(1, None))]
    (tmp_path / "d.jsonl").write_text("\n".join(lines) + "\n")
    done = _run(tmp_path, fault_server.url)
    assert done.returncode == 2
    assert "chatbot_role" in done.stderr and "role_adherence" in done.stderr
    assert fault_server.attempts == 0


def test_the_offline_judge_refuses_them_by_name() -> None:
    result = KnowledgeRetention().score_sync(_record(0, None), judge="offline")
    assert result.failed and "use an LLM judge" in (result.error or {}).get("message", "")


async def test_user_frustration_through_the_real_llm(llama_server: str) -> None:
    judge = OpenAIJudge("smollm2", base_url=llama_server, cache=False, max_tokens=120)
    calm = {"user_input": [{"type": "human", "content": "Hi"}, {"type": "ai", "content": "Hello!"}]}
    try:
        result = await UserFrustration().score(calm, judge=judge)
    finally:
        await judge.aclose()
    assert result.error is None and result.value in (0.0, 0.5, 1.0)
    assert result.details["frustration"] in ("none", "resolved", "unresolved")
    assert result.usage.requests >= 1 and result.usage.prompt_tokens > 0


async def test_keyed_role_verdicts_and_criteria_through_the_real_llm(llama_server: str) -> None:
    """Plumbing with the real model: the role step's schema names the one reply asked and every
    string is bounded, so with max_tokens above that bound both metrics score in one request."""
    sample = {
        "user_input": [
            {"type": "human", "content": "Name a fruit."},
            {"type": "ai", "content": "An apple is a fruit."},
        ],
        "chatbot_role": "A helpful tutor.",
    }
    criteria = ConversationalCriteria(name="Polite", criteria="The assistant is polite.")
    results = []
    for metric in (RoleAdherence(), criteria):
        judge = OpenAIJudge(
            "smollm2", base_url=llama_server, cache=False, max_tokens=400, timeout=300
        )  # a loaded CPU can make one bounded answer take a minute; one request still
        try:
            results.append(await metric.score(sample, judge=judge))
        finally:
            await judge.aclose()
    for result in results:
        assert result.error is None and result.value is not None and 0.0 <= result.value <= 1.0
        assert result.usage.requests == 1  # no re-ask, no retry
    role = results[0]
    assert [v["message"] for v in role.details["verdicts"]] == [1]  # the one reply, by number


async def test_user_frustration_over_http(fault_server: FaultServer) -> None:
    fault_server.reply({"frustration": "unresolved", "first_message": 5, "reason": "x"})
    fault_server.reply({"frustration": "unresolved", "first_message": 0, "reason": "still"})
    judge = OpenAIJudge("fault-model", base_url=fault_server.url, api_key="sk-test", cache=False)
    try:
        result = await UserFrustration().score(_record(0, None), judge=judge)
    finally:
        await judge.aclose()
    assert (result.value, result.details["first_message"]) == (0.0, 0)
    assert result.usage.requests == fault_server.attempts == 2  # the re-ask named the problem
