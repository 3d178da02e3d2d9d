"""Retry policy (backoff with jitter, Retry-After, a total time budget) and the concurrency limiter.

The LLM-judge core uses these once for every backend. Time is read through the policy's `clock`
and waited through its `sleep`, so tests drive retries with a fake clock instead of real waits.
"""

from __future__ import annotations

import asyncio
import random
import time
import weakref
from collections import deque
from collections.abc import AsyncIterator, Awaitable, Callable
from contextlib import AbstractAsyncContextManager, asynccontextmanager
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


class _LoopLimit:
    """The slots of one limiter on one event loop; records the peak in use.

    FIFO: a freed slot goes to the oldest waiter only (a condition notifying every waiter woke
    each of the hundreds of queued requests on every release, for nothing). The limit is read
    at each admission, so a changed limit holds from then on.
    """

    def __init__(self, owner: Limiter) -> None:
        self.owner = owner
        self.active = 0
        self.peak = 0
        self._waiting: deque[asyncio.Future[None]] = deque()

    def admit(self) -> None:
        """Hand free slots to the oldest waiters (after a release, or when the limit grew)."""
        while self._waiting and self.active < self.owner.limit:
            waiter = self._waiting.popleft()
            if not waiter.done():  # skip a waiter that was cancelled
                self.active += 1
                self.peak = max(self.peak, self.active)
                waiter.set_result(None)

    def _release(self) -> None:
        self.active -= 1
        self.admit()

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        waiter = asyncio.get_running_loop().create_future()
        self._waiting.append(waiter)
        self.admit()  # a free slot is handed over at once (the wait below then returns)
        try:
            await waiter
        except asyncio.CancelledError:
            if not waiter.cancelled():  # cancelled just after it was handed a slot: pass it on
                self._release()
            raise
        try:
            yield
        finally:
            self._release()


class Limiter:
    """At most `limit` requests in flight, on each event loop the owner is used from.

    asyncio primitives never cross event loops, so each loop gets its own count. `limit` may be
    changed at any time: a larger one admits waiters at once; a smaller one lets the requests in
    flight finish and admits new ones only below it.
    """

    def __init__(self, limit: int) -> None:
        self._limit = _checked(limit)
        self._loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopLimit] = (
            weakref.WeakKeyDictionary()
        )

    @property
    def limit(self) -> int:
        """The most requests in flight at once, on each event loop."""
        return self._limit

    @limit.setter
    def limit(self, limit: int) -> None:
        self._limit = _checked(limit)
        for loop, here in list(self._loops.items()):
            if not loop.is_closed():  # the loop may run in another thread
                loop.call_soon_threadsafe(here.admit)

    def _here(self) -> _LoopLimit:
        loop = asyncio.get_running_loop()
        limit = self._loops.get(loop)
        if limit is None:
            limit = self._loops[loop] = _LoopLimit(self)
        return limit

    def slot(self) -> AbstractAsyncContextManager[None]:
        """Hold one slot for the duration of a request (wait for one if all are taken)."""
        return self._here().slot()

    @property
    def peak(self) -> int:
        """The most slots held at once on the running loop (0 if never used there)."""
        limit = self._loops.get(asyncio.get_running_loop())
        return 0 if limit is None else limit.peak


def _checked(limit: int) -> int:
    if limit < 1:
        raise ValueError(f"concurrency must be >= 1, not {limit}")
    return limit
