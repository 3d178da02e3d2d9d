"""Which repeat of a repeated run (`evaluate(..., repeat=N)`, `--repeat N`) a judge question
belongs to, so that every repeat gets fresh judge samples.

The runner scores a record N times, each repeat inside `repeat_scope(index)`; the scope is a
context variable, so it reaches every judge the metrics call (panel members included) without
crossing the metric layer, which never sees it. Repeat 0 is an ordinary run: its questions, sampling
and cache keys are unchanged, so it reuses the cache of earlier runs. Repeat r >= 1 is sampled as a
repeated judge sample is (judges/ensembles/samples.py): at the judge's temperature when it is above
0, else at `SAMPLE_TEMPERATURE`, a fixed seed offset by r times the samples per step (no two samples
of two repeats share a seed), and r in the cache key, so a repeat never reads another repeat's
cached answer. Each repeat's answers are cached under their own key: running the same command again
replays them.

The offline judge is deterministic and ignores the repeat: its repeats agree exactly.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any

from convoeval.judges.ensembles.samples import varied_sampling

_REPEAT: ContextVar[int] = ContextVar("convoeval_repeat", default=0)


def current_repeat() -> int:
    """The repeat (from 0) the current task scores; 0 outside a repeated run."""
    return _REPEAT.get()


@contextmanager
def repeat_scope(index: int) -> Iterator[None]:
    """Judge questions asked inside (by this task and the tasks it starts) belong to repeat
    `index` (from 0)."""
    if isinstance(index, bool) or not isinstance(index, int) or index < 0:
        raise ValueError(f"a repeat index is a whole number from 0, not {index!r}")
    token = _REPEAT.set(index)
    try:
        yield
    finally:
        _REPEAT.reset(token)


def repeat_sampling(base: Mapping[str, Any], repeat: int, samples: int) -> dict[str, Any]:
    """The sampling settings of `base` (a backend's own, or one sample's) in repeat `repeat`
    (>= 1) of a judge asking `samples` samples per step: the seed offset by `repeat * samples`,
    past every sample of the repeats before."""
    return varied_sampling(base, repeat * samples, "repeat", repeat)
