"""`redact()`: mask API keys and bearer tokens in any text before it is raised, stored or shown.

Servers echo credentials in error bodies ("Incorrect API key provided: Bearer sk-..."); results
files and reports must never receive them.
"""

from __future__ import annotations

import re
from collections.abc import Iterable

MASK = "[REDACTED]"
_PATTERNS = (
    # "Bearer <token>" in any case, whatever the token looks like.
    re.compile(r"(?i)(\bbearer\s+)[A-Za-z0-9._~+/=-]{4,}"),
    # OpenAI-style secret keys: sk-..., sk-proj-..., sk-ant-...
    re.compile(r"\bsk-[A-Za-z0-9_-]{6,}"),
)
#: Configured secrets shorter than this are masked only through the patterns (a 2-letter "key"
#: would mask every occurrence of two letters in an error message).
_MIN_SECRET = 4


def redact(text: str, secrets: Iterable[str] = ()) -> str:
    """`text` with every given secret, bearer token and `sk-` key replaced by [REDACTED]."""
    for secret in sorted({s for s in secrets if len(s) >= _MIN_SECRET}, key=len, reverse=True):
        text = text.replace(secret, MASK)
    for pattern in _PATTERNS:
        text = pattern.sub(lambda m: (m.group(1) if m.groups() else "") + MASK, text)
    return text
