"""The Batch API judge against a local Files + Batches server (tests/judges/_batch_server.py):
one batch per round, the re-ask in the next round, failed lines retried in a follow-up batch then
recorded as failures, a lost and an expired batch, a batch refused as a whole, the batch price
and request count."""

from __future__ import annotations

import asyncio
import json
import logging
from pathlib import Path
from typing import Any

import pytest
from _batch_server import BatchServer, schema_answer
from _parcel import parcels

from convoeval import evaluate
from convoeval.judges import JudgeCache, JudgeConfigError, resolve_judge
from convoeval.judges.core.backend import BackendReply
from convoeval.judges.core.endpoints import EndpointRegistry
from convoeval.judges.openai._batch_rounds import Line, Rounds
from convoeval.judges.openai.batch import OpenAIBatchJudge
from convoeval.judges.pricing import PRICES, estimate_cost
from convoeval.judges.protocol.base import Usage

EXTRACT = "topic_adherence_extract_topics"


def _judge(server: BatchServer, tmp_path: Path, **options: Any) -> OpenAIBatchJudge:
    return OpenAIBatchJudge(
        "m",
        base_url=server.url,
        api_key="sk-test",
        cache=JudgeCache(tmp_path / "cache.sqlite3"),
        registry=EndpointRegistry(),
        poll=0.01,
        **options,
    )


def _schema(body: dict[str, Any]) -> str:
    return str(body["response_format"]["json_schema"]["name"])


def _run(judge: OpenAIBatchJudge, tmp_path: Path, count: int) -> Any:
    out = tmp_path / "results.jsonl"
    return evaluate(parcels(count), ["topic_adherence"], judge, output=out, show_progress=False)


def test_a_multi_record_run_sends_one_batch_per_round(server: BatchServer, tmp_path: Path) -> None:
    judge = _judge(server, tmp_path)
    result = _run(judge, tmp_path, 6)
    assert result.summary()["topic_adherence"]["scored"] == 6
    # Round 1: six extractions; round 2: both verdict steps of the six records.
    assert [len(b) for b in server.batches] == [6, 12] and server.twice() == []
    cache = JudgeCache(tmp_path / "cache.sqlite3")
    for cid in server.batches[0] + server.batches[1]:
        assert len(cid) == 64 and cache.get(cid) is not None  # custom_id = the cache key
    usage = result.usage_summary()
    assert (usage["requests"], usage["batch_requests"]) == (18, 18)
    assert "18 requests by batch" in usage["cost_note"]
    entries = result.meta["batches"]
    assert [(e["id"], e["status"], e["requests"]) for e in entries] == [
        ("batch_1", "collected", 6),
        ("batch_2", "collected", 12),
    ]
    assert len(JudgeCache(tmp_path / "cache.sqlite3")) == 18
    again = evaluate(parcels(6), ["topic_adherence"], _judge(server, tmp_path), show_progress=False)
    assert again.usage.cached == 18 and len(server.batches) == 2  # answered from the cache


def test_an_invalid_answer_is_re_asked_in_the_next_round(
    server: BatchServer, tmp_path: Path
) -> None:
    def answer(body: dict[str, Any]) -> Any:
        reask = any("could not be accepted" in str(m["content"]) for m in body["messages"])
        prompt = str(body["messages"][1]["content"])
        if _schema(body) == EXTRACT and "parcel 0?" in prompt and not reask:
            bad = schema_answer(body)
            bad["topics"][0]["message_index"] = 1  # the assistant's message: the check fails
            return bad
        return schema_answer(body)

    server.responder = answer
    result = _run(_judge(server, tmp_path), tmp_path, 3)
    assert result.summary()["topic_adherence"]["scored"] == 3
    first, second, third = server.batches
    assert len(first) == 3 and not any(c.endswith("~reask") for c in first)
    reasks = [c for c in second if c.endswith("~reask")]
    assert len(reasks) == 1 and reasks[0].removesuffix("~reask") in first
    assert len(second) == 1 + 4 and len(third) == 2  # r0's verdicts come a round later


def test_failed_lines_are_retried_in_follow_up_batches_then_recorded_as_failures(
    server: BatchServer, tmp_path: Path
) -> None:
    judge = _judge(server, tmp_path)
    doomed: list[str] = []

    def fail(cid: str, times: int, body: Any) -> int | None:
        if not doomed:
            doomed.append(cid)  # the first line of the first batch always fails
        if cid == doomed[0]:
            return 500
        return 503 if times == 0 and cid == server.batches[0][1] else None  # fails once

    server.fail = fail
    result = _run(judge, tmp_path, 3)
    stats = result.summary()["topic_adherence"]
    assert (stats["scored"], stats["failed"]) == (2, 1)
    assert [cid for batch in server.batches for cid in batch].count(doomed[0]) == 3
    assert server.batches[0][1] in server.batches[1]  # the transient failure, retried once
    error = next(r["errors"]["topic_adherence"] for r in result.rows() if r["errors"])
    assert "gave up after 3 attempts" in error["message"] and "HTTP 500" in error["message"]


def test_a_lost_batch_and_an_expired_batch_are_sent_again(
    server: BatchServer, tmp_path: Path
) -> None:
    server.lose = {1}
    server.expire = {2}
    result = _run(_judge(server, tmp_path), tmp_path, 4)
    assert result.summary()["topic_adherence"]["scored"] == 4
    first, second, third = server.batches[:3]
    assert sorted(second) == sorted(first)  # lost: every request again
    answered, expired = second[:2], second[2:]
    assert set(expired) <= set(third) and not set(answered) & set(third)
    statuses = [(e["id"], e["status"], e.get("final")) for e in result.meta["batches"]]
    assert statuses[:2] == [("batch_1", "lost", None), ("batch_2", "collected", "expired")]


def test_a_batch_refused_as_a_whole_fails_its_samples_and_a_rerun_sends_only_those(
    server: BatchServer, tmp_path: Path
) -> None:
    """A batch the server refuses as a whole (status `failed`, its `errors` set: an invalid input
    file, a model the batch endpoint does not serve, an enqueued-token limit) is not sent again
    by the run: the same input file would be refused the same way, and a limit that clears later
    is better met by rerunning than by a follow-up batch sent at once. Every sample waiting on it
    is recorded as a failure naming the batch and the server's error (no score); the round-1
    answers stay cached, so `retry_failed` sends only the refused requests again."""
    server.refuse = {2: ("token_limit_exceeded", "Enqueued token limit reached for m")}
    out = tmp_path / "results.jsonl"
    result = _run(_judge(server, tmp_path), tmp_path, 3)
    stats = result.summary()["topic_adherence"]
    assert (stats["scored"], stats["failed"]) == (0, 3)
    assert [len(b) for b in server.batches] == [3, 6]  # the refused batch was not sent again
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["scores"]["topic_adherence"] for r in rows] == [None] * 3
    for row in rows:
        message = row["errors"]["topic_adherence"]["message"]
        assert "the server refused batch batch_2" in message
        assert "token_limit_exceeded: Enqueued token limit reached for m (input line 1)" in message
    entries = [(e["id"], e["status"], e["requests"]) for e in result.meta["batches"]]
    assert entries == [("batch_1", "collected", 3), ("batch_2", "failed", 6)]
    assert "token_limit_exceeded" in result.meta["batches"][1]["error"]

    again = evaluate(
        parcels(3),
        ["topic_adherence"],
        _judge(server, tmp_path),
        output=out,
        retry_failed=True,
        show_progress=False,
    )
    assert again.summary()["topic_adherence"]["scored"] == 3
    assert sorted(server.batches[2]) == sorted(server.batches[1])  # round 1 came from the cache
    assert len(server.batches) == 3 and server.twice() == sorted(server.batches[1])
    statuses = [(e["id"], e["status"]) for e in again.meta["batches"]]
    assert statuses == [("batch_1", "collected"), ("batch_2", "failed"), ("batch_3", "collected")]


def test_a_batch_whose_creation_answer_was_lost_is_found_not_sent_again(
    server: BatchServer, tmp_path: Path
) -> None:
    server.hide = {1}  # created, but the client is told HTTP 500
    result = _run(_judge(server, tmp_path), tmp_path, 2)
    assert result.summary()["topic_adherence"]["scored"] == 2
    assert [len(b) for b in server.batches] == [2, 4] and server.twice() == []


def test_a_refused_response_format_falls_back_to_json_mode_in_the_next_batch(
    server: BatchServer, tmp_path: Path
) -> None:
    def fail(cid: str, times: int, body: dict[str, Any]) -> tuple[int, str] | None:
        if body["response_format"]["type"] == "json_schema":
            return 400, "response_format json_schema is not supported by this model"
        return None

    server.fail = fail
    result = _run(_judge(server, tmp_path), tmp_path, 2)
    assert result.summary()["topic_adherence"]["scored"] == 2
    first, second, third = server.batches
    assert not any("~" in cid for cid in first)
    assert sorted(second) == sorted(f"{cid}~mode-json_object" for cid in first)
    assert all(cid.endswith("~mode-json_object") for cid in third) and len(third) == 4


async def test_a_step_that_never_joins_does_not_hold_the_round() -> None:
    """Which rule sent each batch is told by the timers that could fire, not by the clock: in
    each phase the other rule's timer is an hour."""
    sent: list[list[str]] = []
    hour = 3600.0

    async def submit(lines: dict[str, Line]) -> dict[str, Any]:
        sent.append(sorted(lines))
        return {cid: BackendReply(content="{}") for cid in lines}

    def within_a_minute(waits: Any) -> Any:
        return asyncio.wait_for(waits, 60)

    rounds = Rounds(submit, settle=hour, quiet=0.01, max_requests=3)
    rounds.enter()  # a step busy elsewhere: the round is never complete...
    rounds.enter()
    answer = await within_a_minute(rounds.wait("a", {}, "json_schema"))
    assert isinstance(answer, BackendReply) and sent == [["a"]]  # ...sent by the quiet period
    rounds.leave()
    rounds.leave()
    rounds.settle, rounds.quiet = 0.01, hour
    rounds.enter()  # every step in progress waits: sent after the settle time
    rounds.enter()
    both = (rounds.wait("b", {}, "json_schema"), rounds.wait("b", {}, "json_schema"))
    await within_a_minute(asyncio.gather(*both))
    assert sent[1] == ["b"]  # one line for both
    rounds.leave()
    rounds.leave()
    rounds.settle, rounds.quiet = hour, 0.01
    for _ in range(4):
        rounds.enter()
    got = await within_a_minute(
        asyncio.gather(*(rounds.wait(c, {}, "json_schema") for c in "cdef"))
    )
    assert len(got) == 4 and sent[2:] == [["c", "d", "e"], ["f"]]  # the size limit: at once


def test_the_batch_price_is_half_the_list_price_and_the_note_counts_the_requests() -> None:
    usage = Usage(requests=4, prompt_tokens=1_000_000, completion_tokens=1_000_000)
    judge = {
        "kind": "openai-batch",
        "model": "gpt-4o-mini",
        "endpoint": "https://api.openai.com/v1",
    }
    live, _ = estimate_cost(judge, usage)
    batch, note = estimate_cost({**judge, "batch": True}, usage)
    assert live == pytest.approx(sum(PRICES["gpt-4o-mini"]))
    assert batch == pytest.approx(live / 2)
    assert note == (
        "OpenAI batch price of gpt-4o-mini (built-in table, half the list price); "
        "4 requests by batch"
    )


def test_the_batch_judge_needs_the_cache_and_an_llm_judge(tmp_path: Path) -> None:
    with pytest.raises(JudgeConfigError, match="needs the answer cache"):
        resolve_judge("openai/m", base_url="http://127.0.0.1:9/v1", cache=False, batch=True)
    with pytest.raises(JudgeConfigError, match="offline judge sends none"):
        resolve_judge("offline", batch=True)
    judge = resolve_judge("openai/m", base_url="http://127.0.0.1:9/v1", batch=True)
    assert isinstance(judge, OpenAIBatchJudge) and judge.describe()["batch"] is True
    assert judge.describe()["concurrency"] is None and judge.describe()["timeout"] is None


def test_identical_requests_share_one_line(server: BatchServer, tmp_path: Path) -> None:
    samples = parcels(1) * 3  # three records asking exactly the same questions
    for i, sample in enumerate(samples):
        samples[i] = sample.model_copy(update={"id": f"copy{i}"})
    out = tmp_path / "results.jsonl"
    evaluate(
        samples, ["topic_adherence"], _judge(server, tmp_path), output=out, show_progress=False
    )
    assert [len(b) for b in server.batches] == [1, 2]
    rows = [json.loads(line) for line in out.read_text().splitlines()]
    assert [r["scores"]["topic_adherence"] for r in rows] == [
        rows[0]["scores"]["topic_adherence"]
    ] * 3


def test_a_batch_created_but_not_recorded_is_found_by_its_input_file(
    server: BatchServer, tmp_path: Path
) -> None:
    out = tmp_path / "results.jsonl"
    first = _judge(server, tmp_path / "a")
    evaluate(parcels(2), ["topic_adherence"], first, output=out, show_progress=False)
    # As if the run had been killed after creating batch 1 but before recording its id, and
    # before writing a row: the sidecar knows only the uploaded input file.
    sidecar = out.with_name(out.name + ".meta.json")
    meta = json.loads(sidecar.read_text())
    meta["batches"][0].update(status="uploaded")
    del meta["batches"][0]["id"]
    sidecar.write_text(json.dumps(meta))
    out.write_text("")
    second = _judge(server, tmp_path / "b")  # a fresh cache: only batch 1's lines can answer
    result = evaluate(parcels(2), ["topic_adherence"], second, output=out, show_progress=False)
    assert result.summary()["topic_adherence"]["scored"] == 2
    assert [len(b) for b in server.batches] == [2, 4, 4]  # round 1 was not sent again
    assert server.twice() == sorted(server.batches[1])
    assert result.meta["batches"][0]["id"] == "batch_1"


def test_the_key_goes_to_the_server_only_never_into_a_repr_a_log_or_a_file(
    server: BatchServer, tmp_path: Path, caplog: pytest.LogCaptureFixture
) -> None:
    caplog.set_level(logging.DEBUG)  # httpx's and the openai SDK's request logs included
    judge, key = _judge(server, tmp_path), "sk-test"
    assert _run(judge, tmp_path, 2).summary()["topic_adherence"]["scored"] == 2
    assert server.authorizations == {f"Bearer {key}"}
    shown = (judge, judge.backend, judge._batch.api, judge._batch.chat, judge.describe())
    files = [p.read_text() for p in tmp_path.glob("results.jsonl*")]
    assert "HTTP Request: POST" in caplog.text and len(files) == 2
    assert key not in "".join([*map(repr, shown), *map(str, shown), caplog.text, *files])
