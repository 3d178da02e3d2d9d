"""The concurrency limiter: at most `limit` slots held, freed slots go to the oldest waiter."""

from __future__ import annotations

import asyncio

import pytest

from convoeval.judges.core.retry import Limiter


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


async def test_a_changed_limit_holds_on_a_loop_already_used() -> None:
    # Growing admits waiters at once; shrinking lets the requests in flight finish and admits
    # new ones only below the new limit.
    limiter = Limiter(2)
    release = asyncio.Event()
    held = 0
    seen: list[int] = []  # requests in flight when each one got its slot

    async def request() -> None:
        nonlocal held
        async with limiter.slot():
            held += 1
            seen.append(held)
            await release.wait()
            await asyncio.sleep(0.002)
            held -= 1

    tasks = [asyncio.create_task(request()) for _ in range(12)]
    for _ in range(5):
        await asyncio.sleep(0)
    assert (held, limiter.peak) == (2, 2)
    limiter.limit = 5
    for _ in range(5):
        await asyncio.sleep(0)
    assert (held, limiter.peak, limiter.limit) == (5, 5, 5)
    limiter.limit = 1
    release.set()
    await asyncio.gather(*tasks)
    assert seen == [1, 2, 3, 4, 5] + [1] * 7 and limiter.peak == 5


def test_a_limit_below_one_is_refused_when_set() -> None:
    limiter = Limiter(3)
    with pytest.raises(ValueError, match="concurrency must be >= 1, not 0"):
        limiter.limit = 0
    assert limiter.limit == 3


async def test_a_waiter_cancelled_after_it_was_handed_a_slot_passes_the_slot_on() -> None:
    limiter = Limiter(1)
    served: list[str] = []

    async def request(name: str) -> None:
        async with limiter.slot():
            served.append(name)

    held = limiter.slot()
    await held.__aenter__()
    handed, after = (asyncio.create_task(request(n)) for n in ("handed", "after"))
    await asyncio.sleep(0)
    await held.__aexit__(None, None, None)  # hands the slot to "handed", which has not run yet
    handed.cancel()
    await asyncio.gather(handed, after, return_exceptions=True)
    assert served == ["after"] and handed.cancelled() and limiter.peak == 1
