"""Requests sized to the judge (issue 35 §3): a conversation whose request would not fit the
judge's context window (or whose answer would not fit `max_tokens`) is split into runs of
exchanges, one request each, and the verdicts are merged; the request count shows the split.

The judge here is a small OpenAI-compatible server on 127.0.0.1 that answers every keyed step
with one verdict per key the schema requires, and serves llama.cpp's `GET /props` with a
context size when given one. Sizes are estimated as metrics/_fit.py does: characters / 4 of the
system and user messages and of the answer schema, 16 tokens of chat template, and 84 answer
tokens per verdict.
"""

from __future__ import annotations

import asyncio
import json
import math
import threading
from collections.abc import Callable, Iterator
from contextlib import AbstractContextManager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

import pytest

from convoeval import AIMessage, HumanMessage, MultiTurnSample
from convoeval.judges import OpenAIJudge, resolve_judge
from convoeval.judges.core.endpoints import EndpointRegistry
from convoeval.metrics import (
    AspectCritic,
    ConversationRelevancy,
    KnowledgeRetention,
    RoleAdherence,
    TopicAdherenceScore,
    UserFrustration,
)
from convoeval.metrics._fit import ANSWER_TOKENS, TEMPLATE_TOKENS

ROOT = Path(__file__).resolve().parents[2]
PAIRS = [
    ("How do I reset my card PIN?", "Open the app, go to Cards, then PIN, and pick a new one."),
    ("Can I use the card in Spain?", "Yes, it works abroad; turn on travel mode first."),
    ("What does a transfer cost?", "A transfer to another bank costs 2 euros."),
    ("Why was my payment declined?", "The daily limit of 500 euros was reached."),
    ("How do I open a savings account?", "Open it in the app with at least 10 euros."),
    ("Is travel insurance included?", "Plan B includes it for trips of up to 6 weeks."),
]
SAMPLE = MultiTurnSample(
    user_input=[m for u, a in PAIRS for m in (HumanMessage(content=u), AIMessage(content=a))],
    chatbot_role="A bank's support assistant.",
)


class JudgeServer:
    """Answers every chat request by its schema; `GET /props` gives `n_ctx` when set."""

    def __init__(self, n_ctx: int | None = None) -> None:
        self.n_ctx = n_ctx
        self.bodies: list[dict[str, Any]] = []
        self.props_reads = 0
        owner = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *args: Any) -> None:  # quiet
                pass

            def _send(self, status: int, data: dict[str, Any]) -> None:
                raw = json.dumps(data).encode()
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(raw)))
                self.end_headers()
                self.wfile.write(raw)

            def do_GET(self) -> None:
                if self.path.rstrip("/").endswith("/props") and owner.n_ctx is not None:
                    owner.props_reads += 1
                    self._send(200, {"default_generation_settings": {"n_ctx": owner.n_ctx}})
                else:
                    self._send(404, {"error": {"message": f"no route {self.path}"}})

            def do_POST(self) -> None:
                body = json.loads(self.rfile.read(int(self.headers["Content-Length"])))
                owner.bodies.append(body)
                content = json.dumps(_answer(body))
                self._send(
                    200,
                    {
                        "id": "x",
                        "object": "chat.completion",
                        "model": body["model"],
                        "choices": [
                            {
                                "index": 0,
                                "message": {"role": "assistant", "content": content},
                                "finish_reason": "stop",
                            }
                        ],
                    },
                )

        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self._httpd.server_address[1]}/v1"
        threading.Thread(target=self._httpd.serve_forever, daemon=True).start()

    def close(self) -> None:
        self._httpd.shutdown()
        self._httpd.server_close()


def _answer(body: dict[str, Any]) -> dict[str, Any]:
    """Facts cite the first user message the schema allows, topics each one; keyed steps get every
    key (a bare `true`, or an object with its booleans true and an empty reason)."""
    schema = body["response_format"]["json_schema"]["schema"]
    props = schema["properties"]
    if "facts" in props:
        (item,) = schema["$defs"].values()
        return {"facts": [{"message": item["properties"]["message"]["enum"][0], "fact": "PIN"}]}
    if "topics" in props:
        (item,) = schema["$defs"].values()
        cited = item["properties"]["message_index"]["enum"]
        return {
            "topics": [{"topic": f"subject {m}", "message_index": m, "quote": "q"} for m in cited]
        }
    if "verdict" in props:  # aspect critic
        return {"reason": "polite", "verdict": 1}
    if "frustration" in props:
        return {"frustration": "none", "first_message": None, "reason": "calm"}
    keys = props["verdicts"]["required"]
    value = props["verdicts"]["properties"][keys[0]]
    if value.get("type") == "boolean":
        return {"verdicts": {key: True for key in keys}}
    (item,) = schema["$defs"].values()
    verdict = {name: True for name, p in item["properties"].items() if p.get("type") == "boolean"}
    return {"verdicts": {key: {**verdict, "reason": ""} for key in keys}}


def _estimate(body: dict[str, Any]) -> int:
    """What metrics/_fit.py counts for a request: its prompt, schema, template and answer."""
    text = sum(math.ceil(len(m["content"]) / 4) for m in body["messages"])
    schema = math.ceil(len(json.dumps(body["response_format"]["json_schema"]["schema"])) / 4)
    keys = len(
        body["response_format"]["json_schema"]["schema"]["properties"]["verdicts"]["required"]
    )
    return text + schema + TEMPLATE_TOKENS + ANSWER_TOKENS * keys


@pytest.fixture
def judge_server() -> Iterator[JudgeServer]:
    server = JudgeServer()
    yield server
    server.close()


def _judge(server: JudgeServer, **options: Any) -> OpenAIJudge:
    return OpenAIJudge("m", base_url=server.url, api_key="k", cache=False, **options)


def _keys(body: dict[str, Any]) -> list[str]:
    keys: list[str] = body["response_format"]["json_schema"]["schema"]["properties"]["verdicts"][
        "required"
    ]
    return keys


def test_a_conversation_that_fits_is_one_request(judge_server: JudgeServer) -> None:
    result = ConversationRelevancy().score_sync(SAMPLE, judge=_judge(judge_server))
    assert (result.value, result.usage.requests) == (1.0, 1)
    assert _keys(judge_server.bodies[0]) == ["0", "1", "2", "3", "4", "5"]


def test_a_small_context_splits_the_exchanges_and_merges_the_verdicts(
    judge_server: JudgeServer,
) -> None:
    whole = ConversationRelevancy().score_sync(SAMPLE, judge=_judge(judge_server))
    one = _estimate(judge_server.bodies[0])
    judge_server.bodies.clear()
    context = one // 2  # about half of what the whole conversation needs
    result = ConversationRelevancy().score_sync(
        SAMPLE, judge=_judge(judge_server, context_window=context)
    )
    assert result.error is None and result.value == whole.value
    assert [v["exchange"] for v in result.details["verdicts"]] == [0, 1, 2, 3, 4, 5]
    asked = [_keys(b) for b in judge_server.bodies]
    assert result.usage.requests == len(asked) >= 2  # the request count shows the split
    assert sorted(int(k) for keys in asked for k in keys) == [0, 1, 2, 3, 4, 5]
    assert all(_estimate(b) <= context for b in judge_server.bodies)


def test_max_tokens_bounds_the_verdicts_per_request(judge_server: JudgeServer) -> None:
    judge = _judge(judge_server, max_tokens=2 * ANSWER_TOKENS)  # room for two answers
    result = RoleAdherence().score_sync(SAMPLE, judge=judge)
    assert result.error is None and result.value == 1.0
    assert [len(_keys(b)) for b in judge_server.bodies] == [2, 2, 2]
    assert result.usage.requests == 3


def test_both_steps_of_knowledge_retention_are_sized() -> None:
    server = JudgeServer(n_ctx=520)
    try:
        result = KnowledgeRetention().score_sync(SAMPLE, judge=_judge(server))
    finally:
        server.close()
    assert result.error is None and result.value == 1.0
    names = [b["response_format"]["json_schema"]["name"] for b in server.bodies]
    facts = names.count("knowledge_retention_facts")
    assert facts >= 2 and names.count("knowledge_retention_verdicts") >= 2
    assert result.usage.requests == len(names)
    assert server.props_reads == 1  # the context read once per judge


def test_the_context_is_read_from_llama_cpp_props_once() -> None:
    server = JudgeServer(n_ctx=600)
    try:
        judge = _judge(server)
        result = ConversationRelevancy().score_sync(SAMPLE, judge=judge)
        again = ConversationRelevancy().score_sync(SAMPLE, judge=judge)
    finally:
        server.close()
    assert judge.context_window == 600 and server.props_reads == 1
    assert result.error is None and again.error is None
    assert result.usage.requests >= 2
    assert all(_estimate(b) <= 600 for b in server.bodies)


def test_an_exchange_that_cannot_fit_alone_fails_unsent(judge_server: JudgeServer) -> None:
    result = ConversationRelevancy().score_sync(
        SAMPLE, judge=_judge(judge_server, context_window=100)
    )
    assert result.value is None and result.error is not None
    assert "one exchange alone needs about" in result.error["message"]
    assert "more than the judge's context window of 100 tokens" in result.error["message"]
    assert judge_server.bodies == [] and result.usage.requests == 0


def test_topic_adherence_splits_its_extraction_and_its_topic_lists(
    judge_server: JudgeServer,
) -> None:
    sample = SAMPLE.model_copy(update={"reference_topics": ["banking"]})
    judge = _judge(judge_server, max_tokens=2 * ANSWER_TOKENS)  # two items per answer
    result = TopicAdherenceScore().score_sync(sample, judge=judge)
    assert result.error is None and len(result.details["topics"]) == 6
    names = [b["response_format"]["json_schema"]["name"] for b in judge_server.bodies]
    assert names.count("topic_adherence_extract_topics") == 3  # two user messages each
    assert names.count("topic_adherence_answered") == names.count("topic_adherence_in_scope") == 3
    assert result.usage.requests == 9
    whole = SAMPLE.to_transcript()
    answered = [
        b for b in judge_server.bodies if "answered" in b["response_format"]["json_schema"]["name"]
    ]
    assert all(whole in b["messages"][1]["content"] for b in answered)  # the whole conversation


def test_user_frustration_is_judged_in_parts_that_fit(judge_server: JudgeServer) -> None:
    whole = UserFrustration().score_sync(SAMPLE, judge=_judge(judge_server))
    assert whole.usage.requests == 1
    body = judge_server.bodies[0]
    text = sum(math.ceil(len(m["content"]) / 4) for m in body["messages"])
    schema = math.ceil(len(json.dumps(body["response_format"]["json_schema"]["schema"])) / 4)
    judge_server.bodies.clear()
    context = text + schema + TEMPLATE_TOKENS + ANSWER_TOKENS - 40  # the whole does not fit
    result = UserFrustration().score_sync(
        SAMPLE, judge=_judge(judge_server, context_window=context)
    )
    assert result.error is None and result.value == 1.0
    assert result.usage.requests == len(judge_server.bodies) >= 2
    assert len(result.details["verdicts"]) == result.usage.requests  # one verdict per part


def test_a_reply_whose_answer_allowance_exceeds_max_tokens_is_asked_alone(
    judge_server: JudgeServer,
) -> None:
    judge = _judge(judge_server, max_tokens=40)  # less than one verdict's allowance
    result = RoleAdherence().score_sync(SAMPLE, judge=judge)
    assert result.error is None and result.value == 1.0
    assert [len(_keys(b)) for b in judge_server.bodies] == [1] * 6


def test_aspect_critic_is_not_split(judge_server: JudgeServer) -> None:
    critic = AspectCritic(name="polite", definition="The assistant is polite.")
    result = critic.score_sync(SAMPLE, judge=_judge(judge_server, context_window=100))
    assert result.error is None and result.usage.requests == 1


def test_only_the_documented_metrics_size_their_requests() -> None:
    """Aspect critic, rubrics, agent goal accuracy and tool use never call `fitted`."""
    import inspect

    from convoeval.metrics import agent_goal_accuracy, aspect_critic, rubrics, tool_use

    for module in (agent_goal_accuracy, aspect_critic, rubrics, tool_use):
        assert "fitted" not in inspect.getsource(module), module.__name__


def test_judges_without_limits_are_not_split() -> None:
    from convoeval.judges import JudgePanel
    from convoeval.judges.fake import FakeJudge
    from convoeval.judges.offline import OfflineJudge
    from convoeval.metrics._base import Ask

    for judge in (OfflineJudge(), JudgePanel([FakeJudge({}), FakeJudge({})]), FakeJudge({})):
        assert asyncio.run(Ask(judge, "m").limits()) == (None, None)


@pytest.mark.parametrize(
    ("base_url", "asked"),
    [
        ("http://127.0.0.1:8080/v1", True),
        ("http://localhost:8080/v1", True),
        ("http://[::1]:8080/v1", True),
        ("http://192.168.1.20:8080/v1", True),
        ("http://10.0.0.5/v1", True),
        ("https://api.openai.com/v1", False),
        ("https://gpu-box.example.com/v1", False),
        ("https://8.8.8.8/v1", False),
    ],
)
def test_props_is_asked_only_of_a_server_on_this_machine_or_a_private_network(
    base_url: str, asked: bool
) -> None:
    """A hosted API has no `/props`: the judge does not ask it (nothing is sent; the client is
    never made), while a server on this machine or a private network is asked."""
    judge = OpenAIJudge("m", base_url=base_url, api_key="k", cache=False)
    made: list[bool] = []

    def client() -> Any:
        made.append(True)
        raise ConnectionRefusedError("stop before any traffic")

    judge.chat._client = client  # type: ignore[method-assign]
    try:
        found = asyncio.run(judge.chat.served_context(1.0))
    except ConnectionRefusedError:
        found = None
    assert found is None and bool(made) is asked
    section = " ".join((ROOT / "docs" / "judges.md").read_text(encoding="utf-8").split())
    assert "when the server is on this machine or a private network" in section


def test_the_docs_state_the_allowances_the_code_uses() -> None:
    text = " ".join((ROOT / "docs" / "judges.md").read_text(encoding="utf-8").split())
    section = text[text.index("## Requests sized to the judge") :]
    section = section[: section.index(" ## ")]
    assert f"{TEMPLATE_TOKENS} tokens of chat template" in section
    assert f"an allowance of {ANSWER_TOKENS} answer tokens per verdict asked" in section
    assert "at characters / 4" in section and "`GET /props` once" in section
    assert (
        "`OpenAIJudge(..., context_window=4096)`" in section
        and "`openai/MODEL context=4096`" in section
    )
    assert "fails the metric with a message saying so, and nothing is sent" in section
    assert "one that fits only without its whole allowance is asked alone" in section
    assert "A judge panel and the offline judge set no limit." in section
    assert "A `gguf:PATH` judge sizes requests to its own `ctx`." in section
    assert (
        "Aspect critic, rubrics scores, agent goal accuracy and tool use are not split" in section
    )


@pytest.mark.llm
def test_a_small_llama_cpp_context_splits_the_conversation(
    smollm2_with_context: Callable[[int], AbstractContextManager[str]],
) -> None:
    """SmolLM2 on llama.cpp with a 512-token context: the judge reads it from `/props`, and a
    two-exchange relevancy judgment, which needs more, is asked one exchange at a time."""
    two = MultiTurnSample(user_input=SAMPLE.user_input[:4])
    with smollm2_with_context(512) as url:
        judge = OpenAIJudge("smollm2", base_url=url, cache=False, timeout=300)
        result = ConversationRelevancy().score_sync(two, judge=judge)
    assert judge.context_window == 512
    assert result.error is None and result.value is not None
    assert [v["exchange"] for v in result.details["verdicts"]] == [0, 1]
    assert result.usage.requests == 2  # the request count shows the split


def test_a_gguf_judge_sizes_requests_to_its_own_context(smollm2_gguf: Path) -> None:
    from convoeval.judges.gguf.judge import GGUFJudge

    judge = GGUFJudge(smollm2_gguf, ctx=1024, cache=False)  # not started: nothing is read
    assert asyncio.run(judge.context_limit()) == 1024 and not judge.server.running


def test_the_judge_spec_takes_the_context() -> None:
    judge = resolve_judge("openai/m context=1024", base_url="http://127.0.0.1:9/v1")
    assert isinstance(judge, OpenAIJudge) and judge.context_window == 1024
    judge = resolve_judge("openai/m", base_url="http://127.0.0.1:9/v1", context=512)
    assert isinstance(judge, OpenAIJudge) and judge.context_window == 512
    again = OpenAIJudge.from_recipe(judge.recipe(), EndpointRegistry(), 4)  # a Ray worker's
    assert again.context_window == 512
