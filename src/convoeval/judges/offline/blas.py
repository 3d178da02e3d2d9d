"""One BLAS thread while offline steps run.

The steps' matrix products are tiny (a few texts against a few hundred topic vectors), and
OpenBLAS splits each over every core, then keeps its threads spinning for the next one: on the
2-core machine that took 6.3 of 25.8 ms of CPU per topic-adherence conversation, away from the
model runs (benchmarks/README.md, "Where topic adherence's CPU went"). threadpoolctl is the
library made to change a loaded BLAS's thread count; the limit holds while any offline step runs
and the previous count comes back when the last one ends, so numpy code elsewhere in the process
is left as it was. It is set and restored on the event loop's thread: with OpenBLAS 0.3.31, a
limit set from a step thread was not seen by the steps, and a count restored from one did not
come back (tests/judges/offline/test_offline_judge.py). A BLAS that cannot be limited is left
alone: this is about speed, never a reason for a step to fail.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

_lock = threading.Lock()
_active = 0
_limiter: Any = None
_controller: Any = None
_unavailable = False


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """Hold BLAS at one thread for the duration (nested and concurrent uses share one limit)."""
    global _active
    with _lock:
        if _active == 0:
            _limit()
        _active += 1
    try:
        yield
    finally:
        with _lock:
            _active -= 1
            if _active == 0:
                _restore()


def _limit() -> None:
    """Set the limit (called with `_lock` held, by the first step of a busy spell)."""
    global _controller, _limiter, _unavailable
    if _unavailable:
        return
    try:
        if _controller is None:
            from threadpoolctl import ThreadpoolController

            _controller = ThreadpoolController()  # finds the loaded BLAS libraries once
        _limiter = _controller.limit(limits=1, user_api="blas")
    except Exception:  # no usable BLAS control here: run as numpy is set
        _unavailable, _limiter = True, None


def _restore() -> None:
    """Give the previous count back (called with `_lock` held, by the last step to end)."""
    global _limiter, _unavailable
    if _limiter is None:
        return
    try:
        _limiter.restore_original_limits()
    except Exception:
        _unavailable = True
    _limiter = None
