"""OfflineJudge: answers steps that carry an offline implementation, on the CPU, with no network."""

from __future__ import annotations

import asyncio
import contextvars
import os
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from convoeval.judges.offline import calibration as cal
from convoeval.judges.offline.blas import one_blas_thread
from convoeval.judges.offline.embedder import MODEL_NAME
from convoeval.judges.offline.kit import OfflineKit, get_kit
from convoeval.judges.protocol._answers import AnswerProblem, RawReply, accept
from convoeval.judges.protocol.base import Answer, JudgeError, OutT, Step, StepUnsupported, Usage
from convoeval.judges.protocol.step import StepInputs

#: Offline steps that may run at once in the process, whatever the judges. Each thread spends
#: most of its time waiting for the embedder, whose runner threads take the texts of every
#: waiting thread together (`Embedder.embed`), so more threads mean more texts queued for the
#: model, not more CPU threads fighting over the two cores. Topic adherence on
#: benchmarks/speed.py's workload, integer model: 82, 90-98 and 100-104 conversations/s with 16,
#: 32 and 64 threads, 95 with 128 (README); with the runners of 2026-12-06, 92.0, 94.1 and 91.1
#: with 32, 64 and 128 (README, "Runs instead of grouped calls").
STEP_THREADS = 64

_pool: tuple[int, ThreadPoolExecutor] | None = None
_pool_lock = threading.Lock()


def _step_pool() -> ThreadPoolExecutor:
    """The process's pool of offline step threads (a new one in a forked child)."""
    global _pool
    with _pool_lock:
        if _pool is None or _pool[0] != os.getpid():
            _pool = (os.getpid(), ThreadPoolExecutor(STEP_THREADS, "convoeval-offline"))
        return _pool[1]


class OfflineJudge:
    """The default judge: embedded all-MiniLM-L6-v2 (int8 ONNX), calibrated, deterministic."""

    name = "offline"

    def __init__(self, kit: OfflineKit | None = None) -> None:
        self._kit = kit

    @property
    def kit(self) -> OfflineKit:
        """The toolkit handed to offline step implementations."""
        if self._kit is None:
            self._kit = get_kit()
        return self._kit

    async def run(
        self, step: Step[OutT], inputs: StepInputs, *, usage: Usage | None = None
    ) -> Answer[OutT]:
        """Run `step.offline(inputs, kit)` in one of the offline step threads and validate its
        answer. Steps of concurrent records run at the same time so that their texts share model
        calls. Nothing is sent anywhere, so a given `usage` only gains the time spent."""
        if step.offline is None:
            raise StepUnsupported(
                step.name,
                f"the offline judge cannot answer step {step.name!r} (it needs a language model); "
                "use an LLM judge, e.g. `--judge openai/gpt-4o-mini` on the command line or "
                "`judge=OpenAIJudge(...)` in Python",
            )
        started = time.perf_counter()
        context = contextvars.copy_context()  # as asyncio.to_thread does
        with one_blas_thread():  # set and restored here, on the loop's thread (see blas.py)
            raw = await asyncio.get_running_loop().run_in_executor(
                _step_pool(), context.run, self._call, step, inputs
            )
        try:  # the same validation and check as every other judge's answers
            output = accept(step, inputs, RawReply(content=raw))
        except AnswerProblem as exc:
            raise JudgeError(
                step.name, f"offline answer unusable as {step.output.__name__}: {exc}"
            ) from exc
        spent = Usage(latency_s=time.perf_counter() - started)
        if usage is not None:
            usage.add(spent)
        return Answer(output=output, usage=spent)

    def _call(self, step: Step[OutT], inputs: StepInputs) -> Any:
        assert step.offline is not None
        try:
            return step.offline(inputs, self.kit)
        except JudgeError:
            raise
        except Exception as exc:
            raise JudgeError(
                step.name, f"offline implementation failed: {type(exc).__name__}: {exc}"
            ) from exc

    def describe(self) -> dict[str, Any]:
        """Judge kind, model and calibration version (no endpoint, no key)."""
        return {
            "kind": "offline",
            "model": MODEL_NAME,
            "calibration": cal.CALIBRATION_VERSION,
            "runtime": "onnxruntime-cpu",
        }
