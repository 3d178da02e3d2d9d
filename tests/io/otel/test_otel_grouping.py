"""Spans to conversations: grouping by conversation id, order, re-sent history, tool results in
their places, and gaps that are said rather than filled in."""

from __future__ import annotations

import json
from pathlib import Path

from _otlp import T1, T2, T3, chat, parts, request, sid, span, tool_call, tool_response, write_lines
from test_otel_conventions import flat, only

from convoeval.io import read_records

SESSION = {"session.id": "s-1"}


def _turn(trace: str, number: int, at: float, history: list[str], extra: dict[str, str]) -> dict:
    """A chat span whose input is the alternating user/assistant `history` and whose output is
    `reply to <last user message>`."""
    sent = [parts("user" if i % 2 == 0 else "assistant", text) for i, text in enumerate(history)]
    return chat(trace, number, at, sent, [parts("assistant", f"reply to {history[-1]}")], extra)


def test_traces_of_one_session_are_one_conversation_in_start_order(tmp_path: Path) -> None:
    """Three traces, two sharing a session id given on their first span only, written out of
    order: one conversation per session, ordered by start time, at the line of its first span."""
    turn1 = _turn(T1, 1, 0, ["a"], SESSION)
    turn1_child = span(T1, 2, "http", 0.1, {"http.method": "POST"}, parent=1)
    turn2 = _turn(T2, 3, 10, ["a", "reply to a", "b"], SESSION)
    other = _turn(T3, 4, 5, ["x"], {})
    path = write_lines(
        tmp_path / "t.jsonl", request(other), request(turn2), request(turn1, turn1_child)
    )
    records = list(read_records(path))
    assert [r.where.rsplit(":", 1)[1] for r in records] == ["1", "2"]
    alone, session = records
    assert flat(alone) == [("human", "x"), ("ai", "reply to x")]
    assert alone.sample is not None and alone.sample.id == T3
    assert (alone.sample.metadata or {})["otel"]["grouped_by"] == "trace id"
    assert flat(session) == [
        ("human", "a"),
        ("ai", "reply to a"),
        ("human", "b"),
        ("ai", "reply to b"),
    ]
    assert session.sample is not None and session.sample.id == "s-1"
    assert (session.sample.metadata or {})["otel"]["trace_ids"] == [T2, T1]


def test_each_message_is_kept_once_when_the_history_is_resent_or_windowed(tmp_path: Path) -> None:
    """Full history re-sent, then a window that keeps the system prompt and the last turns, then
    a call that sends only the new message: every message once, in order, no gap."""
    system = {"gen_ai.system_instructions": json.dumps([{"type": "text", "content": "S"}])}
    calls = [
        chat(T1, 1, 0, [parts("user", "a")], [parts("assistant", "A")], system),
        chat(
            T1,
            2,
            1,
            [parts("user", "a"), parts("assistant", "A"), parts("user", "b")],
            [parts("assistant", "B")],
            system,
        ),
        chat(
            T1,
            3,
            2,
            [parts("assistant", "B"), parts("user", "c")],
            [parts("assistant", "C")],
            system,
        ),
        chat(T1, 4, 3, [parts("user", "a")], [parts("assistant", "A again")]),
    ]
    record = only(write_lines(tmp_path / "t.jsonl", request(*calls)))
    assert flat(record) == [
        ("system", "S"),
        ("human", "a"),
        ("ai", "A"),
        ("human", "b"),
        ("ai", "B"),
        ("human", "c"),
        ("ai", "C"),
        ("human", "a"),
        ("ai", "A again"),
    ]
    assert record.notes == []


def test_an_edited_history_is_a_gap(tmp_path: Path) -> None:
    first = chat(
        T1,
        1,
        0,
        [parts("user", "a"), parts("assistant", "A"), parts("user", "b")],
        [parts("assistant", "B")],
    )
    edited = chat(
        T1,
        2,
        1,
        [parts("user", "a"), parts("assistant", "A"), parts("user", "b2")],
        [parts("assistant", "B2")],
    )
    record = only(write_lines(tmp_path / "t.jsonl", request(first, edited)))
    assert flat(record) == [
        ("human", "a"),
        ("ai", "A"),
        ("human", "b"),
        ("ai", "B"),
        ("human", "b2"),
        ("ai", "B2"),
    ]
    gap = (
        f"trace {T1}, span {sid(2)} (line 1): the history it sent repeats messages 0-1 of the "
        "conversation and then departs from it (truncated or edited); its 1 later messages were "
        "appended after the conversation so far"
    )
    assert record.notes == [f"gap: {gap}"]
    assert record.sample is not None
    assert (record.sample.metadata or {})["otel"]["gaps"] == [gap]


def test_an_agent_span_wrapping_the_calls_adds_nothing(tmp_path: Path) -> None:
    agent = span(
        T1,
        1,
        "invoke_agent bot",
        0,
        {
            "gen_ai.operation.name": "invoke_agent",
            "gen_ai.conversation.id": "c-9",
            "gen_ai.input.messages": json.dumps([parts("user", "a")]),
            "gen_ai.output.messages": json.dumps([parts("assistant", "A")]),
        },
        seconds=5,
    )
    inner = chat(T1, 2, 0.5, [parts("user", "a")], [parts("assistant", "A")], parent=1)
    record = only(write_lines(tmp_path / "t.jsonl", request(agent, inner)))
    assert flat(record) == [("human", "a"), ("ai", "A")]
    assert record.sample is not None and record.sample.id == "c-9"


def test_parallel_tool_results_go_after_their_call(tmp_path: Path) -> None:
    """Two tool calls answered by two execute_tool spans, the second recorded first: the results
    follow the order of the calls, as the next call re-sends them."""
    calls = [tool_call("c1", "f", x=1), tool_call("c2", "g", y=2)]
    first = chat(T1, 1, 0, [parts("user", "a")], [parts("assistant", *calls)])

    def run(number: int, at: float, name: str, call_id: str) -> dict:
        return span(
            T1,
            number,
            f"execute_tool {name}",
            at,
            {
                "gen_ai.operation.name": "execute_tool",
                "gen_ai.tool.name": name,
                "gen_ai.tool.call.id": call_id,
                "gen_ai.tool.call.result": f"{name} done",
            },
        )

    history = [
        parts("user", "a"),
        parts("assistant", *calls),
        parts("tool", tool_response("c1", "f done")),
        parts("tool", tool_response("c2", "g done")),
    ]
    last = chat(T1, 4, 3, history, [parts("assistant", "done")])
    record = only(
        write_lines(
            tmp_path / "t.jsonl", request(first, run(3, 1, "g", "c2"), run(2, 2, "f", "c1"), last)
        )
    )
    assert flat(record) == [
        ("human", "a"),
        ("ai", "", [("f", {"x": 1}, "c1"), ("g", {"y": 2}, "c2")]),
        ("tool", "f done", "c1"),
        ("tool", "g done", "c2"),
        ("ai", "done"),
    ]


def test_gaps_are_said_not_filled(tmp_path: Path) -> None:
    """A call without recorded content, a tool call never answered, a tool run that answers no
    recorded call, and an unrecorded tool result: the conversation is read, each gap is said."""
    blind = span(T1, 1, "chat", 0, {"gen_ai.operation.name": "chat", "gen_ai.conversation.id": "g"})
    asked = chat(T1, 2, 1, [parts("user", "a")], [parts("assistant", tool_call("c1", "f"))])
    stray = span(
        T1,
        3,
        "execute_tool h",
        2,
        {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "h",
            "gen_ai.tool.call.id": "zz",
        },
    )
    silent = span(
        T1,
        4,
        "execute_tool f",
        3,
        {
            "gen_ai.operation.name": "execute_tool",
            "gen_ai.tool.name": "f",
            "gen_ai.tool.call.id": "c1",
        },
    )
    unanswered = chat(T1, 5, 4, [parts("user", "b")], [parts("assistant", tool_call("c2", "k"))])
    record = only(
        write_lines(tmp_path / "t.jsonl", request(blind, asked, stray, silent, unanswered))
    )
    assert flat(record) == [
        ("human", "a"),
        ("ai", "", [("f", {}, "c1")]),
        ("tool", "", "c1"),
        ("human", "b"),
        ("ai", "", [("k", {}, "c2")]),
    ]
    label = f"trace {T1}, span"
    assert record.notes == [
        f"gap: {label} {sid(1)} (line 1): a model call with no recorded messages (was message "
        "content capture off?)",
        f"gap: {label} {sid(3)} (line 1): the execution of tool 'h' (call id zz) answers no "
        "recorded tool call; it is kept in metadata.otel.spans only",
        f"gap: {label} {sid(4)} (line 1): the result of tool call c1 was not recorded (its "
        "message is empty)",
        f"gap: {label} {sid(5)} (line 1): tool call c2 (k) has no recorded result",
    ]
