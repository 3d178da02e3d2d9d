"""`OpenAIRecipe`: how to build an `OpenAIJudge` again in another process (a Ray worker), with
another endpoint registry and its own share of the judge's concurrency limit.

Judges hold connections, locks and a cache handle, so they do not travel between processes;
their recipe does (it pickles). It carries the API key and the full base URL, which stay out
of its repr and str.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import TYPE_CHECKING

from convoeval.judges.cache import JudgeCache
from convoeval.judges.endpoints import EndpointRegistry
from convoeval.judges.retry import RetryPolicy

if TYPE_CHECKING:
    from convoeval.judges.openai_judge import OpenAIJudge


@dataclass(frozen=True)
class OpenAIRecipe:
    """The settings an `OpenAIJudge` was made with (`OpenAIJudge.recipe()`), and its limit.

    `concurrency` is the judge's limit on requests in flight; `shared` says whether that is its
    endpoint's shared default limit (used by every judge there that set none) rather than its
    own. `cache` is True for the default cache, False for none, else the cache file's path.
    """

    model: str
    base_url: str = field(repr=False)  # may hold a password or a key in its query
    endpoint: str
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
    concurrency: int
    shared: bool

    def build(self, registry: EndpointRegistry, concurrency: int) -> OpenAIJudge:
        """The judge, using `registry`, with `concurrency` requests in flight: its own limit,
        or, for a judge on its endpoint's shared limit, that shared limit in `registry`."""
        from convoeval.judges.openai_judge import OpenAIJudge

        if self.shared:
            registry.shared_limiter(self.endpoint).limit = concurrency
        return OpenAIJudge(
            self.model,
            base_url=self.base_url,
            api_key=self.api_key,
            concurrency=None if self.shared else concurrency,
            cache=JudgeCache(self.cache) if isinstance(self.cache, str) else self.cache,
            timeout=self.timeout,
            seed=self.seed,
            temperature=self.temperature,
            max_tokens=self.max_tokens,
            retry=self.retry,
            strict=self.strict,
            registry=registry,
            reason_first=self.reason_first,
            samples=self.samples,
        )
