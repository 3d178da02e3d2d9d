"""The concurrency limiter: at most `limit` slots held, freed slots go to the oldest waiter."""

from __future__ import annotations

import asyncio

from convoeval.judges.retry import Limiter


async def test_slots_go_to_waiters_in_arrival_order_and_never_exceed_the_limit() -> None:
    limiter = Limiter(2)
    order: list[int] = []
    held = 0
    most = 0

    async def request(number: int) -> None:
        nonlocal held, most
        async with limiter.slot():
            held += 1
            most = max(most, held)
            order.append(number)
            await asyncio.sleep(0.005 if number % 3 else 0.01)
            held -= 1

    await asyncio.gather(*(request(n) for n in range(12)))
    assert order == list(range(12)) and most == 2 and limiter.peak == 2


async def test_a_cancelled_waiter_gives_its_turn_to_the_next() -> None:
    limiter = Limiter(1)
    release = asyncio.Event()
    served: list[str] = []

    async def hold() -> None:
        async with limiter.slot():
            await release.wait()

    async def request(name: str) -> None:
        async with limiter.slot():
            served.append(name)

    holder = asyncio.create_task(hold())
    await asyncio.sleep(0)
    waiting = [asyncio.create_task(request(name)) for name in ("cancelled", "next")]
    await asyncio.sleep(0)
    waiting[0].cancel()
    release.set()
    await asyncio.gather(holder, waiting[1])
    assert served == ["next"] and waiting[0].cancelled()
