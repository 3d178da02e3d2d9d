"""The keyword options of `evaluate` checked as their command-line twins are: an unknown option
is refused (with the nearest name; a typo is never dropped), the peers' evaluate() keywords that
mean nothing here are taken out, an alias takes its documented spelling, and each count,
duration and pass mark is checked by the rule its CLI option follows, as a `UsageError` naming it.
"""

from __future__ import annotations

import difflib
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from convoeval.errors import UsageError, check_count, check_limit, one_spelling

#: The peers' evaluate() keywords with no meaning here: accepted so their code runs unchanged
#: (docs/migrating-from-ragas.md, docs/migrating-from-deepeval.md), then left out.
PEER_KEYWORDS = frozenset(
    {
        # Ragas ("llm" is mapped: Ragas's name for the judge)
        "llm",
        "embeddings",
        "callbacks",
        "run_config",
        "token_usage_parser",
        "in_ci",
        "batch_size",
        "experiment_name",
        "column_map",
        "allow_nest_asyncio",
        "return_executor",
        # DeepEval
        "hyperparameters",
        "identifier",
        "async_config",
        "display_config",
        "error_config",
        "cache_config",
    }
)


@dataclass
class AsyncConfig:
    """DeepEval's concurrency settings: `max_concurrent` is `max_concurrency`; `run_async=False`
    scores one pair at a time (`max_concurrency=1`); `throttle_value` is accepted and unused."""

    run_async: bool = True
    throttle_value: float = 0
    max_concurrent: int = 20


@dataclass
class DisplayConfig:
    """DeepEval's display settings: `show_indicator` is `show_progress`; the others are
    accepted and unused (results are in the returned `EvaluationResult` and its report)."""

    show_indicator: bool = True
    print_results: bool = True
    verbose_mode: bool | None = None
    display_option: Any = None
    file_output_dir: str | None = None


@dataclass
class ErrorConfig:
    """DeepEval's error settings: `ignore_errors=False` raises the first judge failure
    (`raise_exceptions=True`), `True` records it as a failed result; `skip_on_missing_params`
    is `skip_invalid` (records a metric cannot score are listed, the others scored)."""

    ignore_errors: bool = False
    skip_on_missing_params: bool = False


@dataclass
class CacheConfig:
    """DeepEval's cache settings: either `use_cache` or `write_cache` turns on the judge-answer
    cache (`cache=True`, which reads and writes); both off turn it off."""

    write_cache: bool = True
    use_cache: bool = False


def _from_configs(peers: Mapping[str, Any]) -> dict[str, Any]:
    """Our options for DeepEval's config objects (any object with their attribute names)."""
    mapped: dict[str, Any] = {}
    given = peers.get("async_config")
    if given is not None:
        run_async = getattr(given, "run_async", True)
        mapped["max_concurrency"] = getattr(given, "max_concurrent", 20) if run_async else 1
    given = peers.get("display_config")
    if given is not None:
        mapped["show_progress"] = bool(getattr(given, "show_indicator", True))
    given = peers.get("error_config")
    if given is not None:
        mapped["raise_exceptions"] = not getattr(given, "ignore_errors", False)
        mapped["skip_invalid"] = bool(getattr(given, "skip_on_missing_params", False))
    given = peers.get("cache_config")
    if given is not None:
        uses = getattr(given, "use_cache", False) or getattr(given, "write_cache", True)
        mapped["cache"] = bool(uses)
    return mapped


#: Alias -> the documented spelling of an `evaluate` option (README.md, "One name per concept").
ALIASES = {"concurrency": "max_concurrency"}
#: Options that count: each a whole number of at least 1 (`click.IntRange(min=1)`).
#: (The Ray engine checks its own, ray_workers and ray_block_size, in `choose_engine`.)
_COUNTS = ("max_concurrency", "judge_samples", "limit", "repeat")
#: Options in seconds: each a positive finite number (`click.FloatRange(min=0, min_open=True)`).
_SECONDS = ("timeout", "retry_budget")


def check_options(options: dict[str, Any], known: Mapping[str, Any]) -> dict[str, Any]:
    """Check `evaluate`'s keyword `options` (`known`: every option it takes) in place: the
    peers' keywords taken out and returned, aliases moved to their documented names, counts,
    seconds and thresholds checked."""
    peers = {key: options.pop(key) for key in list(options) if key in PEER_KEYWORDS - set(known)}
    unknown = sorted(set(options) - set(known) - set(ALIASES))
    if unknown:
        near = difflib.get_close_matches(unknown[0], [*known, *ALIASES], n=1)
        hint = f" (did you mean {near[0]!r}?)" if near else f"; it takes {', '.join(sorted(known))}"
        raise UsageError(f"evaluate() takes no option {unknown[0]!r}{hint}")
    for name, value in _from_configs(peers).items():
        if name in known:
            options[name] = one_spelling({name: options.get(name), f"a config's {name}": value})
    for alias, name in ALIASES.items():
        if alias in options:
            options[name] = one_spelling({name: options.get(name), alias: options.pop(alias)})
    for name in _COUNTS:
        check_count(options.get(name), name)
    for name in _SECONDS:
        value = options.get(name)
        if value is not None and check_limit(value, None, name) <= 0:
            raise UsageError(f"{name} must be a positive number of seconds, not {value!r}")
    thresholds = options.get("thresholds")
    if thresholds is not None:
        if not isinstance(thresholds, Mapping):
            raise UsageError(f"thresholds must map metric names to numbers, not {thresholds!r}")
        for name, value in thresholds.items():
            check_limit(value, None, f"the threshold of {name}")
    return peers
