"""Judge cost from token usage: a small price table for OpenAI models, or prices you supply.

Prices are US dollars per million tokens (input, output). The table applies only to requests
sent to api.openai.com; any other endpoint (a local server, a gateway) has no known price unless
you pass `prices=`. Unknown means no cost figure, said so, never a guessed one. Requests sent
through the Batch API (a judge whose description says `batch: true`) cost `BATCH_DISCOUNT` of
the table's price, as OpenAI bills them; prices you pass are used as they are.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from convoeval.judges.protocol.base import Usage

#: USD per 1M tokens (input, output) at api.openai.com, standard tier (checked 2025).
PRICES: dict[str, tuple[float, float]] = {
    "gpt-4o-mini": (0.15, 0.60),
    "gpt-4o": (2.50, 10.00),
    "gpt-4.1": (2.00, 8.00),
    "gpt-4.1-mini": (0.40, 1.60),
    "gpt-4.1-nano": (0.10, 0.40),
    "gpt-5": (1.25, 10.00),
    "gpt-5-mini": (0.25, 2.00),
    "gpt-5-nano": (0.05, 0.40),
    "o4-mini": (1.10, 4.40),
    "o3-mini": (1.10, 4.40),
}
_OPENAI_ENDPOINT = "https://api.openai.com/v1"
#: The share of the list price a Batch API request costs at api.openai.com (half).
BATCH_DISCOUNT = 0.5


def _price_for(
    judge: Mapping[str, Any], prices: Mapping[str, tuple[float, float]] | None
) -> tuple[tuple[float, float] | None, str]:
    """The (input, output) price for the judge's model, or None with why not."""
    model = str(judge.get("model") or "")
    if prices and model in prices:
        return prices[model], f"prices given for {model}"
    endpoint = str(judge.get("endpoint") or "")
    if endpoint.rstrip("/") == _OPENAI_ENDPOINT and model in PRICES:
        if judge.get("batch") is True:
            low, high = PRICES[model]
            price = (low * BATCH_DISCOUNT, high * BATCH_DISCOUNT)
            return price, f"OpenAI batch price of {model} (half the list price)"
        return PRICES[model], f"OpenAI list price of {model}"
    if not model:
        return None, "no price: the judge names no model"
    where = f" at {endpoint}" if endpoint else ""
    return None, f"no price known for {model}{where} (pass prices={{model: (input, output)}})"


def estimate_cost(
    judge: Mapping[str, Any] | None,
    usage: Usage,
    prices: Mapping[str, tuple[float, float]] | None = None,
) -> tuple[float | None, str]:
    """(cost in USD or None, a note saying where the price came from or why there is none);
    a batch judge's note also says how many requests went by batch."""
    cost, note = _estimate(judge, usage, prices)
    if judge is not None and judge.get("batch") is True and usage.requests:
        note += f"; {usage.requests} {'request' if usage.requests == 1 else 'requests'} by batch"
    return cost, note


def _estimate(
    judge: Mapping[str, Any] | None,
    usage: Usage,
    prices: Mapping[str, tuple[float, float]] | None,
) -> tuple[float | None, str]:
    if usage.requests == 0:
        return 0.0, "no paid requests were sent"
    if judge is None:
        return None, "no price: unknown judge"
    kind = judge.get("judge") or judge.get("kind")
    if kind == "offline":
        return 0.0, "the offline judge runs locally"
    price, note = _price_for(judge, prices)
    if price is None:
        return None, note
    cost = (usage.prompt_tokens * price[0] + usage.completion_tokens * price[1]) / 1_000_000
    return cost, note
