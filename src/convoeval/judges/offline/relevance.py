"""Reply relevance windows: the texts of a window's context (its earlier turns, then the input).

The window's vector is the normalised mean of the vectors of these texts, not the vector of the
texts joined into one: they are embedded anyway (as the replies and inputs of neighbouring
windows), so the window costs no model time, where the joined text was about two thirds of the
tokens the judge embedded (benchmarks/README.md, "Offline judge throughput"). The relevance score
itself comes from `relevance_features.py` (the reply against the input alone); the benchmarks use
the window to measure what it would add.
"""

from __future__ import annotations

from convoeval.judges.protocol.step import Window

__all__ = ["Window", "context_parts"]


def context_parts(window: Window) -> list[str]:
    """The texts of the window context: the non-blank earlier inputs and replies, then the input
    (the parts that `Window.context()` joins)."""
    return [text for pair in window.history for text in pair if text.strip()] + [window.user]
