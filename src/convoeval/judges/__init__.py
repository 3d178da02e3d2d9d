"""The judge layer: the protocol, the LLM-judge core and its backends (OpenAI-compatible, its
Batch API, fake),
the answer cache, judge panels, and `resolve_judge`, which turns `--judge` specs into a judge.

The offline judge is imported lazily (it loads onnxruntime), never when this package is imported.
"""

from __future__ import annotations

import difflib
import importlib
from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

from convoeval.judges.base import (
    Answer,
    Judge,
    JudgeConfigError,
    JudgeError,
    Step,
    StepUnsupported,
    Usage,
)
from convoeval.judges.cache import JudgeCache
from convoeval.judges.fake import FakeJudge
from convoeval.judges.panel import JudgePanel

if TYPE_CHECKING:
    from convoeval.judges.batch import OpenAIBatchJudge
    from convoeval.judges.openai_judge import OpenAIJudge


def __getattr__(name: str) -> Any:
    # httpx, the openai SDK and the backends load only when a judge needs them.
    if name == "OpenAIJudge":
        return importlib.import_module("convoeval.judges.openai_judge").OpenAIJudge
    if name == "OpenAIBatchJudge":
        return importlib.import_module("convoeval.judges.batch").OpenAIBatchJudge
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "Answer",
    "FakeJudge",
    "Judge",
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

#: Providers a `PROVIDER/MODEL` spec may name.
PROVIDERS = ("openai",)
_FORMS = (
    "'offline' (the embedded judge, the default), 'PROVIDER/MODEL' with provider "
    f"{' or '.join(repr(p) for p in PROVIDERS)} (e.g. 'openai/gpt-4o-mini', any "
    "OpenAI-compatible server), a Judge instance, or a list of these (a judge panel)"
)
_OPTIONS = frozenset(
    {
        "base_url",
        "api_key",
        "concurrency",
        "cache",
        "timeout",
        "retry_budget",
        "seed",
        "max_tokens",
        "reason_first",
        "samples",
        "batch",
    }
)


class JudgeSpecError(JudgeConfigError):
    """A judge spec that names no judge (`--judge ofline`, `foo`, `anthropic/...`)."""


def resolve_judge(spec: Judge | str | Sequence[Judge | str] | None, **options: Any) -> Judge:
    """Turn a judge spec (None or 'offline', 'PROVIDER/MODEL', a Judge) into a judge; a list
    of two or more specs into a `JudgePanel` of them (a list of one is that one judge).

    `options` (base_url, api_key, concurrency, cache, timeout, retry_budget, seed, max_tokens,
    reason_first, samples, batch) configure an LLM judge (each LLM member of a panel); options
    left as None keep their defaults; the offline judge takes none. `batch=True` makes every
    LLM judge an `OpenAIBatchJudge` (the Batch API; it has no concurrency or timeout). Anything
    else is a `JudgeSpecError` listing the valid forms (did-you-mean).
    """
    unknown = set(options) - _OPTIONS
    if unknown:
        raise TypeError(f"unknown judge options {sorted(unknown)}; accepted: {sorted(_OPTIONS)}")
    if isinstance(spec, list | tuple):
        if not spec:
            raise JudgeSpecError(f"an empty list of judges names no judge; {_accepted()}")
        members = [resolve_judge(one, **options) for one in spec]
        return members[0] if len(members) == 1 else JudgePanel(members)
    if spec is not None and not isinstance(spec, str):
        if isinstance(spec, Judge):
            return spec
        raise JudgeSpecError(f"cannot use {spec!r} as a judge; accepted forms: {_FORMS}")
    text = "offline" if spec is None else spec.strip()
    if text.lower() == "offline":
        if options.get("batch"):
            raise JudgeConfigError(
                "--batch (batch=True) sends an LLM judge's requests through the Batch API; the "
                "offline judge sends none: choose --judge openai/MODEL (judge='openai/MODEL')"
            )
        offline = importlib.import_module("convoeval.judges.offline")
        judge: Judge = offline.OfflineJudge()
        return judge
    provider, slash, model = text.partition("/")
    if not slash:
        raise JudgeSpecError(f"unknown judge spec {spec!r}{_did_you_mean(text)}; {_accepted()}")
    if provider.lower() not in PROVIDERS:
        near = difflib.get_close_matches(provider.lower(), PROVIDERS, n=1)
        hint = f" (did you mean {near[0] + slash + model!r}?)" if near else ""
        raise JudgeSpecError(
            f"unknown judge provider {provider!r} in {spec!r}{hint}; known providers: "
            f"{', '.join(PROVIDERS)}; {_accepted()}"
        )
    if not model.strip() or any(c.isspace() for c in model.strip()):
        raise JudgeSpecError(f"judge spec {spec!r} names no model; {_accepted()}")
    given = {k: v for k, v in options.items() if v is not None}
    if given.pop("batch", False):
        from convoeval.judges.batch import OpenAIBatchJudge

        given.pop("concurrency", None)  # every request of a round waits in one batch
        given.pop("timeout", None)  # a batch may take up to 24 hours
        return OpenAIBatchJudge(model.strip(), **given)
    given.pop("batch", None)
    from convoeval.judges.openai_judge import OpenAIJudge

    return OpenAIJudge(model.strip(), **given)


def _accepted() -> str:
    return f"accepted forms: {_FORMS}"


def _did_you_mean(text: str) -> str:
    if not text or any(c.isspace() for c in text):
        return ""
    if text.lower() == "fake":
        return " (the fake judge is built in code: pass FakeJudge(script) as the judge)"
    near = difflib.get_close_matches(text.lower(), ["offline"], n=1, cutoff=0.6)
    if near:
        return f" (did you mean {near[0]!r}?)"
    return f" (did you mean 'openai/{text}'?)"
