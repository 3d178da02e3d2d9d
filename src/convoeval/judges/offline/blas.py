"""One BLAS thread while offline steps run.

The steps' matrix products are tiny (a few texts against a few hundred topic vectors), and
OpenBLAS splits each over every core, then keeps its threads spinning for the next one: on the
2-core machine that took 6.3 of 25.8 ms of CPU per topic-adherence conversation, away from the
model runs (benchmarks/README.md, "Offline speed"). threadpoolctl is the library made to change a
loaded BLAS's thread count; the limit holds while any offline step runs and the previous count
comes back when the last one ends, so numpy code elsewhere in the process is left as it was.
Set and restore it from the event loop's thread, never from a step thread: OpenBLAS 0.3.31 keeps
a per-thread count once a thread has called it, so a step thread neither saw the limit nor could
restore the count (tests/judges/offline/test_offline_judge.py).
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


@contextmanager
def one_blas_thread() -> Iterator[None]:
    """Hold BLAS at one thread for the duration (nested and concurrent uses share one limit)."""
    global _active, _limiter, _controller
    with _lock:
        if _active == 0:
            if _controller is None:
                from threadpoolctl import ThreadpoolController

                _controller = ThreadpoolController()  # finds the BLAS libraries once
            _limiter = _controller.limit(limits=1, user_api="blas")
        _active += 1
    try:
        yield
    finally:
        with _lock:
            _active -= 1
            if _active == 0:
                _limiter.restore_original_limits()
                _limiter = None
