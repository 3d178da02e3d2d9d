"""Retry policy (backoff with jitter, Retry-After, a total time budget) and the concurrency limiter.

The LLM-judge core uses these once for every backend. Time is read through the policy's `clock`
and waited through its `sleep`, so tests drive retries with a fake clock instead of real waits.
"""

from __future__ import annotations

import asyncio
import random
import time
import weakref
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
    """A counting limit on one event loop; records the peak in use.

    A FIFO semaphore: a freed slot wakes only the oldest waiter (a condition notifying every
    waiter woke each of the hundreds of queued requests on every release, for nothing).
    """

    def __init__(self, owner: Limiter) -> None:
        self.active = 0
        self.peak = 0
        self._free = asyncio.Semaphore(owner.limit)

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        async with self._free:
            self.active += 1
            self.peak = max(self.peak, self.active)
            try:
                yield
            finally:
                self.active -= 1


class Limiter:
    """At most `limit` requests in flight, on each event loop the owner is used from.

    asyncio primitives never cross event loops, so each loop gets its own count.
    """

    def __init__(self, limit: int) -> None:
        if limit < 1:
            raise ValueError("concurrency must be >= 1")
        self.limit = limit
        self._loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _LoopLimit] = (
            weakref.WeakKeyDictionary()
        )

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
