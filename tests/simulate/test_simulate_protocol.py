"""`simulate()` against a local server that plays both the simulated user and the bot: how each
conversation stops, the caps, failures of either side, and what goes over the wire."""

from __future__ import annotations

import json
import socket
import threading
from pathlib import Path
from typing import Any

import pytest
from _sim_server import BOT_MODEL, BOT_TOKENS, USER_MODEL, USER_TOKENS, SimServer

from convoeval import AIMessage, ToolCall, ToolMessage
from convoeval.errors import UsageError
from convoeval.judges.ensembles.samples import SAMPLE_TEMPERATURE
from convoeval.runner import ResultsFileError
from convoeval.runner._lock import RunLock
from convoeval.simulate import HttpBot, OpenAIBot, simulate
from convoeval.simulate._http import EndpointUnreachableError

USER = f"openai/{USER_MODEL}"
BOT = f"openai/{BOT_MODEL}"


def _run(sim: SimServer, scenarios: list[Any], bot: Any = BOT, **options: Any) -> Any:
    """`simulate` against `sim`; without the answer cache unless asked (a later test's server
    may get an earlier one's port, and with it that test's cached answers)."""
    options.setdefault("base_url", sim.url)
    options.setdefault("cache", False)
    if isinstance(bot, str) and bot.startswith("openai/"):
        options.setdefault("bot_base_url", sim.url)
    with pytest.warns(RuntimeWarning) if options.pop("failing", False) else _nothing():
        return simulate(scenarios, bot, USER, **options)


class _nothing:
    def __enter__(self) -> None:
        return None

    def __exit__(self, *exc: object) -> None:
        return None


def _block(sample: Any) -> dict[str, Any]:
    return dict(sample.metadata["simulation"])


def test_the_user_stops_when_the_goal_is_reached(sim: SimServer) -> None:
    result = _run(sim, [{"scenario": "s1 goal after 2", "id": "buy"}])
    (sample,) = result
    assert [m.content for m in sample.user_input] == [
        "s1: message 1",
        "reply 1 to: s1: message 1",
        "s1: message 2",
        "reply 2 to: s1: message 2",
    ]
    block = _block(sample)
    assert (block["stop"], block["stop_detail"], block["turns"]) == (
        "goal_reached",
        "goal_reached!",
        2,
    )
    # Two messages written and one stop decided: three user-model requests, two bot requests.
    assert (sim.count("user"), sim.count("bot")) == (3, 2)
    assert block["usage"]["user"]["requests"] == 3
    assert block["usage"]["bot"]["prompt_tokens"] == 2 * BOT_TOKENS[0]
    assert sample.id == "buy" and sample.scenario == "s1 goal after 2"


def test_a_user_who_gives_up_is_recorded_as_such(sim: SimServer) -> None:
    (sample,) = _run(sim, [{"scenario": "s1 give up after 1"}])
    assert (_block(sample)["stop"], _block(sample)["turns"]) == ("gave_up", 1)


def test_the_turn_cap_ends_a_conversation_without_asking_the_user_again(sim: SimServer) -> None:
    result = _run(
        sim, [{"scenario": "s1 never"}, {"scenario": "s2 never", "max_turns": 1}], max_turns=3
    )
    assert [(_block(s)["stop"], _block(s)["turns"], _block(s)["max_turns"]) for s in result] == [
        ("max_turns", 3, 3),
        ("max_turns", 1, 1),  # the scenario's own cap wins
    ]
    assert sim.count("user", "s1") == 3 and sim.count("user", "s2") == 1


def test_the_first_user_message_is_sent_as_it_is(sim: SimServer) -> None:
    (sample,) = _run(sim, [{"scenario": "s1 goal after 1", "first_user_message": "s1: hello"}])
    assert sample.user_input[0].content == "s1: hello"
    assert sim.count("user") == 1  # only the stop was asked


def test_the_token_cap_stops_the_run_and_a_rerun_plays_the_rest(
    sim: SimServer, tmp_path: Path
) -> None:
    out = tmp_path / "c.jsonl"
    per_turn = sum(USER_TOKENS) + sum(BOT_TOKENS)  # 65
    scenarios = [{"scenario": "s1 never"}, {"scenario": "s2 never"}]
    first = _run(sim, scenarios, concurrency=1, max_tokens=per_turn + 1, output=out)
    (sample,) = first
    assert (_block(sample)["stop"], _block(sample)["turns"]) == ("max_tokens", 2)
    assert first.unplayed == 1 and first.meta["last_run"]["cap_reached"] == "max_tokens"
    assert sim.count("user", "s2") == 0
    second = _run(sim, scenarios, concurrency=1, max_turns=10, max_tokens=10 * per_turn, output=out)
    assert [s.id for s in second] == ["scenario-1", "scenario-2"]
    assert sim.count("user", "s1") == 2  # not played again


def test_the_cost_cap_needs_prices_and_stops_at_them(sim: SimServer) -> None:
    with pytest.raises(UsageError, match="--max-cost needs the price of the user model user-model"):
        _run(sim, [{"scenario": "s1 never"}], max_cost=1.0)
    assert sim.requests == []  # refused before anything was sent
    prices = {USER_MODEL: (1_000_000.0, 0.0), BOT_MODEL: (0.0, 0.0)}  # $1 per prompt token
    result = _run(sim, [{"scenario": "s1 never"}], max_cost=2 * USER_TOKENS[0] - 1, prices=prices)
    assert (_block(result[0])["stop"], _block(result[0])["turns"]) == ("max_cost", 2)
    assert result.cost == 2 * USER_TOKENS[0]


def test_a_bot_that_raises_fails_its_conversation_and_the_others_go_on(sim: SimServer) -> None:
    def bot(messages: list[Any]) -> str:
        if messages[-1].content.startswith("s2"):
            raise KeyError("no such order")
        return f"ok: {messages[-1].content}"

    scenarios = [{"scenario": f"s{i} goal after 1"} for i in (1, 2, 3)]
    result = _run(sim, scenarios, bot, failing=True)
    assert [s.scenario for s in result] == ["s1 goal after 1", "s3 goal after 1"]
    (failure,) = result.failures
    assert failure["scenario"] == "scenario-2" and failure["failed"] == "bot"
    assert failure["error"]["type"] == "BotError"
    assert "raised KeyError: 'no such order'" in failure["error"]["message"]


def test_a_bot_endpoint_that_is_down_fails_before_anything_is_sent(sim: SimServer) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    bot = HttpBot(f"http://127.0.0.1:{port}/chat")
    with pytest.raises(EndpointUnreachableError, match=rf"cannot reach the bot .*:{port}/chat"):
        _run(sim, [{"scenario": "s1 goal after 1"}], bot)
    assert sim.requests == []


def test_a_slow_bot_does_not_hold_up_the_other_conversations(sim: SimServer) -> None:
    other_done = threading.Event()
    waited: list[bool] = []

    def before(role: str, body: dict[str, Any]) -> None:
        prompt = json.dumps(body)
        if role == "user" and "s2 goal after 1" in prompt and "] Assistant:" in prompt:
            other_done.set()  # s2 is deciding to stop: its bot turn is over
        if role == "bot" and body["messages"][-1]["content"].startswith("s1"):
            waited.append(other_done.wait(60))  # True: released by s2, not by the time limit

    sim.before = before
    result = _run(sim, [{"scenario": "s1 goal after 1"}, {"scenario": "s2 goal after 1"}])
    assert waited == [True] and [_block(s)["stop"] for s in result] == ["goal_reached"] * 2


def test_a_bot_past_its_timeout_fails_its_conversation(sim: SimServer) -> None:
    release = threading.Event()
    sim.before = lambda role, body: (
        release.wait(60) if role == "bot" and "s1" in body["messages"][-1]["content"] else None
    )
    try:
        result = _run(
            sim,
            [{"scenario": "s1 goal after 1"}, {"scenario": "s2 goal after 1"}],
            timeout=1.0,
            retry_budget=1.0,
            failing=True,
        )
    finally:
        release.set()
    assert [s.scenario for s in result] == ["s2 goal after 1"]
    (failure,) = result.failures
    assert "no answer within 1 s" in failure["error"]["message"]
    assert failure["failed"] == "bot" and failure["turns"] == 1


@pytest.mark.parametrize(
    ("scenario", "problem"),
    [
        ("s1 garbage", "does not match the output schema"),
        ("s1 stops at once", "the assistant has not replied yet"),
    ],
)
def test_a_user_model_that_answers_garbage_is_re_asked_then_fails(
    sim: SimServer, scenario: str, problem: str
) -> None:
    result = _run(sim, [{"scenario": scenario}, {"scenario": "s2 goal after 1"}], failing=True)
    assert [s.scenario for s in result] == ["s2 goal after 1"]  # never a made-up conversation
    (failure,) = result.failures
    assert failure["failed"] == "user model" and problem in failure["error"]["message"]
    assert sim.count("user", "s1") == 2 and sim.count("bot", "s1") == 0  # asked, re-asked
    reask = sim.bodies("user", "s1")[1]["messages"]
    assert reask[-1]["role"] == "user" and "could not be accepted" in reask[-1]["content"]


def test_repeats_are_trials_with_their_own_seeds(sim: SimServer) -> None:
    result = _run(sim, [{"scenario": "s1 goal after 1", "id": "t"}], repeat=3, seed=7)
    assert [s.id for s in result] == ["t#1", "t#2", "t#3"]
    assert [_block(s)["trial"] for s in result] == [1, 2, 3]
    assert [_block(s)["seeds"] for s in result] == [
        {"user": 7, "bot": 7},
        {"user": 8, "bot": 8},
        {"user": 9, "bot": 9},
    ]
    users = sim.bodies("user")
    assert sorted({(b["seed"], b["temperature"]) for b in users}) == [
        (7, 0.0),
        (8, SAMPLE_TEMPERATURE),
        (9, SAMPLE_TEMPERATURE),
    ]
    assert sorted(b["seed"] for b in sim.bodies("bot")) == [7, 8, 9]


def test_a_finished_simulation_run_again_sends_nothing(sim: SimServer, tmp_path: Path) -> None:
    out = tmp_path / "c.jsonl"
    scenarios = [{"scenario": "s1 goal after 1"}, {"scenario": "s2 give up after 1"}]
    first = _run(sim, scenarios, output=out)
    sent = len(sim.requests)
    again = _run(sim, scenarios, output=out)
    assert len(sim.requests) == sent
    assert [s.to_dict() for s in again] == [s.to_dict() for s in first]
    with pytest.raises(Exception, match="the max turns differs \\(10 before, 3 now\\)"):
        _run(sim, scenarios, output=out, max_turns=3)


def test_the_user_models_answers_are_cached(sim: SimServer, tmp_path: Path) -> None:
    scenarios = [{"scenario": f"s1 goal after 2 ({tmp_path.name})"}]  # asked in no other test
    _run(sim, scenarios, output=tmp_path / "c.jsonl", cache=True)
    asked = sim.count("user")
    assert asked == 3
    again = _run(sim, scenarios, output=tmp_path / "c.jsonl", overwrite=True, cache=True)
    assert sim.count("user") == asked  # every answer came from the cache
    assert _block(again[0])["usage"]["user"]["cached"] == asked
    assert sim.count("bot") == 4  # the bot is asked again: it is what is tested


def test_tool_calls_and_results_of_a_callable_bot_are_kept(sim: SimServer) -> None:
    def bot(messages: list[Any]) -> list[Any]:
        call = ToolCall(name="lookup", args={"q": messages[-1].content}, id="c1")
        return [
            AIMessage(content="", tool_calls=[call]),
            ToolMessage(content="order 12 is late", tool_call_id="c1"),
            AIMessage(content="Your order is late."),
        ]

    (sample,) = _run(sim, [{"scenario": "s1 goal after 1"}], bot)
    assert [m.type for m in sample.user_input] == ["human", "ai", "tool", "ai"]
    assert sample.user_input[1].tool_calls == [
        ToolCall(name="lookup", args={"q": "s1: message 1"}, id="c1")
    ]
    stop_prompt = sim.bodies("user")[-1]["messages"][1]["content"]
    assert "Your order is late." in stop_prompt and "order 12 is late" not in stop_prompt


def test_an_async_bot_gets_the_conversation_so_far(sim: SimServer) -> None:
    seen: list[list[str]] = []

    async def bot(messages: list[Any]) -> AIMessage:
        seen.append([m.type for m in messages])
        return AIMessage(content="fine")

    _run(sim, [{"scenario": "s1 goal after 2"}], bot)
    assert seen == [["human"], ["human", "ai", "human"]]


def test_an_openai_bot_gets_its_system_prompt_and_tools_and_its_tool_call_ends_the_talk(
    sim: SimServer,
) -> None:
    tools = [{"type": "function", "function": {"name": "refund", "parameters": {"type": "object"}}}]
    sim.bot = lambda body: {
        "role": "assistant",
        "content": None,
        "tool_calls": [
            {
                "id": "c9",
                "type": "function",
                "function": {"name": "refund", "arguments": '{"n": 1}'},
            }
        ],
    }
    bot = OpenAIBot(BOT_MODEL, base_url=sim.url, system_prompt="You sell tickets.", tools=tools)
    (sample,) = _run(sim, [{"scenario": "s1 never"}], bot)
    assert (_block(sample)["stop"], _block(sample)["turns"]) == ("tool_call", 1)
    assert sample.user_input[-1].tool_calls == [ToolCall(name="refund", args={"n": 1}, id="c9")]
    (body,) = sim.bodies("bot")
    assert body["messages"][0] == {"role": "system", "content": "You sell tickets."}
    assert body["tools"] == tools and body["messages"][1] == {
        "role": "user",
        "content": "s1: message 1",
    }


def test_a_plain_http_bot_gets_the_documented_request(sim: SimServer) -> None:
    sim.http_bot = lambda body: {
        "messages": [{"role": "assistant", "content": f"got {len(body['messages'])}"}],
        "usage": {"prompt_tokens": 3, "completion_tokens": 2},
    }
    (sample,) = _run(sim, [{"scenario": "s1 goal after 1", "id": "x"}], sim.bot_url, seed=5)
    (body,) = sim.bodies("http_bot")
    assert {k: body[k] for k in ("thread_id", "scenario", "trial", "seed")} == {
        "thread_id": "x#1",
        "scenario": "x",
        "trial": 1,
        "seed": 5,
    }
    assert body["messages"] == [{"role": "user", "content": "s1: message 1"}]
    assert sample.user_input[1] == AIMessage(content="got 1")
    assert _block(sample)["usage"]["bot"]["prompt_tokens"] == 3


def test_a_bot_answer_that_is_not_a_reply_fails_with_what_it_was(sim: SimServer) -> None:
    result = _run(sim, [{"scenario": "s1 goal after 1"}], lambda messages: 42, failing=True)
    (failure,) = result.failures
    assert "answered a int; a bot answers text, an AIMessage" in failure["error"]["message"]


def test_a_sync_bot_runs_in_a_worker_thread_so_conversations_go_on_side_by_side(
    sim: SimServer,
) -> None:
    second_called = threading.Event()
    waited: list[bool] = []

    def bot(messages: list[Any]) -> str:
        if messages[-1].content.startswith("s1"):
            waited.append(second_called.wait(60))  # blocks this thread, not the event loop
        else:
            second_called.set()
        return "ok"

    _run(sim, [{"scenario": "s1 goal after 1"}, {"scenario": "s2 goal after 1"}], bot)
    assert waited == [True]


def test_one_simulation_at_a_time_writes_a_conversations_file(
    sim: SimServer, tmp_path: Path
) -> None:
    out = tmp_path / "c.jsonl"
    with RunLock(out), pytest.raises(ResultsFileError, match="is being written by another"):
        _run(sim, [{"scenario": "s1 goal after 1"}], output=out)
    assert sim.requests == []


def test_options_are_checked_before_anything_is_sent(sim: SimServer) -> None:
    with pytest.raises(UsageError, match="max_turns must be a whole number of at least 1"):
        _run(sim, [{"scenario": "s1 never"}], max_turns=0)
    with pytest.raises(UsageError, match="the simulated user needs an LLM"):
        simulate([{"scenario": "s1"}], BOT, "offline")
    with pytest.raises(UsageError, match="bot_system_prompt cannot be used here"):
        _run(sim, [{"scenario": "s1"}], lambda m: "x", bot_system_prompt="hi")
    assert sim.requests == []


def test_a_bot_endpoint_error_worth_retrying_is_retried(sim: SimServer) -> None:
    answers = iter([(503, "busy, try again")])
    sim.bot = lambda body: next(answers, None) or _default_reply(body)
    (sample,) = _run(sim, [{"scenario": "s1 goal after 1"}])
    assert sim.count("bot") == 2 and _block(sample)["usage"]["bot"]["requests"] == 2
    assert _block(sample)["stop"] == "goal_reached"


def _default_reply(body: dict[str, Any]) -> dict[str, Any]:
    from _sim_server import default_bot

    return default_bot(body["messages"])


def test_a_bot_that_breaks_a_tool_message_rule_fails_its_conversation(sim: SimServer) -> None:
    def bot(messages: list[Any]) -> list[Any]:
        return [AIMessage(content="let me look"), ToolMessage(content="r"), AIMessage(content="ok")]

    result = _run(sim, [{"scenario": "s1 goal after 1"}], bot, failing=True)
    (failure,) = result.failures
    assert "broke a tool-message rule" in failure["error"]["message"]
    assert (
        "ToolMessage must follow an AIMessage where tools were called"
        in (failure["error"]["message"])
    )


def test_a_partial_last_line_is_cut_off_and_its_conversation_played_again(
    sim: SimServer, tmp_path: Path
) -> None:
    out = tmp_path / "c.jsonl"
    scenarios = [{"scenario": "s1 goal after 1"}, {"scenario": "s2 goal after 1"}]
    first = _run(sim, scenarios, output=out)
    lines = out.read_text().splitlines(keepends=True)
    out.write_text(lines[0] + lines[1][: len(lines[1]) // 2])  # killed while writing line 2
    again = _run(sim, scenarios, output=out)
    assert out.read_text().count("\n") == 2 and out.read_text().endswith("\n")
    assert [s.scenario for s in again] == [s.scenario for s in first]
    assert sim.count("bot", "s1") == 1 and sim.count("bot", "s2") == 2  # s2 played again


def test_without_the_cache_the_user_model_is_asked_again(sim: SimServer, tmp_path: Path) -> None:
    scenarios = [{"scenario": "s1 goal after 1"}]
    _run(sim, scenarios, output=tmp_path / "c.jsonl")
    _run(sim, scenarios, output=tmp_path / "c.jsonl", overwrite=True)
    assert sim.count("user") == 4


def test_the_bots_own_limit_keeps_its_requests_in_flight_apart(sim: SimServer) -> None:
    second_finished = threading.Event()

    def before(role: str, body: dict[str, Any]) -> None:
        text = json.dumps(body)
        if role == "user" and "s2 goal after 1" in text and "] Assistant:" in text:
            second_finished.set()
        if role == "bot" and body["messages"][-1]["content"].startswith("s1"):
            # With the bot limited to 1, s2's bot turn cannot run while this one is held: s2
            # never gets to its stop decision, and this wait runs out instead.
            second_finished.wait(5)

    sim.before = before
    bot = OpenAIBot(BOT_MODEL, base_url=sim.url, concurrency=1)
    result = _run(sim, [{"scenario": "s1 goal after 1"}, {"scenario": "s2 goal after 1"}], bot)
    assert len(result) == 2 and sim.peak["bot"] == 1


def test_a_local_openai_bot_is_sent_no_authorization(sim: SimServer) -> None:
    _run(sim, [{"scenario": "s1 goal after 1"}])
    assert {auth for role, auth in sim.auth_by_role if role == "bot"} == {""}
