"""The one line that says the offline judge is loading, when loading takes a while.

A first score loads the model (checking its SHA-256 and rewriting it for integer products):
several seconds on a small machine, which looks like a hang. Once a load has taken
`LOADING_NOTICE_AFTER_S`, one line on stderr says what is happening, at most once per process,
and never after `quiet_loading()` (`convoeval run -q`) or inside `loading_quietly()` (a run
with `show_progress=False`).
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager

#: Seconds the model may take to load before one line on stderr says it is loading (a first
#: score takes several seconds on a small machine and looks like a hang); tests lower it to 0.
LOADING_NOTICE_AFTER_S = 1.0
#: The line, printed once per process at most.
LOADING_NOTICE = "convoeval: loading the offline judge (all-MiniLM-L6-v2)..."
_notice = {"said": False, "quiet": False}
_notice_lock = threading.Lock()
#: How many `loading_quietly()` scopes are open (in any thread).
_quiet_scopes = [0]


def quiet_loading(quiet: bool = True) -> None:
    """Print no loading line in this process (`convoeval run -q`)."""
    _notice["quiet"] = quiet


@contextmanager
def loading_quietly() -> Iterator[None]:
    """No loading line while this is open (`evaluate(show_progress=False)`); scopes nest, and
    one open in any thread keeps the line back."""
    with _notice_lock:
        _quiet_scopes[0] += 1
    try:
        yield
    finally:
        with _notice_lock:
            _quiet_scopes[0] -= 1


def _silent() -> bool:
    return _notice["quiet"] or _quiet_scopes[0] > 0


def _say_loading() -> None:
    """Print the loading line unless it was printed already or the process is quiet."""
    with _notice_lock:
        if _notice["said"] or _silent():
            return
        _notice["said"] = True
    print(LOADING_NOTICE, file=sys.stderr, flush=True)


class LoadingNotice:
    """Around a model load: the loading line once `LOADING_NOTICE_AFTER_S` have passed (at
    once when it is 0), never when the load ends first."""

    def __enter__(self) -> None:
        self._timer: threading.Timer | None = None
        if LOADING_NOTICE_AFTER_S <= 0:
            _say_loading()
        elif not _notice["said"] and not _silent():
            self._timer = threading.Timer(LOADING_NOTICE_AFTER_S, _say_loading)
            self._timer.daemon = True
            self._timer.start()

    def __exit__(self, *exc: object) -> None:
        if self._timer is not None:
            self._timer.cancel()
