"""The options the commands share, in one place: how DATA is read (`--format`, `--messages-field`,
`--field`), `--trials`, `--price`, the judge options and the engine options as one decorator
each, and the parsing click cannot do alone: `METRIC=X` pairs, `--field NAME=PATH`, `--price
MODEL=INPUT,OUTPUT`, `--reference-topics T ...` (several values, or `@FILE`), the default name
of the results file, and `--concurrency` as the limit of each endpoint.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])


class _DataFormats(click.Choice):  # type: ignore[type-arg]
    """`--format`'s choices, `convoeval.io.records.FORMATS`, read when first needed (parsing or
    `--help` of a command that has the option), so the command line starts without the readers."""

    def __init__(self) -> None:
        super().__init__(())

    @property  # type: ignore[override]
    def choices(self) -> list[str]:
        from convoeval.io.records import FORMATS as DATA_FORMATS

        return list(DATA_FORMATS)

    @choices.setter
    def choices(self, value: Any) -> None:
        """Ignored: the choices are always the readers' formats."""


FORMATS = _DataFormats()
#: A file to read or write (not a folder), given to the command as a `Path`.
FILE = click.Path(dir_okay=False, path_type=Path)


def count_option(*decls: str, help: str, minimum: int = 1, **extra: Any) -> Callable[[F], F]:
    """An option taking a whole number of at least `minimum` (shown as N)."""
    extra.setdefault("metavar", "N")
    return click.option(*decls, type=click.IntRange(min=minimum), help=help, **extra)


def positive_option(*decls: str, help: str, metavar: str = "S") -> Callable[[F], F]:
    """An option taking a positive number: seconds (S), or another amount (`metavar`)."""
    positive = click.FloatRange(min=0, min_open=True)
    return click.option(*decls, type=positive, metavar=metavar, help=help)


def file_option(*decls: str, help: str, **extra: Any) -> Callable[[F], F]:
    """An option naming a file (a `Path`; None when not given)."""
    return click.option(*decls, type=FILE, help=help, **extra)


def repeated_option(*decls: str, metavar: str, help: str) -> Callable[[F], F]:
    """An option that may be given several times (a tuple of its values)."""
    return click.option(*decls, multiple=True, metavar=metavar, help=help)


def flag_option(*decls: str, help: str) -> Callable[[F], F]:
    """An on/off option."""
    return click.option(*decls, is_flag=True, help=help)


def metric_option(metavar: str, help: str, name: str = "metric_names") -> Callable[[F], F]:
    """`-m/--metric`, repeatable (a command's help says what its metrics are for)."""
    return repeated_option("-m", "--metric", name, metavar=metavar, help=help)


def report_option(help: str) -> Callable[[F], F]:
    """`--report FILE`: the HTML page a command also writes."""
    return file_option("--report", "report_path", help=help)


def output_option(help: str, **extra: Any) -> Callable[[F], F]:
    """`-o/--output FILE`: what a command writes."""
    return file_option("-o", "--output", help=help, **extra)


FORMAT_OPTION = click.option(
    "--format",
    "layout",
    type=FORMATS,
    default="auto",
    show_default=True,
    help="Record layout; auto detects it per record.",
)
MESSAGES_FIELD_OPTION = click.option(
    "--messages-field",
    default=None,
    metavar="PATH",
    help="Dotted path of the messages list in each record (other layouts).",
)
FIELD_OPTION = repeated_option(
    "--field",
    "field_paths",
    metavar="NAME=PATH",
    help="Read a sample field from a dotted path, e.g. "
    "reference_tool_calls=info.task.actions (repeatable).",
)


def price_option(
    help: str = "The judge model's price in USD per million tokens, input then output, for the "
    "cost estimate, e.g. gpt-4o-mini=0.15,0.60 (repeatable; wins over the built-in OpenAI "
    "prices).",
) -> Callable[[F], F]:
    """`--price MODEL=INPUT,OUTPUT`, repeatable, read by `parse_prices` (each command says
    whose prices they are)."""
    return repeated_option("--price", "prices", metavar="MODEL=INPUT,OUTPUT", help=help)


PRICE_OPTION = price_option()
TRIALS_OPTION = click.option(
    "--trials",
    default=None,
    metavar="TASK_FIELD[:SUCCESS]",
    help="pass^k and pass@k over repeated trials: records grouped by the metadata field "
    "TASK_FIELD; SUCCESS is a metric (at its threshold), METRIC>=X or a recorded field such as "
    "reward (true or >= 1), e.g. task_id:reward.",
)

#: Data file suffixes the default results name drops (`good.v2.jsonl` -> `good.v2`).
_DATA_SUFFIXES = (".jsonl", ".ndjson", ".json", ".csv", ".parquet")


def pairs(values: tuple[str, ...], option: str) -> dict[str, float]:
    """Parse repeated `METRIC=X` options into a dict."""
    out: dict[str, float] = {}
    for value in values:
        name, sep, number = value.partition("=")
        try:
            out[name.strip()] = float(number)
        except ValueError:
            sep = ""
        if not sep or not name.strip():
            raise click.BadParameter(f"expected METRIC=NUMBER, got {value!r}", param_hint=option)
    return out


def parse_prices(values: tuple[str, ...]) -> dict[str, tuple[float, float]] | None:
    """Parse repeated `--price MODEL=INPUT,OUTPUT` options (a usage error names the option)."""
    from convoeval.errors import UsageError
    from convoeval.judges.pricing import parse_price

    out: dict[str, tuple[float, float]] = {}
    for value in values:
        try:
            model, price = parse_price(value)
        except UsageError as exc:
            message = str(exc).removeprefix("--price: ")
            raise click.BadParameter(message, param_hint="--price") from None
        out[model] = price
    return out or None


def fields(values: tuple[str, ...]) -> dict[str, str] | None:
    """Parse repeated `--field NAME=PATH` options."""
    out: dict[str, str] = {}
    for value in values:
        name, sep, path = value.partition("=")
        if not sep or not name.strip() or not path.strip():
            raise click.BadParameter(f"expected NAME=PATH, got {value!r}", param_hint="--field")
        out[name.strip()] = path.strip()
    return out or None


#: The parameter names of the options that say how to read DATA (`reading_options`).
READING = ("layout", "messages_field", "field_paths", "limit", "skip_invalid", "reference_topics")


def reading_options(
    *,
    layout: str,
    messages_field: str | None,
    field_paths: tuple[str, ...],
    limit: int | None,
    skip_invalid: bool,
    reference_topics: tuple[str, ...],
) -> dict[str, Any]:
    """The `evaluate` keywords of the options that say how to read DATA (`run`, `batch export`:
    their command functions take these options as `**reading`)."""
    return {
        "format": layout,
        "messages_field": messages_field,
        "fields": fields(field_paths),
        "limit": limit,
        "skip_invalid": skip_invalid,
        "reference_topics": topics(reference_topics),
    }


def topics(values: tuple[str, ...]) -> list[str] | None:
    """`--reference-topics` values; `@FILE` reads one topic per non-empty line."""
    topics: list[str] = []
    for value in values:
        if value.startswith("@"):
            try:
                text = Path(value[1:]).read_text(encoding="utf-8")
            except OSError as exc:
                raise click.BadParameter(
                    f"cannot read {value[1:]}: {exc.strerror}", param_hint="--reference-topics"
                ) from exc
            topics.extend(line.strip() for line in text.splitlines() if line.strip())
        elif value.strip():
            topics.append(value.strip())
    return topics or None


class Greedy(click.Option):
    """An option that takes every following argument up to the next option (`--x a b c`)."""

    def add_to_parser(self, parser: Any, ctx: click.Context) -> None:
        super().add_to_parser(parser, ctx)
        for name in self.opts:
            option = parser._long_opt.get(name) or parser._short_opt.get(name)
            if option is None:
                continue
            original = option.process

            def process(value: Any, state: Any, original: Any = original) -> None:
                values = [value]
                while state.rargs and not state.rargs[0].startswith("-"):
                    values.append(state.rargs.pop(0))
                for item in values:
                    original(item, state)

            option.process = process


def default_output(data: Path) -> Path:
    """`./<data name without its data suffix>.results.jsonl`: `good.v2.jsonl.gz` ->
    `good.v2.results.jsonl`."""
    name = data.name.removesuffix(".gz")
    for suffix in _DATA_SUFFIXES:
        if name.lower().endswith(suffix):
            name = name[: -len(suffix)]
            break
    return Path(f"{name or 'data'}.results.jsonl")


REPEAT_OPTION = count_option(
    "--repeat",
    help="Score every record N times with fresh judge samples: per record the mean, spread and "
    "pass rate, per metric a bootstrap 95% interval (docs/repeats.md).",
)
GATE_OPTION = click.option(
    "--gate",
    "gate_spec",
    default="mean",
    show_default=True,
    metavar="mean|lower-bound|pass-rate=P",
    help="How --fail-under METRIC=X is met: the mean reaches X; the lower bound of its 95% "
    "interval does; or the mean of at least a share P of the repeats does.",
)


def gate_mode(spec: str) -> tuple[str, float | None]:
    """Parse `--gate`: `mean`, `lower-bound` or `pass-rate=P` into (mode, pass rate)."""
    from convoeval.errors import UsageError
    from convoeval.stats.repeats import parse_gate

    try:
        return parse_gate(spec)
    except UsageError as exc:
        raise click.BadParameter(str(exc), param_hint="--gate") from None


#: The options that build the judge of `run`: spec(s), endpoint, limits, sampling, cache.
_JUDGE_DECORATORS = [
    click.option(
        "--judge",
        multiple=True,
        default=["offline"],
        show_default=True,
        help="'offline' (embedded, no key) or 'openai/MODEL' (any OpenAI-compatible server; "
        "'openai/MODEL@URL' on its own server); repeat for a judge panel (majority vote, "
        "Fleiss' kappa between the judges).",
    ),
    click.option(
        "--base-url",
        multiple=True,
        callback=lambda ctx, param, values: once(values, "--base-url"),
        help="OpenAI-compatible server URL (or OPENAI_BASE_URL) of every --judge that names "
        "none (a member's own: --judge openai/MODEL@URL).",
    ),
    click.option(
        "--api-key",
        default=None,
        help="API key (or OPENAI_API_KEY); never written to a file or printed.",
    ),
    positive_option("--timeout", help="Seconds per judge request, counted from when it is sent."),
    positive_option("--retry-budget", help="Total seconds of retries per judge step."),
    flag_option(
        "--reason-first",
        help="Ask an LLM judge for each verdict's short rationale before the verdict.",
    ),
    count_option(
        "--judge-samples",
        help="Ask an LLM judge every step N times and take the majority (N requests per step).",
    ),
    count_option(
        "--concurrency",
        help="Concurrent judge requests per endpoint, shared by the judges on it "
        "(default: 16 per endpoint).",
    ),
    count_option("--max-concurrency", help="Alias of --concurrency (evaluate's max_concurrency=)."),
    flag_option("--no-cache", help="Do not use the judge answer cache."),
    flag_option(
        "--batch",
        help="Send the LLM judge's requests through the Batch API, one batch per round of "
        "steps: half the price, answers within 24 h; an interrupted run resumes its batches "
        "(docs/scale.md).",
    ),
]


def once(values: tuple[str, ...], option: str) -> str | None:
    """An option given at most once: a second one would silently replace the first."""
    if len(values) > 1:
        raise click.BadParameter(
            f"given {len(values)} times ({', '.join(values)}); give it once, and a panel "
            "member's own endpoint as --judge openai/MODEL@URL",
            param_hint=option,
        )
    return values[0] if values else None


def share_endpoint_limit(judge: Any, limit: int) -> None:
    """`--concurrency N`: the limit of each endpoint the judge (or each panel member) asks,
    shared by every judge there; judges on one server never add their limits up."""
    from convoeval.runner._plan import members

    for one in members(judge):
        endpoint, registry = getattr(one, "endpoint", None), getattr(one, "registry", None)
        if isinstance(endpoint, str) and registry is not None:
            registry.shared_limiter(endpoint).limit = limit


def JUDGE_OPTIONS(command: F) -> F:
    """Add the judge options to `command`, in the order `--help` lists them."""
    for decorator in reversed(_JUDGE_DECORATORS):
        command = decorator(command)
    return command


_ENGINE_DECORATORS = (
    click.option(
        "--engine",
        type=click.Choice(["local", "ray"]),
        default="local",
        show_default=True,
        help="Where records are scored: this process, or Ray workers (pip install "
        "'convoeval[ray]'); rows are written here in input order either way.",
    ),
    click.option(
        "--ray-address",
        default=None,
        metavar="ADDRESS",
        help="With --engine ray: the Ray cluster to use (HOST:PORT or ray://HOST:PORT); "
        "default: start a local runtime.",
    ),
    count_option(
        "--ray-workers",
        help="With --engine ray: workers (one CPU each; default: every CPU of the cluster).",
    ),
    count_option(
        "--ray-block-size",
        help="With --engine ray: records per block sent to a worker (default: 32, or 4 per "
        "request slot of a worker if more).",
    ),
)


def ENGINE_OPTIONS(command: F) -> F:
    """Add the engine options to `command`, in the order `--help` lists them."""
    for decorator in reversed(_ENGINE_DECORATORS):
        command = decorator(command)
    return command


def engine_options(
    engine: str, ray_address: str | None, ray_workers: int | None, ray_block_size: int | None
) -> dict[str, Any]:
    """The `evaluate` keywords of the engine options (the Ray ones only when given)."""
    given = {
        "ray_address": ray_address,
        "ray_workers": ray_workers,
        "ray_block_size": ray_block_size,
    }
    return {"engine": engine, **{k: v for k, v in given.items() if v is not None}}
