"""HTTP for the bots under test: one JSON POST with a per-request timeout and retries of what is
worth retrying (429, 5xx, timeouts, dropped connections) within a time budget, one httpx client
per event loop, API keys masked in every message; and the reachability check made before a
simulation sends anything.

The failure classification and Retry-After handling are the OpenAI judge's
(`judges/openai/_replies.py`), the backoff the judges' `RetryPolicy`, so a bot endpoint is
retried exactly as a judge endpoint is.
"""

from __future__ import annotations

import asyncio
import contextlib
import weakref
from typing import Any
from urllib.parse import urlsplit

import httpx

from convoeval._sync import at_loop_end
from convoeval._text import plural
from convoeval.errors import ConvoevalError
from convoeval.judges.core.backend import BackendFailure, Failure
from convoeval.judges.core.endpoints import tls_context
from convoeval.judges.core.retry import Limiter, RetryBudget, RetryPolicy
from convoeval.judges.openai._replies import status_failure
from convoeval.judges.openai.judge import redact_url
from convoeval.judges.protocol._redact import redact
from convoeval.runner._reach import _proxied
from convoeval.simulate.bots import BotError

#: Seconds to wait for a TCP connection when checking an endpoint before a simulation.
CONNECT_TIMEOUT_S = 5.0


class EndpointUnreachableError(ConvoevalError, ConnectionError):
    """The bot's or the user model's endpoint does not accept connections (nothing was sent)."""


async def check_reachable(url: str, what: str, hint: str) -> None:
    """Open (and close) one TCP connection to `url`'s host; `EndpointUnreachableError` naming
    `what` and `hint` when that fails. Skipped for a host reached through a proxy."""
    parts = urlsplit(url)
    if parts.scheme not in ("http", "https") or not parts.hostname:
        return
    if _proxied(parts.scheme, parts.hostname):
        return
    address = (parts.hostname, parts.port or (443 if parts.scheme == "https" else 80))
    try:
        _, writer = await asyncio.wait_for(asyncio.open_connection(*address), CONNECT_TIMEOUT_S)
    except (OSError, TimeoutError) as exc:
        why = "no answer" if isinstance(exc, TimeoutError) else exc.strerror or str(exc)
        raise EndpointUnreachableError(
            f"cannot reach {what} at {redact_url(url)} ({why}); nothing was sent. {hint}"
        ) from exc
    writer.close()
    with contextlib.suppress(OSError):
        await writer.wait_closed()


class JsonPoster:
    """POSTs JSON to one URL and returns the parsed answer, retrying retryable failures."""

    def __init__(
        self,
        url: str,
        *,
        api_key: str | None,
        timeout: float,
        retry: RetryPolicy,
        concurrency: int | None,
        who: str,
    ) -> None:
        if timeout <= 0:
            raise ValueError(f"timeout must be positive, not {timeout:g}")
        self.url = url
        self.timeout = timeout
        self.retry = retry
        self.who = who
        self.limiter = Limiter(concurrency) if concurrency else None
        self._key = api_key
        self._headers = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, httpx.AsyncClient] = (
            weakref.WeakKeyDictionary()
        )

    def secrets(self) -> list[str]:
        """The API key and any password or query in the URL (masked in every message)."""
        parts = urlsplit(self.url)
        found = [self._key or "", parts.password or "", parts.query]
        return [s for s in found if s]

    def _client(self) -> httpx.AsyncClient:
        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            client = httpx.AsyncClient(
                timeout=None, verify=tls_context(self.url), headers=self._headers
            )
            self._clients[loop] = client
            at_loop_end(self.aclose)
        return client

    async def aclose(self) -> None:
        """Close this event loop's client."""
        client = self._clients.pop(asyncio.get_running_loop(), None)
        if client is not None:
            await client.aclose()

    async def post(self, body: dict[str, Any], spent: Any) -> Any:
        """The parsed JSON answer to `body`; `BotError` once retries cannot help. `spent(n, s)`
        is told of every request sent (`n` = 1) and the seconds it took."""
        policy = self.retry
        budget = RetryBudget(policy.max_total_s)
        attempts = 0
        while True:
            attempts += 1
            async with self._slot():
                started = policy.clock()
                try:
                    return await self._once(body)
                except BackendFailure as failure:
                    if failure.kind is not Failure.RETRYABLE:
                        raise self._error(failure.message) from None
                    last = failure
                finally:
                    elapsed = policy.clock() - started
                    spent(1, elapsed)
            budget.spend(elapsed)
            delay = policy.backoff(attempts, last.retry_after)
            if attempts > policy.max_retries or delay >= budget.remaining():
                raise self._error(
                    f"gave up after {attempts} {plural(attempts, 'attempt')} (retry budget "
                    f"{policy.max_total_s:g} s); last error: {last.message}"
                )
            await policy.sleep(delay)
            budget.spend(delay)

    def _slot(self) -> contextlib.AbstractAsyncContextManager[None]:
        return contextlib.nullcontext() if self.limiter is None else self.limiter.slot()

    async def _once(self, body: dict[str, Any]) -> Any:
        scope = asyncio.timeout(self.timeout)
        try:
            async with scope:
                response = await self._client().post(self.url, json=body)
        except TimeoutError:
            if not scope.expired():
                raise
            raise BackendFailure(
                Failure.RETRYABLE, f"no answer within {self.timeout:g} s (the request timeout)"
            ) from None
        except httpx.TransportError as exc:
            detail = str(exc) or type(exc).__name__
            raise BackendFailure(Failure.RETRYABLE, f"connection failed: {detail}") from None
        if response.status_code != 200:
            raise status_failure(response, body, "prompt")
        try:
            return response.json()
        except ValueError:
            start = response.content[:200].decode("utf-8", "replace")
            raise BackendFailure(
                Failure.FATAL, f"HTTP 200 with a body that is not JSON: {start!r}"
            ) from None

    def _error(self, message: str) -> BotError:
        return BotError(redact(f"{self.who} at {redact_url(self.url)}: {message}", self.secrets()))
