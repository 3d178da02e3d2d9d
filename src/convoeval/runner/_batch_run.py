"""A run with Batch API judges: their batches recorded in the results sidecar (so a killed run
resumes them), their status lines on stderr, and a window wide enough for one batch per round.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any

from convoeval.judges import Judge
from convoeval.rows.row import RunMeta
from convoeval.runner._plan import describe

if TYPE_CHECKING:
    from convoeval.judges.openai.batch import OpenAIBatchJudge


def batching(judges: Sequence[Judge]) -> list[OpenAIBatchJudge]:
    """The run's judges that send through the Batch API (the module loads only for them)."""
    if not any(describe(j).get("batch") is True for j in judges):
        return []
    from convoeval.judges.openai.batch import OpenAIBatchJudge

    return [j for j in judges if isinstance(j, OpenAIBatchJudge)]


def track(
    judges: Sequence[OpenAIBatchJudge], path: Path, meta: RunMeta, show: bool, save: Any
) -> None:
    """Record the judges' batches in the sidecar's `batches` (kept from a resumed run's) and
    show their progress lines when `show`."""
    entries = meta.setdefault("batches", [])
    for judge in judges:
        judge.track(entries, partial(save, path, meta), _say if show else None)


def window(judges: Sequence[OpenAIBatchJudge]) -> int | None:
    """Records in flight with batch judges (every record waits on the same rounds)."""
    return max((j.window for j in judges), default=None)


def _say(text: str) -> None:
    print(f"convoeval: {text}", file=sys.stderr, flush=True)
