"""The OpenAI-compatible judge over a real socket: request shape, usage, keys, limits, loops."""

from __future__ import annotations

import asyncio
import math
import pickle
from dataclasses import replace
from typing import TYPE_CHECKING, Any

import pytest
from pydantic import BaseModel

from convoeval.errors import ConvoevalError
from convoeval.judges import JudgeConfigError, JudgeError, OpenAIJudge, Step, resolve_judge
from convoeval.judges.core.cache import JudgeCache
from convoeval.judges.core.endpoints import EndpointRegistry
from convoeval.judges.core.retry import RetryPolicy
from convoeval.judges.protocol.step import compact_schema

if TYPE_CHECKING:
    from pathlib import Path

    from conftest import FaultServer, Verdict

FAST = RetryPolicy(max_retries=3, base_delay_s=0.01, max_delay_s=0.05, max_retry_after_s=2.0)
GOOD = {"verdict": True, "label": "yes"}


def _judge(server: FaultServer, **options: Any) -> OpenAIJudge:
    options.setdefault("api_key", "sk-test-key")
    options.setdefault("cache", False)
    options.setdefault("retry", FAST)
    options.setdefault("timeout", 5.0)
    return OpenAIJudge("fault-model", base_url=server.url, **options)


async def test_answer_is_validated_and_request_is_structured(
    fault_server: FaultServer, verdict_step: Step[Verdict]
) -> None:
    fault_server.reply(GOOD)
    answer = await _judge(fault_server).run(verdict_step, {"statement": "water is wet"})
    assert isinstance(answer.output, verdict_step.output)
    assert answer.output.verdict is True and answer.output.label == "yes"
    assert answer.usage.requests == 1 and fault_server.attempts == 1
    assert (answer.usage.prompt_tokens, answer.usage.completion_tokens) == (11, 7)
    assert answer.usage.latency_s > 0 and answer.usage.cached == 0

    body = fault_server.bodies[0]
    assert body["model"] == "fault-model"
    assert body["temperature"] == 0
    assert "seed" not in body and "max_tokens" not in body
    assert body["messages"] == [
        {"role": "system", "content": verdict_step.instructions},
        {"role": "user", "content": "Statement: water is wet"},
    ]
    fmt = body["response_format"]
    assert fmt["type"] == "json_schema"
    assert fmt["json_schema"]["name"] == "statement_check"
    # the model's schema without titles and descriptions (judges/protocol/step.py: compact_schema)
    assert fmt["json_schema"]["schema"] == compact_schema(verdict_step.output.model_json_schema())
    assert fmt["json_schema"]["strict"] is True
    assert fault_server.headers[0]["authorization"] == "Bearer sk-test-key"


class _Loose(BaseModel):
    verdict: bool
    note: str = ""


async def test_seed_max_tokens_and_non_strict_schema(fault_server: FaultServer) -> None:
    step = Step(name="loose step!", version=1, instructions="", template="{x}", output=_Loose)
    fault_server.reply({"verdict": False})
    judge = _judge(fault_server, seed=7, temperature=0.3, max_tokens=64)
    answer = await judge.run(step, {"x": 1})
    assert answer.output == _Loose(verdict=False)
    body = fault_server.bodies[0]
    assert (body["seed"], body["temperature"], body["max_tokens"]) == (7, 0.3, 64)
    schema_spec = body["response_format"]["json_schema"]
    assert schema_spec["strict"] is False  # a default field is not strict-compatible
    assert schema_spec["name"] == "loose_step_"
    assert body["messages"][1]["content"] == "1"


async def test_usage_falls_back_to_text_length(
    fault_server: FaultServer, verdict_step: Step[Verdict]
) -> None:
    content = '{"verdict": false, "label": "no"}'
    fault_server.reply(content, usage=False)
    answer = await _judge(fault_server).run(verdict_step, {"statement": "fire is cold"})
    sent = verdict_step.instructions + "Statement: fire is cold"
    assert answer.usage.prompt_tokens == math.ceil(len(sent) / 4)
    assert answer.usage.completion_tokens == math.ceil(len(content) / 4)


async def test_failed_check_is_reasked_with_the_problem(
    fault_server: FaultServer, verdict_step: Step[Verdict]
) -> None:
    fault_server.reply({"verdict": True, "label": "no"}).reply(GOOD)
    judge = _judge(fault_server)
    answer = await judge.run(verdict_step, {"statement": "snow is white"})
    assert answer.output.label == "yes"
    assert fault_server.attempts == 2 and answer.usage.requests == 2
    messages = fault_server.bodies[1]["messages"]
    assert [m["role"] for m in messages] == ["system", "user", "assistant", "user"]
    assert messages[2]["content"] == '{"verdict": true, "label": "no"}'
    assert "label must be 'yes'" in messages[3]["content"]
    assert judge.total.requests == 2


def test_describe_and_repr_never_show_the_key() -> None:
    judge = OpenAIJudge(
        "some-model",
        base_url="http://user:pw@127.0.0.1:9/v1/?api-key=secret-in-query",
        api_key="sk-very-secret",
        cache=False,
    )
    described = judge.describe()
    assert described["model"] == "some-model"
    assert described["endpoint"] == "http://127.0.0.1:9/v1"
    assert judge.name == "openai/some-model"
    text = repr(described) + repr(judge)
    for secret in ("sk-very-secret", "secret-in-query", "pw"):
        assert secret not in text


def test_a_recipe_rebuilds_the_judge_and_never_shows_the_key(tmp_path: Path) -> None:
    url = "http://user:pw@127.0.0.1:9/v1/?api-key=secret-in-query"
    registry = EndpointRegistry()
    own = OpenAIJudge(
        "m",
        base_url=url,
        api_key="sk-very-secret",
        cache=JudgeCache(tmp_path / "c.sqlite"),
        concurrency=7,
        registry=registry,
        seed=3,
        samples=3,
        reason_first=True,
    )
    shared = OpenAIJudge(
        "m", base_url=url, api_key="sk-very-secret", cache=False, registry=registry
    )
    made = pickle.loads(pickle.dumps(own.recipe()))
    text = repr(made) + str(made) + repr(shared.recipe())
    for secret in ("sk-very-secret", "secret-in-query", "pw"):
        assert secret not in text
    assert (made.concurrency, made.shared, shared.recipe().shared) == (7, False, True)
    elsewhere = EndpointRegistry()
    again = OpenAIJudge.from_recipe(made, elsewhere, 2)
    assert again.describe() == {**own.describe(), "concurrency": 2}
    assert again.registry is elsewhere and again.cache is not None
    assert again.cache.path == tmp_path / "c.sqlite"
    assert "sk-very-secret" in again.backend.secrets()
    other = OpenAIJudge.from_recipe(shared.recipe(), elsewhere, 4)
    assert other.concurrency == 4 and elsewhere.shared_limiter(other.endpoint).limit == 4
    assert registry.shared_limiter(shared.endpoint).limit == 16  # the original's is untouched


def test_a_recipe_carries_every_setting(tmp_path: Path) -> None:
    # Every keyword argument set away from its default: the rebuilt judge's recipe is the same.
    judge = OpenAIJudge(
        "m",
        base_url="http://127.0.0.1:9/v1",
        api_key="sk-every-setting",
        concurrency=3,
        cache=JudgeCache(tmp_path / "c.sqlite"),
        timeout=7.5,
        seed=11,
        temperature=0.3,
        max_tokens=99,
        retry=RetryPolicy(max_retries=4, base_delay_s=0.1),
        strict=False,
        retry_budget=42.0,
        registry=EndpointRegistry(),
        reason_first=True,
        samples=3,
    )
    made = judge.recipe()
    assert made.retry.max_total_s == 42.0 and made.cache == str(tmp_path / "c.sqlite")
    assert OpenAIJudge.from_recipe(made, EndpointRegistry(), 2).recipe() == replace(
        made, concurrency=2
    )


async def test_base_url_and_key_come_from_the_environment(
    fault_server: FaultServer, verdict_step: Step[Verdict], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_BASE_URL", fault_server.url)
    monkeypatch.setenv("OPENAI_API_KEY", "sk-from-env")
    fault_server.reply(GOOD)
    judge = OpenAIJudge("env-model", cache=False)
    await judge.run(verdict_step, {"statement": "x"})
    assert judge.describe()["endpoint"] == fault_server.url
    assert fault_server.headers[0]["authorization"] == "Bearer sk-from-env"


async def test_local_server_without_key_gets_a_placeholder(
    fault_server: FaultServer, verdict_step: Step[Verdict], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    fault_server.reply(GOOD)
    await _judge(fault_server, api_key=None).run(verdict_step, {"statement": "x"})
    assert fault_server.headers[0]["authorization"] == "Bearer not-needed"


def test_openai_without_key_is_refused_early(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with pytest.raises(JudgeConfigError, match="OPENAI_API_KEY") as caught:
        resolve_judge("openai/gpt-4o-mini")
    # The user's input is wrong, not the program: the command line says so (exit 2).
    assert isinstance(caught.value, ConvoevalError) and isinstance(caught.value, ValueError)


async def test_the_limit_is_shared_by_the_users_of_one_judge(
    fault_server: FaultServer, verdict_step: Step[Verdict]
) -> None:
    fault_server.reply(GOOD, gather=3).forever()
    judge = _judge(fault_server, concurrency=3)
    answers = await asyncio.gather(
        *(judge.run(verdict_step, {"statement": f"s{i}"}) for i in range(12))
    )
    assert len(answers) == 12 and fault_server.attempts == 12
    assert fault_server.peak == 3  # different samples overlap, up to the limit and no further
    assert judge.describe()["concurrency"] == 3


async def test_a_judges_limit_never_changes_another_judges_on_the_same_endpoint(
    fault_server: FaultServer, verdict_step: Step[Verdict]
) -> None:
    # Issue 10 §2: creating OpenAIJudge(..., concurrency=3) used to set the limit of every judge
    # on that endpoint. An explicit limit now belongs to its judge instance.
    fault_server.reply(GOOD, gather=6).forever()
    roomy = _judge(fault_server, concurrency=6)
    narrow = _judge(fault_server, concurrency=2)
    default = _judge(fault_server)
    assert [j.describe()["concurrency"] for j in (roomy, narrow, default)] == [6, 2, 16]
    await asyncio.gather(*(roomy.run(verdict_step, {"statement": f"r{i}"}) for i in range(6)))
    assert fault_server.peak == 6
    fault_server.reply(GOOD, gather=2).forever()
    fault_server.peak = 0
    await asyncio.gather(*(narrow.run(verdict_step, {"statement": f"n{i}"}) for i in range(6)))
    assert fault_server.peak == 2


async def test_judges_without_a_limit_share_their_endpoints_default(
    fault_server: FaultServer, verdict_step: Step[Verdict]
) -> None:
    # Metrics given their own judge spec each resolve a judge: without an explicit limit they
    # still share one limit per endpoint (16), whatever an explicit judge there says.
    fault_server.reply(GOOD, gather=16).forever()
    registry = EndpointRegistry()
    first, second = (_judge(fault_server, registry=registry) for _ in range(2))
    _judge(fault_server, registry=registry, concurrency=40)
    runs = [j.run(verdict_step, {"statement": f"s{i}"}) for i in range(12) for j in (first, second)]
    await asyncio.gather(*runs)
    assert fault_server.attempts == 24 and fault_server.peak == 16
    assert first.describe()["concurrency"] == second.describe()["concurrency"] == 16
    before = registry.shared_limiter(first.endpoint)
    assert registry.shared_limiter(first.endpoint) is before
    registry.reset()
    assert registry.shared_limiter(first.endpoint) is not before


async def test_default_limit_lets_samples_overlap(
    fault_server: FaultServer, verdict_step: Step[Verdict]
) -> None:
    # The first answers wait until 2 requests are in flight at once (5 s at most): they are,
    # unless the default limit keeps samples one at a time.
    fault_server.reply(GOOD, gather=2).forever()
    judge = _judge(fault_server)
    await asyncio.gather(*(judge.run(verdict_step, {"statement": f"s{i}"}) for i in range(20)))
    assert fault_server.attempts == 20
    assert 1 < fault_server.peak <= 16


def test_one_judge_serves_several_event_loops(
    fault_server: FaultServer, verdict_step: Step[Verdict]
) -> None:
    fault_server.reply(GOOD).reply(GOOD)
    judge = _judge(fault_server, concurrency=2)
    first = asyncio.run(judge.run(verdict_step, {"statement": "a"}))
    second = asyncio.run(judge.run(verdict_step, {"statement": "b"}))
    assert first.output == second.output
    assert fault_server.attempts == 2


async def test_missing_input_is_an_error_before_any_request(
    fault_server: FaultServer, verdict_step: Step[Verdict]
) -> None:
    with pytest.raises(KeyError, match="statement"):
        await _judge(fault_server).run(verdict_step, {})
    assert fault_server.attempts == 0


async def test_empty_choices_is_a_judge_error(
    fault_server: FaultServer, verdict_step: Step[Verdict]
) -> None:
    fault_server.raw(200, '{"id": "x", "object": "chat.completion", "created": 0, "choices": []}')
    with pytest.raises(JudgeError, match="no choices"):
        await _judge(fault_server).run(verdict_step, {"statement": "x"})


def test_a_recipe_keeps_an_empty_default_cache(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A fresh default cache has no entries, so bool() of it is False: it must still travel as a
    # cache, or every Ray worker would run without one.
    monkeypatch.setenv("CONVOEVAL_CACHE_DIR", str(tmp_path))
    judge = OpenAIJudge("m", base_url="http://127.0.0.1:9/v1", api_key="k")
    assert judge.cache is not None and len(judge.cache) == 0
    assert judge.recipe().cache is True
    rebuilt = OpenAIJudge.from_recipe(judge.recipe(), EndpointRegistry(), 2)
    assert rebuilt.cache is not None and rebuilt.cache.path == judge.cache.path
    assert OpenAIJudge("m", base_url="http://127.0.0.1:9/v1", cache=False).recipe().cache is False
