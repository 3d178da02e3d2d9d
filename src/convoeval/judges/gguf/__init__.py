"""The `gguf:PATH` judge: a local GGUF model that llama.cpp runs in this process (`xllamacpp`,
the `convoeval[local]` extra), judged through the OpenAI-compatible path. file.py checks and
hashes the file, server.py starts and stops llama.cpp, judge.py is `GGUFJudge`; `from_spec`
reads a spec (`gguf:PATH threads=2 ctx=4096`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from convoeval.errors import UsageError
from convoeval.judges.protocol.base import JudgeConfigError

if TYPE_CHECKING:
    from convoeval.judges.gguf.judge import GGUFJudge

#: The spec's prefix, and the options only a gguf judge takes (server sizes).
PREFIX = "gguf:"
SERVER_OPTIONS = ("threads", "ctx")
#: Run-wide options that concern OpenAI endpoints, not the judge's own server (left out).
_NOT_HERE = ("base_url", "api_key", "concurrency")
_TRAILING = re.compile(r"\s+([A-Za-z_]+=\S*)$")

OwnOptions = Callable[[str, dict[str, Any]], tuple[str, dict[str, Any]]]


def split_spec(text: str) -> tuple[str, dict[str, int], list[str]]:
    """`gguf:PATH key=value ...` -> (PATH, the server options, the other `key=value` items).
    Options are the trailing whitespace-separated `key=value` items, so PATH may hold spaces."""
    rest = text.strip()[len(PREFIX) :]
    items: list[str] = []
    while match := _TRAILING.search(rest):
        items.insert(0, match.group(1))
        rest = rest[: match.start()]
    server: dict[str, int] = {}
    others = []
    for item in items:
        key, _, raw = item.partition("=")
        if key not in SERVER_OPTIONS:
            others.append(item)
            continue
        if not raw.isdigit() or int(raw) < 1:
            raise UsageError(f"judge {text!r}: {key} must be a whole number of at least 1")
        if key in server:
            raise UsageError(f"judge {text!r} sets {key} twice: give it once")
        server[key] = int(raw)
    return rest.strip(), server, others


def from_spec(text: str, options: dict[str, Any], own_options: OwnOptions) -> GGUFJudge:
    """The judge of `gguf:PATH key=value ...`; `options` are the run's judge options and
    `own_options` checks the spec's other `key=value` items as for any judge (judges/spec.py)."""
    from convoeval.judges.gguf.judge import GGUFJudge

    path, server, others = split_spec(text)
    run_wide = {k: v for k, v in options.items() if k not in _NOT_HERE and v is not None}
    if run_wide.pop("batch", False):
        raise JudgeConfigError(
            "--batch (batch=True) sends requests through the OpenAI Batch API; the gguf judge "
            "answers in this process: drop --batch"
        )
    _, own = own_options(" ".join([PREFIX + "".join(path.split()), *others]), run_wide)
    if "context" in own:  # other judges' name for the context window: here, the server's ctx
        context = own.pop("context")
        if server.get("ctx", context) != context:
            raise UsageError(f"judge {text!r}: ctx={server['ctx']} and context={context}: give one")
        server["ctx"] = context
    return GGUFJudge(path, threads=server.get("threads"), ctx=server.get("ctx"), **own)
