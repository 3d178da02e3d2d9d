"""One judge from one `--judge` spec: 'offline', 'PROVIDER/MODEL', 'gguf:PATH' or a Judge, with
the options an LLM judge takes. `resolve_judge` (the package) adds lists, which make a panel."""

from __future__ import annotations

import difflib
import importlib
import json
import os
from typing import Any

from convoeval.errors import UsageError, one_spelling
from convoeval.judges.protocol.base import Judge, JudgeConfigError

#: Providers a `PROVIDER/MODEL` spec may name.
PROVIDERS = ("openai",)
_FORMS = (
    "'offline' (the embedded judge, the default), 'PROVIDER/MODEL' with provider "
    f"{' or '.join(repr(p) for p in PROVIDERS)} (e.g. 'openai/gpt-4o-mini', any "
    "OpenAI-compatible server; 'openai/MODEL@http://HOST:PORT/v1' on its own server, and "
    "'...#KEY_VARIABLE' with its own key from that environment variable, 'openai/MODEL "
    "timeout=30 max_tokens=400' with its own options), 'gguf:PATH' (a local GGUF model "
    "that llama.cpp runs in this process; 'gguf:PATH threads=4 ctx=4096'), a Judge instance, "
    "or a list of these (a judge panel)"
)
OPTIONS = frozenset(
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
        "judge_samples",
        "batch",
        "context",
    }
)
#: Alias -> the documented spelling of a judge option (README.md, "One name per concept").
ALIASES = {"max_concurrency": "concurrency", "samples": "judge_samples"}


def documented(options: dict[str, Any]) -> dict[str, Any]:
    """Judge options under their documented spellings: an alias's value moves to its name; two
    spellings with different values are a `UsageError` naming both."""
    out = {k: v for k, v in options.items() if k not in ALIASES}
    for alias, name in ALIASES.items():
        if alias in options:
            out[name] = one_spelling({name: options.get(name), alias: options[alias]})
    return out


class JudgeSpecError(JudgeConfigError):
    """A judge spec that names no judge (`--judge ofline`, `foo`, `anthropic/...`)."""


def resolve_one(spec: Judge | str | None, **options: Any) -> Judge:
    """One judge from one spec (None or 'offline', 'PROVIDER/MODEL', a Judge); `options` as
    `resolve_judge` takes them, already checked there."""
    if spec is not None and not isinstance(spec, str):
        if isinstance(spec, Judge):
            return spec
        raise JudgeSpecError(f"cannot use {spec!r} as a judge; accepted forms: {_FORMS}")
    text = "offline" if spec is None else spec.strip()
    if text[:5].lower() == "gguf:":  # a local file, whose path may hold spaces
        from convoeval.judges.gguf import from_spec

        return from_spec(text, options, _own_options)
    text, options = _own_options(text, options)
    if text.lower() == "offline":
        if options.get("batch"):
            raise JudgeConfigError(
                "--batch (batch=True) sends an LLM judge's requests through the Batch API; the "
                "offline judge sends none: choose --judge openai/MODEL (judge='openai/MODEL')"
            )
        offline = importlib.import_module("convoeval.judges.offline")
        judge: Judge = offline.OfflineJudge()
        return judge
    text, options = _own_endpoint(text, options)
    provider, slash, model = text.partition("/")
    if not slash:
        raise JudgeSpecError(
            f"unknown judge spec {spec!r}{_did_you_mean(text)}; {accepted_forms()}"
        )
    if provider.lower() not in PROVIDERS:
        near = difflib.get_close_matches(provider.lower(), PROVIDERS, n=1)
        hint = f" (did you mean {near[0] + slash + model!r}?)" if near else ""
        raise JudgeSpecError(
            f"unknown judge provider {provider!r} in {spec!r}{hint}; known providers: "
            f"{', '.join(PROVIDERS)}; {accepted_forms()}"
        )
    if not model.strip() or any(c.isspace() for c in model.strip()):
        raise JudgeSpecError(f"judge spec {spec!r} names no model; {accepted_forms()}")
    given = {k: v for k, v in options.items() if v is not None}
    if "context" in given:  # the model's context window in tokens (OpenAIJudge's name)
        if given.get("batch"):
            raise JudgeConfigError("context= sizes live requests; a batch judge takes none")
        given["context_window"] = given.pop("context")
    if given.pop("batch", False):
        from convoeval.judges.openai.batch import OpenAIBatchJudge

        given.pop("concurrency", None)  # every request of a round waits in one batch
        given.pop("timeout", None)  # a batch may take up to 24 hours
        if "judge_samples" in given:
            given["samples"] = given.pop("judge_samples")
        return OpenAIBatchJudge(model.strip(), **given)
    given.pop("batch", None)
    from convoeval.judges.openai.judge import OpenAIJudge

    return OpenAIJudge(model.strip(), **given)


#: The options one judge of a panel may set for itself after its spec (`openai/m timeout=30`);
#: its endpoint and key are written `@URL` and `#KEY_VARIABLE` instead.
MEMBER_OPTIONS = frozenset(OPTIONS - {"base_url", "api_key", "batch", "cache"})


def _own_options(text: str, options: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """`SPEC key=value ...`: options of this judge alone, after its spec and whitespace (a spec
    never holds whitespace). An unknown key, a value that is not a number or true/false, or a
    key the run sets to another value as well is a `UsageError` naming both."""
    first, *rest = text.split() or [text]
    if not rest or not all("=" in item for item in rest):
        return text, options  # not options: the spec's own checks say what is wrong
    own = dict(options)
    for item in rest:
        key, equals, raw = item.partition("=")
        key = ALIASES.get(key, key)
        if not equals or key not in MEMBER_OPTIONS:
            raise UsageError(
                f"judge {text!r}: {item!r} is not KEY=VALUE with KEY one of "
                f"{', '.join(sorted(MEMBER_OPTIONS))} (its endpoint is @URL, its key #VARIABLE)"
            )
        try:
            value = json.loads(raw)
        except ValueError:
            value = None
        if isinstance(value, bool) != (key == "reason_first") or not isinstance(
            value, bool | int | float
        ):
            kind = "true or false" if key == "reason_first" else "a number"
            raise UsageError(f"judge {text!r}: {key} must be {kind}, not {raw!r}")
        if options.get(key) not in (None, value):
            raise UsageError(
                f"judge {text!r} sets {key}={raw}, and the run sets {key}={options[key]!r}: "
                "give one"
            )
        own[key] = value
    return first, own


def _own_endpoint(text: str, options: dict[str, Any]) -> tuple[str, dict[str, Any]]:
    """`PROVIDER/MODEL@URL#KEY_VARIABLE`: the member's own endpoint (a panel member on its own
    server) and the environment variable holding its own key (both optional); the URL with a
    `base_url` option as well is a `UsageError` naming both, an unset variable one naming it."""
    text, hashed, variable = text.partition("#")
    if hashed:
        key = os.environ.get(variable.strip()) if variable.strip() else None
        if not key:
            raise UsageError(
                f"judge {text + hashed + variable!r} takes its key from the environment variable "
                f"{variable.strip()!r}, which is not set"
            )
        options = {**options, "api_key": key}
    spec, at, url = text.partition("@http")
    if not at:
        return text, options
    url = "http" + url
    if options.get("base_url") not in (None, url):
        raise UsageError(
            f"judge {text!r} names its endpoint, and base_url (--base-url) "
            f"{options['base_url']!r} names another: give one"
        )
    return spec.strip(), {**options, "base_url": url}


def accepted_forms() -> str:
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
