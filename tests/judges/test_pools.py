"""An OpenAI-compatible judge spreads its requests over `POOLS` HTTP clients, in turn, so no one
connection pool holds every request in flight (httpcore walks all of a pool's connections
whenever a request starts or ends); all of them close with the event loop."""

from __future__ import annotations

import asyncio

from convoeval.judges import OpenAIJudge
from convoeval.judges.openai.judge import POOLS


def test_requests_take_the_pools_in_turn_and_all_close_with_the_loop() -> None:
    judge = OpenAIJudge("m", base_url="http://127.0.0.1:9/v1", api_key="k", cache=False)

    async def take() -> list[object]:
        clients = [judge.chat._client() for _ in range(3 * POOLS)]
        await judge.chat.aclose()
        return clients

    clients = asyncio.run(take())
    assert POOLS > 1 and len({id(c) for c in clients}) == POOLS
    assert clients[:POOLS] == clients[POOLS : 2 * POOLS]  # the same clients, in the same turn
    assert all(client.is_closed for client in clients)  # type: ignore[attr-defined]
