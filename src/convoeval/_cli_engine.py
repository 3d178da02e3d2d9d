"""The `convoeval run` options that choose where records are scored: locally, or on Ray workers
(`--engine ray`, a local runtime or an existing cluster with `--ray-address`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, TypeVar

import click

F = TypeVar("F", bound=Callable[..., Any])

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
    click.option(
        "--ray-workers",
        type=click.IntRange(min=1),
        default=None,
        metavar="N",
        help="With --engine ray: workers (one CPU each; default: every CPU of the cluster).",
    ),
    click.option(
        "--ray-block-size",
        type=click.IntRange(min=1),
        default=None,
        metavar="N",
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
