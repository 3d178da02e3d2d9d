"""The embedder: integrity check, shape and norm, semantic sanity, batching, laziness."""

from __future__ import annotations

import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import numpy as np
import pytest

from convoeval.judges.offline import Embedder, ModelIntegrityError
from convoeval.judges.offline import embedder as embedder_module
from convoeval.judges.offline.embedder import (
    DIM,
    MODEL_SHA256,
    _chunks,
    default_model_path,
    file_sha256,
)


def test_pinned_model_file_matches() -> None:
    assert file_sha256(default_model_path()) == MODEL_SHA256


def test_vectors_are_384_dim_unit_vectors(embedder: Embedder) -> None:
    vecs = embedder.embed(["How do I reset my password?", "Bonjour", "", "a " * 600])
    assert vecs.shape == (4, DIM)
    assert vecs.dtype == np.float32
    np.testing.assert_allclose(np.linalg.norm(vecs, axis=1), 1.0, atol=1e-5)


def test_similar_sentences_are_closer_than_unrelated(embedder: Embedder) -> None:
    a, b, c = embedder.embed(
        [
            "How can I open a new bank account?",
            "What do I need to open an account at the bank?",
            "The recipe needs two eggs and a cup of flour.",
        ]
    )
    assert float(a @ b) > float(a @ c) + 0.3
    assert float(a @ b) > float(b @ c) + 0.3


def test_batching_gives_the_same_vectors_as_one_by_one() -> None:
    texts = [
        "short",
        "a somewhat longer sentence about trains and timetables",
        "What is the capital of France, and how many people live there today?",
        "ok",
        "Please cancel my reservation for tonight at the Italian place on Main Street.",
    ]
    fresh = Embedder(cache_size=0, batch_size=4)
    batched = fresh.embed(texts)
    single = np.stack([fresh.embed([t])[0] for t in texts])
    np.testing.assert_allclose(batched, single, atol=1e-5)


def test_cache_returns_identical_vectors_and_duplicates_are_embedded_once(
    embedder: Embedder,
) -> None:
    first = embedder.embed(["repeat me", "repeat me", "other"])
    second = embedder.embed(["other", "repeat me"])
    np.testing.assert_array_equal(first[0], first[1])
    np.testing.assert_array_equal(first[0], second[1])
    np.testing.assert_array_equal(first[2], second[0])


def test_model_loads_lazily() -> None:
    emb = Embedder()
    assert not emb.loaded
    assert emb.embed([]).shape == (0, DIM)
    assert not emb.loaded


def test_concurrent_first_use_loads_once_and_agrees(monkeypatch: pytest.MonkeyPatch) -> None:
    """Three threads embed at once on a fresh embedder: the model file is checked and the
    session built once, although every thread asked for the load while the first was loading
    (the first load waits until all three are inside `load`)."""
    emb = Embedder(cache_size=0)
    inside = threading.Semaphore(0)
    hashes: list[Path] = []
    real_load, real_hash = emb.load, embedder_module.file_sha256

    def load() -> None:
        inside.release()
        real_load()

    def file_sha256(path: Path) -> str:
        hashes.append(path)
        for _ in range(3 if len(hashes) == 1 else 0):  # every thread is inside load() now
            assert inside.acquire(timeout=60), "the other threads never asked for the load"
        return real_hash(path)

    monkeypatch.setattr(emb, "load", load)
    monkeypatch.setattr(embedder_module, "file_sha256", file_sha256)
    results: list[np.ndarray] = []
    errors: list[BaseException] = []

    def work() -> None:
        try:
            results.append(emb.embed(["threads share one session"]))
        except BaseException as exc:  # pragma: no cover - reported below
            errors.append(exc)

    threads = [threading.Thread(target=work) for _ in range(3)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert not errors
    assert len(hashes) == 1 and emb.loaded  # one check and one load for the three
    assert len(results) == 3
    for r in results[1:]:
        np.testing.assert_array_equal(results[0], r)


def test_sha256_mismatch_is_refused(tmp_path: Path) -> None:
    fake = tmp_path / "model.onnx"
    fake.write_bytes(b"not the pinned model")
    emb = Embedder(model_path=fake)
    with pytest.raises(ModelIntegrityError, match="SHA-256"):
        emb.embed(["anything"])
    assert not emb.loaded


def test_missing_model_is_a_clear_error(tmp_path: Path) -> None:
    emb = Embedder(model_path=tmp_path / "absent.onnx")
    with pytest.raises(ModelIntegrityError, match="not found"):
        emb.load()


def test_import_and_kit_creation_load_no_model() -> None:
    code = (
        "import sys\n"
        "from convoeval.judges.offline import OfflineJudge, get_kit\n"
        "get_kit(); OfflineJudge().describe()\n"
        "assert 'onnxruntime' not in sys.modules, 'model runtime imported too early'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr


LONG_TEXTS = [
    "The quick brown fox jumps over the lazy dog. " * 400,  # cut at once
    "word " * 30 + " " * 5000 + "after a long run of spaces, " * 200,  # the prefix grows
    '{"order_id": "A-17", "items": [' + '{"sku": 42, "qty": 1}, ' * 2000 + "]}",
    "x" * 3000 + " tail words " * 400,  # one long word first: no separator in the first prefix
    "日本語のテキスト、" * 2000,  # CJK: every character is its own word
]


@pytest.mark.parametrize("text", LONG_TEXTS, ids=["prose", "spaces", "json", "long-word", "cjk"])
def test_long_texts_give_the_same_tokens_as_tokenizing_them_whole(
    embedder: Embedder, text: str
) -> None:
    """Issue 11 item 13: the text is cut before tokenizing; the result must not change."""
    whole = embedder._tokenizer.encode(text)
    cut = embedder._encode(text)
    assert cut.ids == whole.ids and len(cut.ids) == 256


def test_long_text_vectors_are_unchanged(embedder: Embedder) -> None:
    text = LONG_TEXTS[0]
    fresh = Embedder(cache_size=0)
    vector = fresh.embed([text])[0]
    encoding = embedder._tokenizer.encode(text)
    ids = np.array([encoding.ids], dtype=np.int64)
    mask = np.ones_like(ids)
    feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
    hidden = fresh._session.run(None, {k: feeds[k] for k in fresh._input_names})[0]
    expected = hidden[0].mean(axis=0)
    np.testing.assert_allclose(vector, expected / np.linalg.norm(expected), atol=1e-5)


_PEAK_RSS = """
import resource, sys
from convoeval.judges.offline import Embedder
embedder = Embedder(cache_size=0)
embedder.embed(["warm up"])
text = ("Where is my parcel? It was due on Monday and nobody answers. " * 400_000)[:{size}]
before = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
embedder.embed([text])
after = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
print(after - before)
"""


def test_a_multi_megabyte_message_keeps_memory_bounded() -> None:
    """A 20 MB message: peak RSS grows by far less than the ~1.3 GB that tokenizing it whole
    took (about 64 bytes per character). Measured in a child process, not timed."""
    code = _PEAK_RSS.replace("{size}", str(20_000_000))
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    grown_kib = int(done.stdout.strip())
    print(f"peak RSS grew by {grown_kib / 1024:.1f} MiB while embedding a 20 MB message")
    assert grown_kib < 100 * 1024, f"{grown_kib / 1024:.0f} MiB"


def _spy(
    monkeypatch: pytest.MonkeyPatch, emb: Embedder, hold_first: int, poison: str | None = None
) -> tuple[list[list[str]], threading.Event]:
    """Record the texts of every group a runner takes from the queue (one model call's worth),
    and fail any model run that holds `poison`. The first group is held until `hold_first`
    other requests are queued behind it (so they meet in the next group); the event says that
    first group was taken."""
    calls: list[list[str]] = []
    began = threading.Event()
    prepare, execute = emb._prepare, emb._execute

    def spied_prepare(group: list[Any]) -> Any:
        calls.append([t for pending in group for t in pending.texts])
        if len(calls) == 1:
            began.set()
            deadline = time.monotonic() + 60
            while len(emb._waiting) < hold_first:  # read-only peek at the queue
                assert time.monotonic() < deadline, "the other threads never queued"
                time.sleep(0.001)
        return prepare(group)

    def spied_execute(run: Any) -> Any:
        if poison is not None and poison in _texts(run):
            return ValueError("poisoned text")
        return execute(run)

    monkeypatch.setattr(emb, "_prepare", spied_prepare)
    monkeypatch.setattr(emb, "_execute", spied_execute)
    return calls, began


def _texts(run: Any) -> list[str]:
    """The texts of one model run."""
    return [pending.texts[row] for pending, row in run.targets]


def _in_threads(
    emb: Embedder, groups: list[list[str]], began: threading.Event
) -> list[np.ndarray | BaseException]:
    """Each group embedded by its own thread: thread 0 first, the others once its model call
    has begun."""
    results: list[np.ndarray | BaseException] = [np.zeros(0)] * len(groups)

    def work(k: int) -> None:
        if k:
            began.wait(60)
        try:
            results[k] = emb.embed(groups[k])
        except BaseException as exc:
            results[k] = exc

    threads = [threading.Thread(target=work, args=(k,), daemon=True) for k in range(len(groups))]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
        assert not t.is_alive(), "a thread never got its vectors"
    return results


GROUPS = [
    [f"request {k}: where is my parcel number {k}?", f"reply {k}", "shared"] for k in range(8)
]


def test_threads_share_model_calls_and_get_exactly_the_sequential_vectors(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 16 part 3: texts of threads waiting at the same moment go in one model call, and a
    text's vector does not depend on the texts it was grouped with."""
    alone = Embedder(cache_size=0)
    sequential = [alone.embed(g) for g in GROUPS]
    grouped = Embedder(cache_size=0)
    grouped.load()
    calls, began = _spy(monkeypatch, grouped, hold_first=len(GROUPS) - 1)
    results = _in_threads(grouped, GROUPS, began)
    for got, want in zip(results, sequential, strict=True):
        assert isinstance(got, np.ndarray)
        np.testing.assert_array_equal(got, want)
    assert len(calls) == 2, [len(c) for c in calls]  # thread 0 alone, then all the others at once
    # "shared" was in thread 0's call already: the seven others wait for it, not queue it again
    assert len(calls[1]) == 7 * 2 and "shared" not in calls[1]


def test_group_limit_bounds_one_model_call(monkeypatch: pytest.MonkeyPatch) -> None:
    emb = Embedder(cache_size=0, group_limit=7)
    emb.load()
    calls, began = _spy(monkeypatch, emb, hold_first=len(GROUPS) - 1)
    results = _in_threads(emb, GROUPS, began)
    assert all(isinstance(r, np.ndarray) for r in results)
    assert max(len(c) for c in calls) <= 7
    assert len(calls) < len(GROUPS)  # still grouped: two threads' texts per call


def test_a_failing_text_fails_only_its_own_thread(monkeypatch: pytest.MonkeyPatch) -> None:
    emb = Embedder(cache_size=0)
    emb.load()
    groups = [*GROUPS[:4], ["poison"]]
    calls, began = _spy(monkeypatch, emb, hold_first=len(groups) - 1, poison="poison")
    results = _in_threads(emb, groups, began)
    assert isinstance(results[-1], ValueError)
    expected = Embedder(cache_size=0)
    for got, group in zip(results[:-1], groups[:-1], strict=True):
        assert isinstance(got, np.ndarray)
        np.testing.assert_array_equal(got, expected.embed(group))
    assert any("poison" in c and len(c) > 1 for c in calls)  # it was grouped, then retried alone


def test_the_cache_is_bounded_and_keeps_the_most_recent_texts() -> None:
    emb = Embedder(cache_size=3)
    emb.embed([f"text {k}" for k in range(10)])
    emb.embed(["text 7"])  # a hit: now the most recent
    emb.embed(["text 10"])
    assert list(emb._cache) == ["text 9", "text 7", "text 10"]


def test_model_runs_are_bounded_in_texts_and_padded_tokens() -> None:
    assert _chunks([5, 5, 5, 5, 5], rows=2, tokens=100) == [[0, 1], [2, 3], [4]]
    assert _chunks([10, 20, 30, 256, 256], rows=32, tokens=512) == [[0, 1, 2], [3, 4]]
    assert _chunks([300, 400], rows=32, tokens=256) == [[0], [1]]  # one text always fits


def test_token_bounded_runs_give_the_same_vectors() -> None:
    texts = ["short", "a little longer text about trains", "long words " * 60, "x"]
    bounded = Embedder(cache_size=0, batch_tokens=64)
    np.testing.assert_array_equal(bounded.embed(texts), Embedder(cache_size=0).embed(texts))


def test_runs_side_by_side_give_exactly_the_vectors_of_one_run_at_a_time() -> None:
    texts = [f"request {i}: {'a card payment abroad ' * (i % 9)}" for i in range(75)]
    texts += LONG_TEXTS[:1]
    side_by_side = Embedder(cache_size=0, threads=2, batch_size=8)
    one_at_a_time = Embedder(cache_size=0, threads=1, batch_size=8)
    np.testing.assert_array_equal(side_by_side.embed(texts), one_at_a_time.embed(texts))


@pytest.mark.parametrize("threads", [1, 2])
def test_threads_bounds_the_model_runs_going_at_once(
    monkeypatch: pytest.MonkeyPatch, threads: int
) -> None:
    emb = Embedder(cache_size=0, threads=threads, batch_size=2)
    emb.load()
    going, peak, lock = [0], [0], threading.Lock()
    execute = emb._execute

    def counted(run: Any) -> Any:
        with lock:
            going[0] += 1
            peak[0] = max(peak[0], going[0])
        time.sleep(0.02)  # long enough for the other runner to start its own run
        try:
            return execute(run)
        finally:
            with lock:
                going[0] -= 1

    monkeypatch.setattr(emb, "_execute", counted)
    emb.embed([f"text number {k}" for k in range(12)])
    assert peak[0] == threads


def test_a_request_is_answered_without_waiting_for_other_runs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 35: a thread's vectors come as soon as its own runs are done, while another
    thread's run is still going, so the model never idles between grouped calls."""
    emb = Embedder(cache_size=0, threads=2)
    emb.load()
    slow_started, release = threading.Event(), threading.Event()
    execute = emb._execute

    def held(run: Any) -> Any:
        if "slow text" in _texts(run):
            slow_started.set()
            assert release.wait(60)
        return execute(run)

    monkeypatch.setattr(emb, "_execute", held)
    slow: list[Any] = []
    worker = threading.Thread(target=lambda: slow.append(emb.embed(["slow text"])))
    worker.start()
    try:
        assert slow_started.wait(60)
        fast = emb.embed(["fast text", "another fast text"])  # while the slow run is held
        assert not slow
    finally:
        release.set()
        worker.join(60)
    alone = Embedder(cache_size=0)
    np.testing.assert_array_equal(fast, alone.embed(["fast text", "another fast text"]))
    np.testing.assert_array_equal(slow[0], alone.embed(["slow text"]))


def test_a_text_that_cannot_be_tokenized_fails_only_its_own_request(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    emb = Embedder(cache_size=0)
    emb.load()
    encode = emb._encode

    def failing(text: str) -> Any:
        if text == "untokenizable":
            raise ValueError("cannot tokenize")
        return encode(text)

    monkeypatch.setattr(emb, "_encode", failing)
    with pytest.raises(ValueError, match="cannot tokenize"):
        emb.embed(["fine text", "untokenizable"])
    np.testing.assert_array_equal(
        emb.embed(["fine text"]), Embedder(cache_size=0).embed(["fine text"])
    )


def test_counts_record_what_went_to_the_model_and_not_cache_hits() -> None:
    emb = Embedder(batch_size=2)
    texts = ["one", "two words here", "one", "a somewhat longer sentence about a card payment"]
    emb.embed(texts)
    first = emb.counts()
    lengths = sorted(len(emb._encode(t).ids) for t in dict.fromkeys(texts))
    assert (first["calls"], first["texts"], first["tokens"]) == (1, 3, sum(lengths))
    # 3 texts, at most 2 per run, an even number of runs: [shortest two] and [longest]
    assert first["runs"] == 2
    assert first["padded_tokens"] == 2 * lengths[1] + lengths[2]
    # The runs' wall time holds their CPU time (two clocks, so not to the nanosecond).
    assert first["run_cpu_ns"] > 0 and first["run_wall_ns"] > 0.9 * first["run_cpu_ns"]
    emb.embed(["two words here", "one"])  # cached: nothing more goes to the model
    assert emb.counts() == first


def test_a_text_in_flight_for_another_thread_is_not_embedded_again(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """Issue 35: fixed texts that many concurrent steps ask for at once (the scope background
    topics, the topic lists) go to the model once per run, not once per thread that asked before
    the first call finished."""
    fixed = [f"a question about subject number {k}" for k in range(40)]
    groups = [[*fixed, f"own text {k}", f"another own text {k}"] for k in range(8)]
    emb = Embedder(group_limit=16)
    emb.load()
    calls, began = _spy(monkeypatch, emb, hold_first=len(groups) - 1)
    results = _in_threads(emb, groups, began)
    sent = [t for call in calls for t in call]
    assert sorted(sent) == sorted({t for g in groups for t in g})  # each distinct text once
    alone = Embedder(cache_size=0)
    for got, group in zip(results, groups, strict=True):
        assert isinstance(got, np.ndarray)
        np.testing.assert_array_equal(got, alone.embed(group))


def test_runs_of_eight_give_exactly_the_vectors_of_runs_of_thirty_two() -> None:
    """Issue 35: the smaller default runs are pure speed (the shipped constants were fitted on
    vectors from runs of 32)."""
    texts = [f"request {i}: {'a card payment abroad ' * (i % 13)}" for i in range(70)]
    texts += LONG_TEXTS[:1]
    assert Embedder.__init__.__kwdefaults__["batch_size"] == 8
    np.testing.assert_array_equal(
        Embedder(cache_size=0).embed(texts), Embedder(cache_size=0, batch_size=32).embed(texts)
    )


def test_cached_texts_lists_the_cache_least_recently_used_first() -> None:
    emb = Embedder(cache_size=3)
    emb.embed(["a", "b", "c", "d"])
    emb.embed(["b"])
    assert emb.cached_texts() == ["c", "d", "b"]


def test_a_runner_that_fails_while_preparing_fails_the_requests_and_never_hangs(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    emb = Embedder(cache_size=0)
    emb.load()

    def broken(encodings: list[Any]) -> list[list[int]]:
        raise RuntimeError("planning failed")

    monkeypatch.setattr(emb, "_plan", broken)
    [error] = _in_threads(emb, [["a text"]], threading.Event())  # a thread: a hang fails below
    assert isinstance(error, RuntimeError) and "planning failed" in str(error)
    monkeypatch.undo()
    np.testing.assert_array_equal(emb.embed(["a text"]), Embedder(cache_size=0).embed(["a text"]))
