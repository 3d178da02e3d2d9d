"""The root of convoeval's error tree: every "your input, data or judge is wrong" error is a
`ConvoevalError`, so callers (and the CLI) can tell them from bugs, which are anything else.
"""

from __future__ import annotations


class ConvoevalError(Exception):
    """Base of every error convoeval raises on purpose (bad data, conversion, judge, results)."""


class UsageError(ConvoevalError, ValueError):
    """Options that cannot make a run: an unknown metric or option, a threshold out of range,
    judge options given with a Judge object, nothing to score."""
