"""The one place secrets are masked: a process-wide registry of the keys judges were built with,
`scrub()` for every string convoeval stores or shows, and `redact()` for error texts.

Servers echo credentials in error bodies ("Incorrect API key provided: sk-abc***xyz") and a model
may repeat its key inside an answer; results files, sidecars, reports, the judge cache and the
console must never receive one. Every judge registers its keys when it is built
(`register_secret`); `scrub` masks each registered key in every form: bare (so `Bearer KEY` too),
JSON-, HTML- or URL-escaped, any `FRAGMENT` consecutive characters of it, and its start followed
by a mask (`*`, `•`, `…`, `...`) and possibly its end. `redact` adds the generic shapes of
credentials (bearer tokens, `sk-` keys) and secrets given to it, for error messages.
"""

from __future__ import annotations

import html
import json
import re
import threading
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any
from urllib.parse import quote

MASK = "[REDACTED]"
_PATTERNS = (
    # "Bearer <token>" in any case, whatever the token looks like.
    re.compile(r"(?i)(\bbearer\s+)[A-Za-z0-9._~+/=-]{4,}"),
    # OpenAI-style secret keys: sk-..., sk-proj-..., sk-ant-...
    re.compile(r"\bsk-[A-Za-z0-9_-]{6,}"),
)
#: Secrets given to `redact` shorter than this are masked only through the patterns (a 2-letter
#: "key" would mask every occurrence of two letters in an error message).
_MIN_SECRET = 4
#: Registered keys shorter than this are not scrubbed from everything: local servers accept any
#: word as a key ("EMPTY", "ollama"), and masking it would rewrite ordinary text. Error messages
#: still mask them (the judge passes its own secrets to `redact`).
MIN_REGISTERED = 8
#: Any this many consecutive characters of a key are masked (the whole key when it is shorter).
FRAGMENT = 12
#: A key's start at least this long, followed by a mask, is masked (with the mask and any end
#: of the key after it): "sk-abc***xyz".
PREFIX = 6
#: What servers put in place of the hidden part of a key.
_MASKED = re.compile(r"[*•·…]+|\.{3,}")
_TAIL = re.compile(r"[A-Za-z0-9_-]+")


@dataclass(frozen=True)
class _Secret:
    """One form of a key, with what `_spans` needs to find it quickly."""

    text: str
    #: Masked in runs at least this long (the key, or FRAGMENT characters of it).
    run: int
    #: Pieces of the key at fixed steps: every run at least `run` long contains one whole.
    blocks: tuple[tuple[int, str], ...]

    @classmethod
    def of(cls, text: str) -> _Secret:
        run = min(FRAGMENT, len(text))
        step = (run + 1) // 2
        blocks = tuple((j, text[j : j + step]) for j in range(0, len(text) - step + 1, step))
        return cls(text, run, blocks)


_lock = threading.Lock()
_registered: dict[str, _Secret] = {}
#: A snapshot read without the lock (replaced whole on every registration).
_active: tuple[_Secret, ...] = ()


def _forms(secret: str) -> set[str]:
    """The secret as it may appear in stored text: as is, JSON-, HTML- and URL-escaped."""
    return {secret, json.dumps(secret)[1:-1], html.escape(secret), quote(secret, safe="")}


def register_secret(secret: str) -> None:
    """Remember `secret` (an API key, a password) for the life of the process, so that `scrub`
    masks it in everything stored or shown. Keys shorter than `MIN_REGISTERED` are ignored."""
    global _active
    if len(secret) < MIN_REGISTERED:
        return
    with _lock:
        for form in _forms(secret):
            _registered.setdefault(form, _Secret.of(form))
        _active = tuple(_registered.values())


def _spans(text: str, secret: _Secret) -> Iterable[tuple[int, int]]:
    """Where `secret` shows in `text`: runs of its characters and its masked forms."""
    key = secret.text
    for j, block in secret.blocks:
        i = text.find(block)
        while i != -1:
            start, end = _grown(text, key, i, i + len(block), j - i)
            if end - start >= secret.run:
                yield start, end
            i = text.find(block, i + 1)
    head = key[:PREFIX]
    i = text.find(head)
    while i != -1:
        _, end = _grown(text, key, i, i + len(head), -i)
        hidden = _MASKED.match(text, end)
        if hidden is not None:
            end = hidden.end()
            tail = _TAIL.match(text, end)
            if tail is not None and key.endswith(tail.group()):
                end = tail.end()
            yield i, end
        i = text.find(head, i + 1)


def _grown(text: str, key: str, start: int, end: int, shift: int) -> tuple[int, int]:
    """`text[start:end]`, which equals `key[start + shift:end + shift]`, widened both ways for
    as long as the text goes on matching the key."""
    while start > 0 and start + shift > 0 and text[start - 1] == key[start - 1 + shift]:
        start -= 1
    while end < len(text) and end + shift < len(key) and text[end] == key[end + shift]:
        end += 1
    return start, end


def _masked(text: str, secrets: Iterable[_Secret]) -> str:
    """`text` with every span where one of `secrets` shows replaced by one MASK (overlapping
    and touching spans become one)."""
    merged: list[list[int]] = []
    for start, end in sorted(span for secret in secrets for span in _spans(text, secret)):
        if merged and start <= merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], end)
        else:
            merged.append([start, end])
    if not merged:
        return text
    out, last = [], 0
    for start, end in merged:
        out += [text[last:start], MASK]
        last = end
    out.append(text[last:])
    return "".join(out)


def scrub(text: str) -> str:
    """`text` with every registered key masked, in every form (module docstring)."""
    secrets = _active
    return _masked(text, secrets) if secrets else text


def scrub_data(value: Any) -> Any:
    """A JSON-like value (mappings, lists, strings) with `scrub` applied to every string in it,
    mapping keys included."""
    if not _active:
        return value
    if isinstance(value, str):
        return scrub(value)
    if isinstance(value, Mapping):
        return {scrub_data(k): scrub_data(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [scrub_data(v) for v in value]
    return value


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """`text` scrubbed of the registered keys and of every given secret, bearer token and `sk-`
    key (for error messages, which may quote a server's answer)."""
    given = [_Secret.of(s) for s in {s for s in secrets if len(s) >= _MIN_SECRET}]
    text = _masked(text, (*_active, *given))
    for pattern in _PATTERNS:
        text = pattern.sub(lambda m: (m.group(1) if m.groups() else "") + MASK, text)
    return text
