"""A quick check of every LLM judge before scoring: its endpoint is reachable, and its server
takes its credentials (one authenticated request). A run whose judge cannot be reached, or whose
key is refused, would only fill the results file with failures.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Sequence
from urllib.parse import urlsplit
from urllib.request import getproxies, proxy_bypass

from convoeval.errors import ConvoevalError
from convoeval.judges import Judge
from convoeval.runner._plan import describe

#: Seconds to wait for a TCP connection to a judge endpoint.
CONNECT_TIMEOUT_S = 5.0


class JudgeUnreachableError(ConvoevalError, ConnectionError):
    """An LLM judge's endpoint does not accept connections (nothing was scored)."""


async def check_reachable(judges: Sequence[Judge], timeout: float = CONNECT_TIMEOUT_S) -> None:
    """Open (and close) one TCP connection to each HTTP judge endpoint; raise
    `JudgeUnreachableError` naming the endpoint when that fails. Judges without an HTTP endpoint
    (offline, fake) are not checked. Then each judge that can (`check_credentials`) sends one
    authenticated request: `JudgeAuthError` when its server refuses the key."""
    await _connect_each(judges, timeout)
    for judge in judges:
        check = getattr(judge, "check_credentials", None)
        if check is not None:
            await check()


async def _connect_each(judges: Sequence[Judge], timeout: float) -> None:
    """One TCP connection to each distinct HTTP endpoint (not through a proxy)."""
    seen: set[tuple[str, int]] = set()
    for judge in judges:
        endpoint = describe(judge).get("endpoint")
        if not endpoint:
            continue
        parts = urlsplit(str(endpoint))
        if parts.scheme not in ("http", "https") or not parts.hostname:
            continue
        if _proxied(parts.scheme, parts.hostname):
            continue  # requests go through a proxy: a direct connection proves nothing
        address = (parts.hostname, parts.port or (443 if parts.scheme == "https" else 80))
        if address in seen:
            continue
        seen.add(address)
        try:
            _, writer = await asyncio.wait_for(asyncio.open_connection(*address), timeout)
        except (OSError, TimeoutError) as exc:
            why = "no answer" if isinstance(exc, TimeoutError) else exc.strerror or str(exc)
            raise JudgeUnreachableError(
                f"cannot reach the judge at {endpoint} ({why}); nothing was scored. Check that "
                "the server runs and --base-url (OPENAI_BASE_URL) points at it"
            ) from exc
        writer.close()
        with contextlib.suppress(OSError):
            await writer.wait_closed()


def _proxied(scheme: str, host: str) -> bool:
    """Whether the environment sends requests to `host` through a proxy (HTTP(S)_PROXY)."""
    proxies = getproxies()
    return bool(proxies.get(scheme) or proxies.get("all")) and not proxy_bypass(host)
