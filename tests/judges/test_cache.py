"""The SQLite answer cache: hits send no request, keys follow every part, writers share it."""

from __future__ import annotations

import asyncio
import multiprocessing
import pickle
import sqlite3
from pathlib import Path
from typing import TYPE_CHECKING, Any

import pytest
from pydantic import BaseModel

from convoeval.judges import JudgeCache, JudgeError, OpenAIJudge, Step
from convoeval.judges.core.cache import cache_key, default_cache_dir
from convoeval.judges.core.retry import RetryPolicy

if TYPE_CHECKING:
    from conftest import FaultServer, Verdict

FAST = RetryPolicy(max_retries=1, base_delay_s=0.01)
GOOD = {"verdict": True, "label": "yes"}
SECRET = "sk-cache-secret-0123456789"


def _judge(server: FaultServer, cache: JudgeCache | bool, **options: Any) -> OpenAIJudge:
    return OpenAIJudge(
        "fault-model", base_url=server.url, api_key=SECRET, cache=cache, retry=FAST, **options
    )


async def test_second_run_sends_no_request(
    fault_server: FaultServer, verdict_step: Step[Verdict], tmp_path: Path
) -> None:
    cache = JudgeCache(tmp_path / "cache.sqlite3")
    fault_server.reply(GOOD)
    first = await _judge(fault_server, cache).run(verdict_step, {"statement": "a"})
    assert first.usage.requests == 1 and first.usage.cached == 0
    again = await _judge(fault_server, JudgeCache(cache.path)).run(verdict_step, {"statement": "a"})
    assert fault_server.attempts == 1  # the second run never reached the server
    assert again.output == first.output
    assert again.usage.requests == 0 and again.usage.cached == 1
    assert len(cache) == 1


async def test_miss_on_other_inputs_and_settings(
    fault_server: FaultServer, verdict_step: Step[Verdict], tmp_path: Path
) -> None:
    cache = JudgeCache(tmp_path / "cache.sqlite3")
    fault_server.reply(GOOD).forever()
    await _judge(fault_server, cache).run(verdict_step, {"statement": "a"})
    await _judge(fault_server, cache).run(verdict_step, {"statement": "b"})
    await _judge(fault_server, cache, temperature=0.7).run(verdict_step, {"statement": "a"})
    await _judge(fault_server, cache, seed=1).run(verdict_step, {"statement": "a"})
    assert fault_server.attempts == 4 and len(cache) == 4
    await _judge(fault_server, cache, seed=1).run(verdict_step, {"statement": "a"})
    assert fault_server.attempts == 4


async def test_cache_off_always_asks(
    fault_server: FaultServer, verdict_step: Step[Verdict]
) -> None:
    fault_server.reply(GOOD).forever()
    judge = _judge(fault_server, False)
    for _ in range(3):
        answer = await judge.run(verdict_step, {"statement": "a"})
        assert answer.usage.cached == 0
    assert fault_server.attempts == 3 and judge.describe()["cache"] is False


async def test_default_cache_lives_in_the_configured_directory(
    fault_server: FaultServer,
    verdict_step: Step[Verdict],
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("CONVOEVAL_CACHE_DIR", str(tmp_path / "here"))
    assert default_cache_dir() == tmp_path / "here"
    fault_server.reply(GOOD)
    judge = _judge(fault_server, True)
    await judge.run(verdict_step, {"statement": "a"})
    assert judge.cache is not None and judge.cache.path.parent == tmp_path / "here"
    assert len(JudgeCache(judge.cache.path)) == 1


async def test_only_validated_answers_are_stored(
    fault_server: FaultServer, verdict_step: Step[Verdict], tmp_path: Path
) -> None:
    cache = JudgeCache(tmp_path / "cache.sqlite3")
    fault_server.reply({"verdict": "maybe"}).forever()
    with pytest.raises(JudgeError):
        await _judge(fault_server, cache).run(verdict_step, {"statement": "a"})
    assert len(cache) == 0


async def test_api_key_never_reaches_the_database(
    fault_server: FaultServer, verdict_step: Step[Verdict], tmp_path: Path
) -> None:
    cache = JudgeCache(tmp_path / "cache.sqlite3")
    fault_server.reply(GOOD).forever()
    for i in range(5):
        await _judge(fault_server, cache).run(verdict_step, {"statement": f"s{i}"})
    assert fault_server.headers[0]["authorization"] == f"Bearer {SECRET}"  # the key was used
    files = list(tmp_path.glob("cache.sqlite3*"))
    assert files and sum(f.stat().st_size for f in files) > 0
    for file in files:
        assert SECRET.encode() not in file.read_bytes()
        assert b"sk-cache-secret" not in file.read_bytes()


class _Other(BaseModel):
    verdict: bool
    label: str
    confidence: float


def _key(**changes: Any) -> str:
    parts: dict[str, Any] = {
        "endpoint": "http://127.0.0.1:1/v1",
        "model": "m",
        "step": "s",
        "version": 1,
        "system": "sys",
        "user": "user prompt",
        "schema": {"type": "object"},
        "sampling": {"temperature": 0.0, "seed": None, "max_tokens": None},
    }
    parts.update(changes)
    return cache_key(**parts)


def test_key_changes_with_every_part_that_shapes_an_answer() -> None:
    base = _key()
    assert base == _key() and len(base) == 64
    variants = [
        _key(model="m2"),
        _key(endpoint="http://127.0.0.1:2/v1"),
        _key(step="s2"),
        _key(version=2),
        _key(system="other instructions"),
        _key(user="another user prompt"),
        _key(schema=_Other.model_json_schema()),
        _key(sampling={"temperature": 0.5, "seed": None, "max_tokens": None}),
        _key(sampling={"temperature": 0.0, "seed": 3, "max_tokens": None}),
        _key(sampling={"temperature": 0.0, "seed": None, "max_tokens": 100}),
    ]
    assert len({base, *variants}) == len(variants) + 1


async def test_schema_change_misses(
    fault_server: FaultServer, verdict_step: Step[Verdict], tmp_path: Path
) -> None:
    cache = JudgeCache(tmp_path / "cache.sqlite3")
    other = Step(
        name=verdict_step.name,
        version=verdict_step.version,
        instructions=verdict_step.instructions,
        template=verdict_step.template,
        output=_Other,
    )
    fault_server.reply(GOOD).reply({"verdict": True, "label": "yes", "confidence": 0.5})
    await _judge(fault_server, cache).run(verdict_step, {"statement": "a"})
    answer = await _judge(fault_server, cache).run(other, {"statement": "a"})
    assert isinstance(answer.output, _Other) and fault_server.attempts == 2


def _write_many(path: str, worker: int, count: int) -> None:
    cache = JudgeCache(path)
    for i in range(count):
        cache.put(f"shared-{i}", f'{{"worker": {worker}}}', step="s", model="m")
        cache.put(f"own-{worker}-{i}", f'{{"i": {i}}}', step="s", model="m")
        assert cache.get(f"own-{worker}-{i}") == f'{{"i": {i}}}'


def test_concurrent_writer_processes(tmp_path: Path) -> None:
    path = str(tmp_path / "shared.sqlite3")
    context = multiprocessing.get_context("spawn")
    workers, count = 4, 150
    processes = [context.Process(target=_write_many, args=(path, w, count)) for w in range(workers)]
    for process in processes:
        process.start()
    for process in processes:
        process.join(timeout=120)
    assert [p.exitcode for p in processes] == [0] * workers
    cache = JudgeCache(path)
    assert len(cache) == count + workers * count
    assert cache.get("shared-0") in {f'{{"worker": {w}}}' for w in range(workers)}
    with sqlite3.connect(path) as conn:
        assert conn.execute("PRAGMA journal_mode").fetchone()[0] == "wal"


async def test_concurrent_asyncio_tasks(tmp_path: Path) -> None:
    cache = JudgeCache(tmp_path / "tasks.sqlite3")

    async def work(i: int) -> str | None:
        await cache.aput(f"k{i % 20}", f'"{i}"', step="s", model="m")
        return await cache.aget(f"k{i % 20}")

    results = await asyncio.gather(*(work(i) for i in range(200)))
    assert all(r is not None for r in results)
    assert len(cache) == 20
    cache.clear()
    assert len(cache) == 0


async def test_cached_answer_that_fails_the_check_is_asked_again(
    fault_server: FaultServer, verdict_step: Step[Verdict], tmp_path: Path
) -> None:
    cache = JudgeCache(tmp_path / "cache.sqlite3")
    unchecked = Step(
        name=verdict_step.name,
        version=verdict_step.version,
        instructions=verdict_step.instructions,
        template=verdict_step.template,
        output=verdict_step.output,
    )
    fault_server.reply({"verdict": True, "label": "no"}).reply(GOOD)
    await _judge(fault_server, cache).run(unchecked, {"statement": "a"})
    answer = await _judge(fault_server, cache).run(verdict_step, {"statement": "a"})
    assert answer.output.label == "yes" and answer.usage.cached == 0
    assert fault_server.attempts == 2


async def test_unusable_cache_warns_and_the_answer_still_comes(
    fault_server: FaultServer, verdict_step: Step[Verdict], tmp_path: Path
) -> None:
    blocked = tmp_path / "not-a-database"
    blocked.mkdir()  # a directory where the database file should be
    fault_server.reply(GOOD).forever()
    judge = _judge(fault_server, JudgeCache(blocked))
    with pytest.warns(RuntimeWarning, match="continuing without it"):
        answer = await judge.run(verdict_step, {"statement": "a"})
    assert answer.output.verdict is True and judge.cache is None
    await judge.run(verdict_step, {"statement": "a"})
    assert fault_server.attempts == 2


def test_one_connection_serves_every_call_and_copies_open_their_own(tmp_path: Path) -> None:
    cache = JudgeCache(tmp_path / "kept.sqlite3")
    cache.put("a", '"1"')
    first = cache._conn
    assert first is not None
    cache.put("b", '"2"')
    assert cache.get("a") == '"1"' and cache._conn is first  # opened once, not per call
    copy = pickle.loads(pickle.dumps(cache))  # e.g. sent to a worker process
    assert copy._conn is None and copy.get("b") == '"2"' and copy._conn is not first
    cache.close()
    assert cache._conn is None
    assert cache.get("b") == '"2"' and len(cache) == 2  # a closed cache opens again
    cache.close()
    copy.close()
