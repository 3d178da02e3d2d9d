"""Wording shared by every part (plurals, counting from 1), so messages, reasons and titles say
"1 record" and "message 4" alike."""

from __future__ import annotations


def plural(count: int, noun: str) -> str:
    """`noun` or its plural (an added s) for `count`."""
    return noun if count == 1 else f"{noun}s"


def nth(index: int) -> int:
    """A 0-based position (a message, an exchange, a tool call, a record) as people count it,
    from 1: reasons, errors and the report say "message 4" for `user_input[3]`. A path keeps
    the 0-based index in brackets (`user_input[3]`), as do the results' details."""
    return index + 1
