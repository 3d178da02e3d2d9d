"""OfflineJudge: answers steps that carry an offline implementation, on the CPU, with no network."""

from __future__ import annotations

import asyncio
import threading
import time
from typing import Any

from convoeval.judges._answers import AnswerProblem, RawReply, accept
from convoeval.judges.base import Answer, JudgeError, OutT, Step, StepUnsupported, Usage
from convoeval.judges.offline import calibration as cal
from convoeval.judges.offline.embedder import MODEL_NAME
from convoeval.judges.offline.kit import OfflineKit, get_kit
from convoeval.judges.step import StepInputs

#: One model, two cores: offline steps run one at a time in the process, whatever the judges.
_MODEL_LOCK = threading.Lock()


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
        """Run `step.offline(inputs, kit)` in a worker thread and validate its answer. Nothing
        is sent anywhere, so a given `usage` only gains the time spent."""
        if step.offline is None:
            raise StepUnsupported(
                step.name,
                f"the offline judge cannot answer step {step.name!r} (it needs a language model); "
                "use an LLM judge, e.g. `--judge openai/gpt-4o-mini` on the command line or "
                "`judge=OpenAIJudge(...)` in Python",
            )
        started = time.perf_counter()
        raw = await asyncio.to_thread(self._call, step, inputs)
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
        kit = self.kit
        with _MODEL_LOCK:
            try:
                return step.offline(inputs, kit)
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
