"""The `compat=` option: compute a metric our way (the default) or exactly as Ragas does.

Where our value differs from Ragas's by design (README "Metrics"), `compat="ragas"` gives
Ragas's number, so a migrating team keeps its thresholds; one option name across metrics.
"""

from __future__ import annotations

import difflib
from typing import Literal

Compat = Literal["convoeval", "ragas"]
MODES: tuple[str, ...] = ("convoeval", "ragas")


def check_compat(value: object, metric: str) -> Compat:
    """`value` if it is a compat mode, else a ValueError naming the metric and the nearest mode."""
    if value == "convoeval":
        return "convoeval"
    if value == "ragas":
        return "ragas"
    near = difflib.get_close_matches(str(value), MODES, n=1)
    hint = f" (did you mean {near[0]!r}?)" if near else ""
    raise ValueError(f"{metric}: compat must be 'convoeval' or 'ragas', not {value!r}{hint}")
