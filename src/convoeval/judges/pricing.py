"""Judge cost from token usage: a small price table for OpenAI models, or prices you supply.

Prices are US dollars per million tokens (input, output). The table applies only to requests
sent to api.openai.com; any other endpoint (a local server, a gateway) has no known price unless
you give one (`--price MODEL=INPUT,OUTPUT`, `prices={MODEL: (INPUT, OUTPUT)}`). Unknown means no
cost figure, said so, never a guessed one. Requests sent through the Batch API (a judge whose
description says `batch: true`) cost `BATCH_DISCOUNT` of the table's price, as OpenAI bills
them; prices you give are used as they are. Every note says where the price came from.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from typing import Any

from convoeval.errors import UsageError
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
#: How a price is given: its unit, and the two spellings (command line, Python).
PRICE_UNIT = "USD per million tokens, input then output"
PRICE_HINT = "--price MODEL=INPUT,OUTPUT or prices={MODEL: (INPUT, OUTPUT)}"


def parse_price(text: str, option: str = "--price") -> tuple[str, tuple[float, float]]:
    """`MODEL=INPUT,OUTPUT` (USD per million tokens) as (model, (input, output)); a
    `UsageError` naming `option` when it is not a model and two finite numbers >= 0."""
    model, sep, numbers = text.partition("=")
    parts = numbers.split(",")
    expected = f"{option}: expected MODEL=INPUT,OUTPUT ({PRICE_UNIT}), e.g. gpt-4o-mini=0.15,0.60"
    if not sep or not model.strip() or len(parts) != 2:
        raise UsageError(f"{expected}; got {text!r}")
    try:
        price = (float(parts[0]), float(parts[1]))
    except ValueError:
        raise UsageError(f"{expected}; got {text!r}") from None
    return model.strip(), _checked(model.strip(), price, option)


def check_prices(
    prices: Mapping[str, Any] | None, option: str = "prices"
) -> dict[str, tuple[float, float]] | None:
    """`prices={MODEL: (INPUT, OUTPUT)}` checked: model names, two finite numbers >= 0 each
    (USD per million tokens); a `UsageError` naming `option` and the model otherwise."""
    if prices is None:
        return None
    if not isinstance(prices, Mapping):
        raise UsageError(
            f"{option} must map model names to (input, output) prices, not {type(prices).__name__}"
        )
    checked: dict[str, tuple[float, float]] = {}
    for model, price in prices.items():
        if not isinstance(model, str) or not model.strip():
            raise UsageError(f"{option}: a model name must be a non-empty string, not {model!r}")
        pair = tuple(price) if isinstance(price, list | tuple) else (price,)
        if len(pair) != 2 or not all(_number(v) for v in pair):
            raise UsageError(
                f"{option}[{model!r}] must be two numbers (input, output; {PRICE_UNIT}), "
                f"not {price!r}"
            )
        checked[model] = _checked(model, (float(pair[0]), float(pair[1])), option)
    return checked


def _number(value: Any) -> bool:
    return isinstance(value, int | float) and not isinstance(value, bool)


def _checked(model: str, price: tuple[float, float], option: str) -> tuple[float, float]:
    """A price whose two numbers are finite and not negative."""
    if not all(math.isfinite(v) and v >= 0 for v in price):
        raise UsageError(
            f"{option}: the price of {model} must be two finite numbers >= 0 ({PRICE_UNIT}), "
            f"got {price[0]:g}, {price[1]:g}"
        )
    return price


def _rates(price: tuple[float, float]) -> str:
    return f"${price[0]:g} input, ${price[1]:g} output per 1M tokens"


def _price_for(
    judge: Mapping[str, Any], prices: Mapping[str, tuple[float, float]] | None
) -> tuple[tuple[float, float] | None, str]:
    """The (input, output) price for the judge's model, or None with why not."""
    model = str(judge.get("model") or "")
    given = next((prices[k] for k in (model, f"openai/{model}") if prices and k in prices), None)
    if model and given is not None:  # keyed by the model or by its judge spec
        return given, f"your price for {model} (--price / prices=): {_rates(given)}"
    endpoint = str(judge.get("endpoint") or "")
    if endpoint.rstrip("/") == _OPENAI_ENDPOINT and model in PRICES:
        if judge.get("batch") is True:
            low, high = PRICES[model]
            price = (low * BATCH_DISCOUNT, high * BATCH_DISCOUNT)
            return price, f"OpenAI batch price of {model} (built-in table, half the list price)"
        return PRICES[model], f"OpenAI list price of {model} (built-in table)"
    if not model:
        return None, "no price: the judge names no model"
    where = f" at {endpoint}" if endpoint else ""
    return None, f"no price known for {model}{where} (give one: {PRICE_HINT}, {PRICE_UNIT})"


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
    if kind == "gguf":
        return 0.0, "the gguf judge runs locally (llama.cpp in this process)"
    price, note = _price_for(judge, prices)
    if price is None:
        return None, note
    cost = (usage.prompt_tokens * price[0] + usage.completion_tokens * price[1]) / 1_000_000
    return cost, note
