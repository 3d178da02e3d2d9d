"""`OpenAIRecipe`: what it takes to build an `OpenAIJudge` again in another process (a Ray
worker), with another endpoint registry and its own share of the judge's concurrency limit.
`OpenAIJudge.from_recipe` builds it (the judge imports this module, never the reverse).

Judges hold connections, locks and a cache handle, so they do not travel between processes;
their recipe does (it pickles). It carries the API key and the full base URL, which stay out
of its repr and str.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from convoeval.judges.core.cache import JudgeCache
from convoeval.judges.core.retry import RetryPolicy

#: Marks the fields that say how the judge's limit is shared (not keyword arguments).
_LIMIT = {"limit": True}


@dataclass(frozen=True)
class OpenAIRecipe:
    """The settings an `OpenAIJudge` was made with (`OpenAIJudge.recipe()`), and its limit.

    The fields up to `samples` are the judge's keyword arguments of those names (`kwargs()`).
    `concurrency` is the judge's limit on requests in flight; `shared` says whether that is its
    endpoint's shared default limit (used by every judge there that set none) rather than its
    own. `cache` is True for the default cache, False for none, else the cache file's path.
    """

    model: str
    base_url: str = field(repr=False)  # may hold a password or a key in its query
    api_key: str = field(repr=False)
    cache: bool | str
    timeout: float
    seed: int | None
    temperature: float
    max_tokens: int | None
    retry: RetryPolicy
    strict: bool | None
    reason_first: bool
    samples: int
    context_window: int | None
    endpoint: str = field(metadata=_LIMIT)
    concurrency: int = field(metadata=_LIMIT)
    shared: bool = field(metadata=_LIMIT)

    @classmethod
    def of(cls, judge: Any, **given: Any) -> OpenAIRecipe:
        """The recipe of `judge` (an `OpenAIJudge`): the `given` fields, the others read from
        the judge's attributes of the same names."""
        names = (f.name for f in fields(cls))
        return cls(**{n: given[n] if n in given else getattr(judge, n) for n in names})

    def kwargs(self) -> dict[str, Any]:
        """The judge's keyword arguments (its cache opened; no limit and no registry)."""
        made = {f.name: getattr(self, f.name) for f in fields(self) if not f.metadata}
        if isinstance(self.cache, str):
            made["cache"] = JudgeCache(self.cache)
        return made
