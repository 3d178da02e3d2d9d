"""The run's spending caps: tokens (`max_tokens`) and US dollars (`max_cost`), summed over the
user model and the bot for every conversation this run plays.

Each conversation's spending is registered here as it starts; the caps are checked before each
turn, so a turn under way always finishes (the run may pass a cap by at most one turn per
conversation in flight). Cost needs a price for each model that is asked: checked before a run
sends anything (`require_prices`), never guessed.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from convoeval.errors import UsageError
from convoeval.judges.pricing import estimate_cost
from convoeval.judges.protocol.base import Usage


class Budget:
    """What this run spent, by side, and whether a cap is reached."""

    def __init__(
        self,
        *,
        max_tokens: int | None,
        max_cost: float | None,
        user: Mapping[str, Any],
        bot: Mapping[str, Any],
        prices: Mapping[str, tuple[float, float]] | None,
    ) -> None:
        self.max_tokens = max_tokens
        self.max_cost = max_cost
        self._user_desc = dict(user)
        self._bot_desc = dict(bot)
        self._prices = dict(prices) if prices else None
        #: The (user, bot) usage of the conversations under way (at most one per slot).
        self._live: list[tuple[Usage, Usage]] = []
        self._ended = (Usage(), Usage())

    @contextmanager
    def track(self) -> Iterator[tuple[Usage, Usage]]:
        """The (user, bot) usage of one conversation, counted while it is played and folded
        into the run's totals when it ends (so a check costs the same however many ended)."""
        part = (Usage(), Usage())
        self._live.append(part)
        try:
            yield part
        finally:
            self._live.remove(part)
            self._ended[0].add(part[0])
            self._ended[1].add(part[1])

    def totals(self) -> tuple[Usage, Usage]:
        """Everything spent so far: (user model, bot)."""
        user, bot = Usage().add(self._ended[0]), Usage().add(self._ended[1])
        for one, two in self._live:
            user.add(one)
            bot.add(two)
        return user, bot

    def cost(self) -> float | None:
        """US dollars spent so far, None when a side that sent requests has no known price."""
        user, bot = self.totals()
        total = 0.0
        for desc, usage in ((self._user_desc, user), (self._bot_desc, bot)):
            if not _paid(desc):
                continue
            cost, _ = estimate_cost(desc, usage, self._prices)
            if cost is None:
                return None
            total += cost
        return total

    def reached(self) -> str | None:
        """`max_tokens` or `max_cost` when that cap is reached, else None."""
        if self.max_tokens is not None:
            user, bot = self.totals()
            spent = sum(u.prompt_tokens + u.completion_tokens for u in (user, bot))
            if spent >= self.max_tokens:
                return "max_tokens"
        if self.max_cost is not None:
            cost = self.cost()
            if cost is not None and cost >= self.max_cost:
                return "max_cost"
        return None

    def require_prices(self) -> None:
        """`UsageError` when `max_cost` is set but a model that will be asked has no price."""
        if self.max_cost is None:
            return
        for side, desc in (("user model", self._user_desc), ("bot", self._bot_desc)):
            if not _paid(desc):
                continue
            cost, note = estimate_cost(desc, Usage(requests=1), self._prices)
            if cost is None:
                model = desc.get("model") or desc.get("name")
                raise UsageError(
                    f"--max-cost needs the price of the {side} {model}: {note}; give it with "
                    f"--price {model}=INPUT,OUTPUT (USD per million tokens)"
                )


def _paid(desc: Mapping[str, Any]) -> bool:
    """Whether requests to this side are paid by the token (a model endpoint)."""
    return desc.get("kind") == "openai"
