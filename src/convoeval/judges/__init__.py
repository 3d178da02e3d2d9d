"""The judge layer: the protocol, the OpenAI-compatible judge, its cache, a fake judge, and
`resolve_judge`, which turns a `--judge` spec into a judge.

The offline judge is imported lazily (it loads onnxruntime), never when this package is imported.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from convoeval.judges.base import Answer, Judge, JudgeError, Step, StepUnsupported, Usage
from convoeval.judges.cache import JudgeCache
from convoeval.judges.fake import FakeJudge

if TYPE_CHECKING:
    from convoeval.judges.openai_judge import OpenAIJudge


def __getattr__(name: str) -> Any:
    # The openai SDK takes a third of a second to import: load it only when a judge needs it.
    if name == "OpenAIJudge":
        return importlib.import_module("convoeval.judges.openai_judge").OpenAIJudge
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


__all__ = [
    "Answer",
    "FakeJudge",
    "Judge",
    "JudgeCache",
    "JudgeError",
    "OpenAIJudge",
    "Step",
    "StepUnsupported",
    "Usage",
    "resolve_judge",
]

_ACCEPTED = (
    "None or 'offline' (the embedded judge), 'openai/MODEL' (any OpenAI-compatible server), "
    "a bare model name such as 'gpt-4o-mini', or a Judge instance"
)
_OPTIONS = frozenset(
    {"base_url", "api_key", "concurrency", "cache", "timeout", "seed", "max_tokens"}
)


def resolve_judge(spec: Judge | str | None, **options: Any) -> Judge:
    """Turn a judge spec (None, 'offline', 'openai/MODEL', a model name, a Judge) into a judge.

    `options` (base_url, api_key, concurrency, cache, timeout, seed, max_tokens) configure the
    OpenAI judge; options left as None are not passed, and the offline judge takes none.
    """
    unknown = set(options) - _OPTIONS
    if unknown:
        raise TypeError(f"unknown judge options {sorted(unknown)}; accepted: {sorted(_OPTIONS)}")
    if spec is not None and not isinstance(spec, str):
        if isinstance(spec, Judge):
            return spec
        raise ValueError(f"cannot use {spec!r} as a judge; accepted forms: {_ACCEPTED}")
    text = "offline" if spec is None else spec.strip()
    if text.lower() == "offline":
        offline = importlib.import_module("convoeval.judges.offline")
        judge: Judge = offline.OfflineJudge()
        return judge
    given = {k: v for k, v in options.items() if v is not None}
    if text.lower().startswith("openai/"):
        model = text[len("openai/") :].strip()
        if not model:
            raise ValueError(f"judge spec {spec!r} names no model; accepted forms: {_ACCEPTED}")
        return _openai_judge(model, given)
    if text.lower() == "fake":
        raise ValueError(
            "'fake' is not a judge spec: build FakeJudge(script) in code and pass it; "
            f"accepted forms: {_ACCEPTED}"
        )
    if text and "/" not in text and not any(c.isspace() for c in text):
        return _openai_judge(text, given)
    raise ValueError(f"unknown judge spec {spec!r}; accepted forms: {_ACCEPTED}")


def _openai_judge(model: str, options: dict[str, Any]) -> Judge:
    from convoeval.judges.openai_judge import OpenAIJudge

    return OpenAIJudge(model, **options)
