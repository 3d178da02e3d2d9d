"""Wording shared by every part (plurals), so messages, reasons and titles say "1 record"."""

from __future__ import annotations


def plural(count: int, noun: str) -> str:
    """`noun` or its plural (an added s) for `count`."""
    return noun if count == 1 else f"{noun}s"
