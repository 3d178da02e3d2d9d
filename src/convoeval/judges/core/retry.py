"""Retry policy (backoff with jitter, Retry-After, a total time budget) and the concurrency limiter.

The LLM-judge core uses these once for every backend. Time is read through the policy's `clock`
and waited through its `sleep`, so tests drive retries with a fake clock instead of real waits.
"""

from __future__ import annotations

import asyncio
import random
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

DEFAULT_CONCURRENCY = 16
#: The default total retry time of one step, in seconds (`retry_budget`, `--retry-budget`).
DEFAULT_RETRY_BUDGET = 120.0


@dataclass(frozen=True)
class RetryPolicy:
    """How transient faults (429, 5xx, timeouts, connection errors) are retried.

    Retries go on while the step's budget (`max_total_s`) lasts; `max_retries` is only a safety cap
    on the count. The budget counts time spent on requests and waiting between them, from the
    first request sent: time spent queueing for a concurrency slot never counts.
    """

    max_retries: int = 20
    max_total_s: float = DEFAULT_RETRY_BUDGET
    base_delay_s: float = 0.5
    max_delay_s: float = 30.0
    max_retry_after_s: float = 60.0
    jitter: float = 0.25
    clock: Callable[[], float] = field(default=time.monotonic, compare=False, repr=False)
    sleep: Callable[[float], Awaitable[None]] = field(
        default=asyncio.sleep, compare=False, repr=False
    )

    def __post_init__(self) -> None:
        if self.max_retries < 0:
            raise ValueError("max_retries must be >= 0")
        if self.max_total_s <= 0 or self.base_delay_s < 0 or self.max_delay_s < 0:
            raise ValueError("retry times must be positive")
        if not 0 <= self.jitter <= 1:
            raise ValueError("jitter must be between 0 and 1")

    def backoff(self, retry: int, retry_after: float | None = None) -> float:
        """Seconds to wait before retry number `retry` (1-based); a server's Retry-After wins."""
        if retry_after is not None:
            return max(0.0, min(retry_after, self.max_retry_after_s))
        delay = min(self.base_delay_s * 2.0 ** (retry - 1), self.max_delay_s)
        spread = delay * self.jitter
        return max(0.0, delay + random.uniform(-spread, spread))


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a Retry-After header: delta-seconds or an HTTP date; None if absent."""
    if value is None:
        return None
    text = value.strip()
    if not text:
        return None
    try:
        return max(0.0, float(text))
    except ValueError:
        pass
    try:
        when = parsedate_to_datetime(text)
    except (TypeError, ValueError, IndexError):
        return None
    if when.tzinfo is None:
        when = when.replace(tzinfo=UTC)
    current = datetime.now(UTC).timestamp() if now is None else now
    return max(0.0, when.timestamp() - current)


class RetryBudget:
    """The retry time of one step: only what it spends sending and waiting to retry counts."""

    def __init__(self, seconds: float) -> None:
        self.seconds = seconds
        self.spent = 0.0

    def spend(self, seconds: float) -> None:
        """Count `seconds` of sending or backing off."""
        self.spent += max(0.0, seconds)

    def remaining(self) -> float:
        """Seconds left (never negative)."""
        return max(0.0, self.seconds - self.spent)


class _Waiter:
    """One request waiting for a slot: its event loop, the future it awaits there, and whether
    a slot was handed to it (set under the limiter's lock, so exactly one side frees it)."""

    __slots__ = ("future", "granted", "loop")

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self.loop = loop
        self.future: asyncio.Future[None] = loop.create_future()
        self.granted = False


class Limiter:
    """At most `limit` requests in flight in this process, from any thread and event loop.

    One count under a thread lock, one FIFO queue of waiters: a freed slot goes to the oldest
    waiter only (woken on its own loop), so judges shared by threads (each `score_sync` runs its
    own loop) or by several runs keep one limit. `limit` may be changed at any time: a larger
    one admits waiters at once; a smaller one lets the requests in flight finish and admits new
    ones only below it.
    """

    def __init__(self, limit: int) -> None:
        self._limit = _checked(limit)
        self._lock = threading.Lock()
        self._active = 0
        self._peak = 0
        self._waiting: deque[_Waiter] = deque()

    @property
    def limit(self) -> int:
        """The most requests in flight at once."""
        return self._limit

    @limit.setter
    def limit(self, limit: int) -> None:
        checked = _checked(limit)
        with self._lock:
            self._limit = checked
            granted = self._grant()
        self._wake(granted)

    @property
    def peak(self) -> int:
        """The most slots held at once so far."""
        return self._peak

    @property
    def waiting(self) -> int:
        """Requests waiting for a slot now."""
        return len(self._waiting)

    def _grant(self) -> list[_Waiter]:
        """Hand free slots to the oldest waiters (called under the lock; wake them after)."""
        granted = []
        while self._waiting and self._active < self._limit:
            waiter = self._waiting.popleft()
            waiter.granted = True
            self._active += 1
            self._peak = max(self._peak, self._active)
            granted.append(waiter)
        return granted

    def _release(self) -> None:
        with self._lock:
            self._active -= 1
            granted = self._grant()
        self._wake(granted)

    def _wake(self, waiters: list[_Waiter]) -> None:
        """Resolve each granted waiter's future on its own loop (thread-safe)."""
        try:
            running: asyncio.AbstractEventLoop | None = asyncio.get_running_loop()
        except RuntimeError:
            running = None
        for waiter in waiters:
            if waiter.loop is running:
                _resolve(waiter.future)
                continue
            try:
                waiter.loop.call_soon_threadsafe(_resolve, waiter.future)
            except RuntimeError:  # its loop is closed: its task never runs again
                self._release()

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """Hold one slot for the duration of a request (wait for one if all are taken)."""
        waiter = _Waiter(asyncio.get_running_loop())
        with self._lock:
            self._waiting.append(waiter)
            granted = self._grant()
        self._wake(granted)  # a free slot is handed over at once (the wait below returns)
        try:
            await waiter.future
        except asyncio.CancelledError:
            with self._lock:
                handed = waiter.granted
                if not handed:
                    self._waiting.remove(waiter)
            if handed:  # cancelled just after it was handed a slot: pass it on
                self._release()
            raise
        try:
            yield
        finally:
            self._release()


def _resolve(future: asyncio.Future[None]) -> None:
    if not future.done():  # a cancelled waiter frees its slot itself (it was granted)
        future.set_result(None)


def _checked(limit: int) -> int:
    if limit < 1:
        raise ValueError(f"concurrency must be >= 1, not {limit}")
    return limit
