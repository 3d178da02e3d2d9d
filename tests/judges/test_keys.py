"""The judge's API key is stored and printed nowhere (issue 32, "Keys"): a judge that echoes the
key it received inside normal answers, or a batch server that refuses a batch naming it, leaves
no trace of it (bare, `Bearer KEY`, or a prefix with the rest masked) in the results file, the
sidecar, the HTML report, the judge cache's bytes or the console. Every layer that stores or
shows text scrubs it, each checked on its own as well as end to end."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from _batch_server import BatchServer, schema_answer
from _parcel import parcels

from _cli import convoeval
from convoeval import (
    AIMessage,
    EvaluationResult,
    HumanMessage,
    JudgeAuthError,
    MultiTurnSample,
    ToolCall,
    evaluate,
)
from convoeval.judges import JudgeConfigError
from convoeval.judges.core.cache import JudgeCache
from convoeval.judges.protocol._redact import MASK, register_secret, scrub

#: The key the judge is built with; the servers echo what they received.
KEY = "sk-keytest-7Qb2x9LmZp4Rt8Wv1Ny6Kc3Hd5Jf0"


def forms(key: str) -> list[str]:
    """The key in every form a server may echo it: bare, as a bearer token, as OpenAI's
    "Incorrect API key provided" shows it (its start, the rest masked, its end), truncated."""
    return [key, f"Bearer {key}", f"{key[:8]}{'*' * 24}{key[-4:]}", f"{key[:20]}..."]


def echoed(key: str) -> str:
    """Every form of the key in one text."""
    return " / ".join(forms(key))


def leaks(text: str, key: str = KEY) -> list[str]:
    """Every trace of `key` in `text`: any 12 characters of it in a row, or its masked forms."""
    found = [key[i : i + 12] for i in range(len(key) - 11) if key[i : i + 12] in text]
    found += [form for form in (key[:8] + "*", "*" + key[-4:]) if form in text]
    return found


def _echoing(body: dict[str, Any], key: str) -> dict[str, Any]:
    """A schema-valid answer whose topics and reasons carry the key in every form."""
    answer = schema_answer(body)
    topics = iter(range(1000))

    def walk(value: Any, name: str = "") -> Any:
        if isinstance(value, dict):
            return {k: walk(v, k) for k, v in value.items()}
        if isinstance(value, list):
            return [walk(v, name) for v in value]
        if isinstance(value, str) and name == "topic":  # at most 80 characters: one form each
            return f"{value[:20]} {forms(key)[next(topics) % 4]}"
        if isinstance(value, str) and "reason" in name:
            return f"{value} {echoed(key)}"
        return value

    return dict(walk(answer))


def _data(tmp_path: Path, count: int) -> Path:
    path = tmp_path / "data.jsonl"
    with path.open("w") as handle:
        for sample in parcels(count):
            handle.write(json.dumps(sample.to_dict()) + "\n")
    return path


def _convoeval(
    tmp_path: Path, *args: str, cache: str = "cache"
) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "CONVOEVAL_CACHE_DIR": str(tmp_path / cache)}
    env.pop("OPENAI_API_KEY", None)
    return convoeval(*args, cwd=tmp_path, env=env)


def _no_trace_anywhere(tmp_path: Path, done: subprocess.CompletedProcess[str]) -> None:
    """No file under `tmp_path` (results, sidecar, report, cache database and its WAL) and
    neither output stream holds any trace of the key."""
    files = [p for p in tmp_path.rglob("*") if p.is_file() and p.name != "data.jsonl"]
    assert any(p.suffix == ".sqlite3" for p in files), files  # the cache was written
    for path in files:
        assert leaks(path.read_bytes().decode("utf-8", "replace")) == [], path
    assert leaks(done.stdout) == [] and leaks(done.stderr) == []


def test_a_judge_echoing_the_key_in_its_answers_leaves_no_trace(
    tmp_path: Path, fault_server: Any
) -> None:
    fault_server.key_responder = _echoing
    _data(tmp_path, 3)
    done = _convoeval(
        tmp_path, "run", "data.jsonl", "-m", "topic_adherence,conversation_relevancy",
        "--judge", "openai/m", "--base-url", fault_server.url, "--api-key", KEY,
        "-o", "r.jsonl", "--report", "report.html",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert {h["authorization"] for h in fault_server.headers} == {f"Bearer {KEY}"}
    _no_trace_anywhere(tmp_path, done)
    # The answers did echo the key, and it was masked where they are kept.
    rows = [json.loads(line) for line in (tmp_path / "r.jsonl").read_text().splitlines()]
    topics = rows[0]["details"]["topic_adherence"]["topics"]
    assert MASK in json.dumps(topics) and MASK in (tmp_path / "report.html").read_text()
    assert all(r["scores"]["topic_adherence"] is not None for r in rows)


def test_batch_answers_and_a_refused_batch_naming_the_key_leave_no_trace(
    server: BatchServer, tmp_path: Path
) -> None:
    server.responder = lambda body: _echoing(body, KEY)
    _data(tmp_path, 3)
    args = ["run", "data.jsonl", "-m", "topic_adherence", "--judge", "openai/m"]
    args += ["--base-url", server.url, "--api-key", KEY, "--batch"]
    answered = _convoeval(tmp_path, *args, "-o", "answered.jsonl", "--report", "a.html")
    assert answered.returncode == 0, answered.stderr
    assert server.authorizations == {f"Bearer {KEY}"}
    server.refuse = {len(server.batches) + 1: ("invalid_api_key", echoed(KEY))}
    refused = _convoeval(tmp_path, *args, "-o", "refused.jsonl", cache="cache-2")  # all asked
    assert refused.returncode == 4, refused.stderr
    meta = json.loads((tmp_path / "refused.jsonl.meta.json").read_text())
    error = meta["batches"][0]["error"]
    assert error.startswith("invalid_api_key: ") and MASK in error, error
    for done in (answered, refused):
        _no_trace_anywhere(tmp_path, done)


def test_scrub_masks_every_form_of_a_registered_key() -> None:
    key = "gw-token-Z81mQ4vX0pLs9TaW"
    register_secret(key)
    text = (
        f"bare {key}; header Bearer {key}; shown as {key[:6]}***{key[-3:]} or {key[:9]}•••• "
        f"or {key[:10]}...; json {json.dumps({'k': key})}; a piece {key[4:18]} end"
    )
    masked = scrub(text)
    assert leaks(masked, key) == [] and key[:6] + "*" not in masked, masked
    assert masked.startswith(f"bare {MASK}; header Bearer {MASK}; shown as {MASK} or {MASK} ")
    assert masked.endswith(f"a piece {MASK} end")
    # Text that merely shares a few characters with the key is left alone.
    assert scrub("the gw-t gateway") == "the gw-t gateway"


def test_scrub_masks_a_key_json_html_and_url_escaped() -> None:
    import html
    from urllib.parse import quote

    key = 'tok"en&val+ue/9Lw2Qa<7'
    register_secret(key)
    for form in (json.dumps(key)[1:-1], html.escape(key), quote(key, safe="")):
        assert form != key and scrub(f"[{form}]") == f"[{MASK}]", form


def test_short_keys_and_placeholders_do_not_mask_ordinary_words() -> None:
    register_secret("ollama")  # local servers take any short word as a key
    assert scrub("ollama serves the model") == "ollama serves the model"


def test_each_writer_scrubs_what_reaches_it(tmp_path: Path) -> None:
    """The last line of defence: rows, the sidecar and the report are scrubbed when written,
    whatever put the key there."""
    key = "sk-writer-Hq73nV0aPz2Lm8Rx"
    register_secret(key)
    calls = [ToolCall(name="find", args={"n": 1})]
    samples = [
        MultiTurnSample(
            user_input=[HumanMessage(content="find 1"), AIMessage(content="", tool_calls=calls)],
            reference_tool_calls=calls,
        )
    ]
    result = evaluate(samples, ["tool_call_f1"], output=tmp_path / "r.jsonl", show_progress=False)
    from convoeval.report import write_report
    from convoeval.rows.files import write_meta
    from convoeval.runner._schedule import Writer

    rows = list(result.rows())
    with (tmp_path / "r.jsonl").open("w") as handle:
        writer = Writer(handle, lambda row: None)
        for row in rows:
            row["reasons"]["tool_call_f1"] = f"echo {key}"
            writer.write(row)
    write_meta(tmp_path / "r.jsonl", {**result.meta, "note": f"Bearer {key}"})  # type: ignore[typeddict-unknown-key]
    for path in (tmp_path / "r.jsonl", tmp_path / "r.jsonl.meta.json"):
        text = path.read_text()
        assert leaks(text, key) == [] and MASK in text, path
    # A results file written before the key was scrubbed (put back here by hand) is scrubbed
    # when shown, in the report and the notebook view.
    with (tmp_path / "r.jsonl").open("w") as handle:
        for row in rows:
            handle.write(json.dumps({**row, "id": f"id {key}"}) + "\n")
    old = EvaluationResult.from_file(tmp_path / "r.jsonl")
    report = write_report(old, tmp_path / "r.html")
    assert leaks(report.read_text(), key) == [] and MASK in report.read_text()
    notebook = old._repr_html_()
    assert leaks(notebook, key) == [] and MASK in notebook


def test_every_key_a_judge_is_built_with_is_registered(tmp_path: Path) -> None:
    """The API key, and a password or a query value of the base URL, of a live or batch judge."""
    from convoeval.judges import OpenAIBatchJudge, OpenAIJudge

    secrets = ["sk-live-registered-4Tz8", "url-password-77Q", "query-value-6Kd2", "sk-batch-3Wq9Hn"]
    url = f"http://user:{secrets[1]}@127.0.0.1:9/v1?api-key={secrets[2]}"
    OpenAIJudge("m", base_url=url, api_key=secrets[0], cache=False)
    OpenAIBatchJudge(
        "m", base_url="http://127.0.0.1:9/v1", api_key=secrets[3], cache=JudgeCache(tmp_path / "c")
    )
    for secret in secrets:
        assert scrub(f"said {secret}.") == f"said {MASK}."


def test_answers_are_scrubbed_before_the_cache_and_when_read_from_it(
    tmp_path: Path, fault_server: Any
) -> None:
    """An answer leaves the judge layer, and enters its cache, without the key; an entry an
    older version cached with the key in it is scrubbed when read."""
    import sqlite3

    from convoeval import OpenAIJudge, TopicAdherenceScore
    from convoeval.judges.core.cache import JudgeCache

    fault_server.key_responder = _echoing
    path = tmp_path / "c.sqlite3"
    judge = OpenAIJudge("m", base_url=fault_server.url, api_key=KEY, cache=JudgeCache(path))
    sample = parcels(1)[0]
    first = TopicAdherenceScore().score_sync(sample, judge=judge)
    assert leaks(json.dumps(first.details)) == [] and MASK in json.dumps(first.details)
    assert leaks(path.read_bytes().decode("utf-8", "replace")) == []
    assert judge.cache is not None
    judge.cache.close()
    with sqlite3.connect(path) as conn:  # as an older version stored them
        conn.execute("UPDATE answers SET value = replace(value, ?, ?)", (MASK, KEY))
    asked = fault_server.attempts
    again = OpenAIJudge("m", base_url=fault_server.url, api_key=KEY, cache=JudgeCache(path))
    second = TopicAdherenceScore().score_sync(sample, judge=again)
    assert fault_server.attempts == asked  # every answer came from the cache
    assert second.details == first.details


async def test_a_refusal_echoing_a_short_key_masks_it(fault_server: Any) -> None:
    """A key too short to scrub from everything (under 8 characters) is still masked in the
    refusal's message."""
    from convoeval import OpenAIJudge, TopicAdherenceScore

    fault_server.error(401, "key k-12345 is not valid").forever()
    judge = OpenAIJudge("m", base_url=fault_server.url, api_key="k-12345", cache=False)
    with pytest.raises(JudgeAuthError) as caught:
        await TopicAdherenceScore().score(parcels(1)[0], judge=judge)
    assert "k-12345" not in str(caught.value) and f"key {MASK} is not valid" in str(caught.value)


@pytest.mark.parametrize("status", [401, 403])
def test_evaluate_raises_judge_auth_error_with_the_message_scrubbed(
    fault_server: Any, status: int
) -> None:
    from convoeval import OpenAIJudge

    fault_server.error(status, f"Incorrect API key provided: {echoed(KEY)}").forever()
    judge = OpenAIJudge("m", base_url=fault_server.url, api_key=KEY, cache=False)
    with pytest.raises(JudgeAuthError) as caught:
        evaluate(parcels(5), ["conversation_relevancy"], judge, show_progress=False)
    assert isinstance(caught.value, JudgeConfigError)
    text = str(caught.value)
    assert f"HTTP {status}" in text and "Incorrect API key provided" in text
    assert leaks(text) == [] and leaks(repr(caught.value.args)) == []
