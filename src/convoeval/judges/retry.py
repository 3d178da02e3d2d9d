"""Retry policy (bounded exponential backoff with jitter, Retry-After) and per-endpoint limits.

Retries and concurrency limits live here, once, so every metric and every judge instance that
points at the same endpoint shares one limit and one behaviour under faults.
"""

from __future__ import annotations

import asyncio
import random
import time
import weakref
from collections.abc import AsyncIterator
from contextlib import asynccontextmanager
from dataclasses import dataclass
from datetime import UTC, datetime
from email.utils import parsedate_to_datetime

DEFAULT_CONCURRENCY = 16


@dataclass(frozen=True)
class RetryPolicy:
    """How transient faults are retried: count and total-time bounds, backoff and its caps."""

    max_retries: int = 4
    max_total_s: float = 120.0
    base_delay_s: float = 0.5
    max_delay_s: float = 30.0
    max_retry_after_s: float = 60.0
    jitter: float = 0.25

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


class Deadline:
    """The total-time budget of one step's retries."""

    def __init__(self, seconds: float) -> None:
        self._end = time.monotonic() + seconds

    def remaining(self) -> float:
        """Seconds left (never negative)."""
        return max(0.0, self._end - time.monotonic())


class EndpointLimiter:
    """A resizable counting limit for one endpoint on one event loop; records the peak in use."""

    def __init__(self, limit: int) -> None:
        self.limit = limit
        self.active = 0
        self.peak = 0
        self._changed = asyncio.Condition()

    @asynccontextmanager
    async def slot(self) -> AsyncIterator[None]:
        """Hold one slot of the endpoint's limit for the duration of a request."""
        async with self._changed:
            await self._changed.wait_for(lambda: self.active < self.limit)
            self.active += 1
            self.peak = max(self.peak, self.active)
        try:
            yield
        finally:
            async with self._changed:
                self.active -= 1
                self._changed.notify_all()


_limits: dict[str, int] = {}
_limiters: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, dict[str, EndpointLimiter]] = (
    weakref.WeakKeyDictionary()
)


def set_endpoint_limit(endpoint: str, limit: int) -> None:
    """Set the concurrency limit of `endpoint` for every judge and every event loop."""
    if limit < 1:
        raise ValueError("concurrency must be >= 1")
    _limits[endpoint] = limit
    for per_loop in list(_limiters.values()):
        limiter = per_loop.get(endpoint)
        if limiter is not None:
            limiter.limit = limit


def endpoint_limit(endpoint: str) -> int:
    """The concurrency limit in force for `endpoint` (16 unless set)."""
    return _limits.get(endpoint, DEFAULT_CONCURRENCY)


def limiter_for(endpoint: str) -> EndpointLimiter:
    """The running loop's limiter for `endpoint` (asyncio primitives never cross event loops)."""
    loop = asyncio.get_running_loop()
    per_loop = _limiters.get(loop)
    if per_loop is None:
        per_loop = {}
        _limiters[loop] = per_loop
    limiter = per_loop.get(endpoint)
    if limiter is None:
        limiter = EndpointLimiter(endpoint_limit(endpoint))
        per_loop[endpoint] = limiter
    return limiter
