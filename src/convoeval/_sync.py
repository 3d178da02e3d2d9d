"""Running a coroutine from sync code: the one sync wrapper behind every `*_sync` and `measure`,
and `at_loop_end`, which closes what a loop opened when that loop ends.

Private: callers use `evaluate`, `score_sync` or `measure`, which all come through here.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading
import weakref
from collections.abc import AsyncGenerator, Awaitable, Callable, Coroutine
from typing import Any, TypeVar

T = TypeVar("T")

#: Per event loop, the closers waiting for it to end, by their `close` (the loop itself holds
#: its async generators only weakly).
_WAITING: weakref.WeakKeyDictionary[
    asyncio.AbstractEventLoop, dict[Callable[[], Awaitable[None]], AsyncGenerator[None, None]]
] = weakref.WeakKeyDictionary()
_LOCK = threading.Lock()


def run_sync(make: Callable[[], Coroutine[Any, Any, T]]) -> T:
    """Run a coroutine to completion from sync code, also inside a running loop (Jupyter).

    Outside a loop this is `asyncio.run`; inside one the coroutine runs in a worker thread with
    its own event loop, so the caller's loop is never re-entered. Either way the loop ends with
    the call, and what was registered with `at_loop_end` on it is closed.
    """
    try:
        asyncio.get_running_loop()
    except RuntimeError:
        running = False  # run below, outside this block: its errors chain to nothing
    else:
        running = True
    if not running:
        return asyncio.run(make())
    box: dict[str, Any] = {}

    def _worker() -> None:
        try:
            box["value"] = asyncio.run(make())
        except BaseException as exc:  # re-raised in the caller's thread
            box["error"] = exc

    thread = threading.Thread(target=_worker, name="convoeval-run-sync", daemon=True)
    thread.start()
    thread.join()
    if "error" in box:
        raise box["error"]
    result: T = box["value"]
    return result


def at_loop_end(close: Callable[[], Awaitable[None]]) -> None:
    """Await `close()` on the running loop when that loop ends (call it from the loop; a `close`
    already waiting for this loop, such as the same bound method, is not added twice).

    A client bound to one event loop (an httpx connection pool) is useless once its loop has
    ended, and a sync call's loop ends with the call: left open, every call would leave its
    connections open. `asyncio.run`, `asyncio.Runner` and `run_sync` end a loop with
    `loop.shutdown_asyncgens()`, which closes every async generator still suspended on it, so
    `close` runs in the `finally` of one such generator, suspended here at its first `yield`.
    """
    loop = asyncio.get_running_loop()
    with _LOCK:
        waiting = _WAITING.setdefault(loop, {})
        if close in waiting:
            return

    async def closer() -> AsyncGenerator[None, None]:
        try:
            yield
        finally:
            with _LOCK:
                waiting.pop(close, None)
            await close()

    ending = closer()
    first = ending.asend(None)  # registers the generator with the running loop's hooks
    with contextlib.suppress(StopIteration):
        first.send(None)  # runs it to its `yield` (it awaits nothing before)
    with _LOCK:
        waiting[close] = ending
