"""The judge layer: the protocol, the LLM-judge core and its backends (OpenAI-compatible, its
Batch API, fake),
the answer cache, judge panels, and `resolve_judge`, which turns `--judge` specs into a judge.

The offline judge is imported lazily (it loads onnxruntime), never when this package is imported.
"""

from __future__ import annotations

import importlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any, cast

from convoeval.judges.core.cache import JudgeCache
from convoeval.judges.fake import FakeJudge
from convoeval.judges.panel import JudgePanel
from convoeval.judges.protocol.base import (
    Answer,
    Judge,
    JudgeAuthError,
    JudgeConfigError,
    JudgeError,
    Step,
    StepUnsupported,
    Usage,
)
from convoeval.judges.spec import (
    ALIASES,
    OPTIONS,
    JudgeSpecError,
    accepted_forms,
    documented,
    resolve_one,
)

if TYPE_CHECKING:
    from convoeval.judges.gguf.judge import GGUFJudge
    from convoeval.judges.openai.batch import OpenAIBatchJudge
    from convoeval.judges.openai.judge import OpenAIJudge


def __getattr__(name: str) -> Any:
    # httpx, the openai SDK and the backends load only when a judge needs them.
    if name == "OpenAIJudge":
        return importlib.import_module("convoeval.judges.openai.judge").OpenAIJudge
    if name == "GGUFJudge":
        return importlib.import_module("convoeval.judges.gguf.judge").GGUFJudge
    if name == "OpenAIBatchJudge":
        return importlib.import_module("convoeval.judges.openai.batch").OpenAIBatchJudge
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "Answer",
    "FakeJudge",
    "GGUFJudge",
    "Judge",
    "JudgeAuthError",
    "JudgeCache",
    "JudgeConfigError",
    "JudgeError",
    "JudgePanel",
    "JudgeSpecError",
    "OpenAIBatchJudge",
    "OpenAIJudge",
    "Step",
    "StepUnsupported",
    "Usage",
    "resolve_judge",
]


def resolve_judge(spec: Judge | str | Sequence[Judge | str] | None, **options: Any) -> Judge:
    """Turn a judge spec (None or 'offline', 'PROVIDER/MODEL', 'gguf:PATH', a Judge) into a
    judge (`gguf:` runs a local GGUF file in this process: docs/judges.md); a list
    of two or more specs into a `JudgePanel` of them (a list of one is that one judge).

    `options` (base_url, api_key, concurrency, cache, timeout, retry_budget, seed, max_tokens,
    reason_first, judge_samples, batch; `max_concurrency` and `samples` are aliases of
    `concurrency` and `judge_samples`) configure an LLM judge (each LLM member of a panel);
    options left as None keep their defaults; the offline judge takes none. `batch=True` makes every
    LLM judge an `OpenAIBatchJudge` (the Batch API; it has no concurrency or timeout). Anything
    else is a `JudgeSpecError` listing the valid forms (did-you-mean).
    """
    unknown = set(options) - OPTIONS - set(ALIASES)
    if unknown:
        raise TypeError(f"unknown judge options {sorted(unknown)}; accepted: {sorted(OPTIONS)}")
    options = documented(options)
    if isinstance(spec, list | tuple):
        if not spec:
            raise JudgeSpecError(f"an empty list of judges names no judge; {accepted_forms()}")
        members = [resolve_one(one, **options) for one in spec]
        return members[0] if len(members) == 1 else JudgePanel(members)
    return resolve_one(cast("Judge | str | None", spec), **options)
