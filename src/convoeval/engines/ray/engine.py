"""The Ray engine (`engine="ray"`): the driver reads the records once and sends them to Ray
actors in blocks; the rows come back and go through the local writer (input order, resume, lock).

A worker scores a block with the local per-record scorer (engines/ray/worker.py) and its share of
every endpoint's limit, so the limits hold in total. A worker that dies is restarted by Ray and
its block is run again there (its rows were not written yet, so none is lost or doubled); when
Ray gives up on a worker its blocks go to the others, and when none is left the run stops with a
`RayEngineError` (every row before is written; running again resumes).
"""

from __future__ import annotations

import asyncio
import importlib.util
import logging
import os
import socket
import sys
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from convoeval._version import VERSION
from convoeval.engines.ray.blocks import Pending
from convoeval.errors import ConvoevalError, UsageError
from convoeval.metrics import Metric
from convoeval.rows.row import ResultRow
from convoeval.runner._plan import JudgePlan
from convoeval.runner._schedule import Job

#: Records per block (a block is one Ray task); with an LLM judge, at least 4 per request slot.
DEFAULT_BLOCK = 32
#: Blocks in flight or waiting to be written, per worker (one scoring while the next arrives).
BLOCKS_PER_WORKER = 2
#: How many times Ray restarts a dead worker (and runs its blocks again) before giving up on it.
RESTARTS = 3
#: Seconds the workers have to start (a cluster without free CPUs would wait forever).
START_TIMEOUT = 300.0
#: Seconds to wait for a TCP connection to the cluster's address before giving up.
CONNECT_TIMEOUT = 10.0
#: The options that belong to this engine (refused with the local one).
OPTIONS = ("ray_address", "ray_workers", "ray_block_size")


class RayEngineError(ConvoevalError, RuntimeError):
    """The Ray engine cannot start or lost every worker (the rows written so far are kept)."""


class RayWorkersLost(RayEngineError):
    """Every worker died mid-run: the run stopped as if interrupted (rows written are kept)."""


def check_options(options: Mapping[str, Any]) -> None:
    """The Ray options checked before anything is read (`engine='ray'` was asked)."""
    if options.get("ray_address") is not None:
        _host_port(str(options["ray_address"]))
    for key in ("ray_workers", "ray_block_size"):
        value = options.get(key)
        if value is not None and (
            isinstance(value, bool) or not isinstance(value, int) or value < 1
        ):
            raise UsageError(f"{key} must be a whole number of at least 1, not {value!r}")
    if importlib.util.find_spec("ray") is None:
        raise RayEngineError(
            "engine='ray' needs Ray, which is not installed: pip install 'convoeval[ray]'"
        )


def _connect(address: str | None) -> tuple[Any, bool]:
    """The `ray` module, connected to `address` (else `RAY_ADDRESS`, else a local runtime
    started for this run); True if this run started it."""
    os.environ.setdefault("RAY_USAGE_STATS_ENABLED", "0")  # no telemetry
    target = address or os.environ.get("RAY_ADDRESS") or "local"
    if target == "local" and "ray" not in sys.modules:
        # A local runtime is a single machine: Ray then binds to 127.0.0.1, not the network.
        os.environ.setdefault("RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER", "0")
    import ray

    if ray.is_initialized():
        return ray, False
    if target != "local":
        _check_reachable(target)
    try:
        ray.init(
            address=target,
            include_dashboard=False if target == "local" else None,
            log_to_driver=False,
            # A runtime of our own needs no notices (Ray 2.60 announces its token auth at start).
            logging_level=logging.ERROR if target == "local" else logging.WARNING,
        )
    except Exception as exc:  # ConnectionError, a bad address, a version mismatch
        where = "a local Ray runtime" if target == "local" else f"the Ray cluster at {target}"
        raise RayEngineError(f"could not start or reach {where}: {exc}") from exc
    return ray, True


def _host_port(address: str) -> tuple[str, int]:
    """HOST and PORT of `HOST:PORT` or `ray://HOST:PORT`; a `UsageError` for anything else."""
    host, _, port = address.rpartition("://")[2].rpartition(":")
    if not host or not port.isdigit():
        raise UsageError(f"the Ray address must be HOST:PORT or ray://HOST:PORT, not {address!r}")
    return host.strip("[]"), int(port)


def _check_reachable(address: str) -> None:
    """Fail at once, naming the address, when nothing listens there (Ray itself would retry
    for minutes)."""
    try:
        socket.create_connection(_host_port(address), timeout=CONNECT_TIMEOUT).close()
    except OSError as exc:
        raise RayEngineError(f"cannot reach the Ray cluster at {address}: {exc}") from None


class RayEngine:
    """Ray actors scoring blocks of records for one run; `blocks` turns the run's jobs into
    per-record jobs that the local writer awaits in input order."""

    def __init__(self, ray: Any, actors: list[Any], block: int, started: bool) -> None:
        self.ray = ray
        self.actors = actors
        self.block = block
        self.started = started
        self.load = [0] * len(actors)
        self.alive = set(range(len(actors)))
        self.tasks: set[asyncio.Future[list[ResultRow]]] = set()

    @classmethod
    async def start(
        cls, metrics: Sequence[Metric], plan: JudgePlan, options: Mapping[str, Any]
    ) -> RayEngine:
        """Connect to Ray and start the workers, each with its share of every limit."""
        from convoeval.engines.ray.worker import Worker, recipe, shares

        limits: dict[str, int] = {}
        main = recipe(plan.main, limits)
        ray, started = _connect(options.get("ray_address"))
        try:
            cpus = int(ray.cluster_resources().get("CPU", 0))
            workers = options.get("ray_workers") or max(1, cpus)
            if workers > cpus:
                raise RayEngineError(
                    f"{workers} Ray workers asked, but the cluster has {cpus} CPUs (one each)"
                )
            workers = min([workers, *limits.values()])  # every worker needs a request slot
            block = options.get("ray_block_size") or max(
                [DEFAULT_BLOCK, *(4 * limit // workers for limit in limits.values())]
            )
            remote = ray.remote(Worker).options(
                num_cpus=1, max_restarts=RESTARTS, max_task_retries=RESTARTS
            )
            uses_main = [j is not None and j is plan.main for j in plan.per_metric]
            repeat = options.get("repeat") or 1
            raising = bool(options.get("raise_exceptions", False))
            try:
                actors = [
                    remote.remote(list(metrics), main, uses_main, share, repeat, raising)
                    for share in shares(limits, workers)
                ]
            except Exception as exc:  # pickling: a judge object or metric holding a lock
                why = (str(exc).strip().splitlines() or [type(exc).__name__])[0]
                raise RayEngineError(
                    f"the run's metrics and judge cannot be sent to Ray workers ({why}); give "
                    "the judge as a spec ('offline', 'openai/MODEL'), an OpenAIJudge or a panel "
                    "of them"
                ) from exc
            engine = cls(ray, actors, block, started)
            await engine._ready()
        except BaseException:
            if started:
                ray.shutdown()
            raise
        return engine

    async def _ready(self) -> None:
        try:
            answers = await asyncio.wait_for(
                asyncio.gather(*(actor.ready.remote() for actor in self.actors)), START_TIMEOUT
            )
        except TimeoutError:
            raise RayEngineError(
                f"the Ray workers did not start within {START_TIMEOUT:g} s (no free CPUs?)"
            ) from None
        except Exception as exc:  # a worker that cannot import convoeval or unpickle a metric
            raise RayEngineError(f"a Ray worker could not start: {exc}") from exc
        versions = sorted({version for version, _ in answers} - {VERSION})
        if versions:
            raise RayEngineError(
                f"the Ray workers run convoeval {', '.join(versions)}, this driver {VERSION}: "
                "install the same version on every node"
            )

    @property
    def window(self) -> int:
        """Records in flight or waiting to be written."""
        return len(self.actors) * BLOCKS_PER_WORKER * self.block

    def blocks(self, jobs: Iterator[ResultRow | Pending]) -> Iterator[Job]:
        """The run's jobs, each record to score sent to a worker with the next ones (a block);
        rows kept from an earlier run pass through in their place."""
        held: list[ResultRow | Pending] = []
        count = 0
        for job in jobs:
            held.append(job)
            count += isinstance(job, Pending)
            if count >= self.block or len(held) >= 4 * self.block:
                yield from self._send(held)
                held, count = [], 0
        yield from self._send(held)

    def _send(self, held: list[ResultRow | Pending]) -> Iterator[Job]:
        block = [job for job in held if isinstance(job, Pending)]
        task = asyncio.ensure_future(self._score(block)) if block else None
        if task is not None:
            self.tasks.add(task)
            task.add_done_callback(self._forget)
        position = 0
        for job in held:
            if isinstance(job, Pending):
                assert task is not None
                yield _pick(task, position)
                position += 1
            else:
                yield job

    def _forget(self, task: asyncio.Future[list[ResultRow]]) -> None:
        """Drop a finished block; its error reaches the rows awaiting it, and is not logged
        as never retrieved when the run stopped before them."""
        self.tasks.discard(task)
        if not task.cancelled():
            task.exception()

    async def _score(self, block: list[Pending]) -> list[ResultRow]:
        """Score a block on the least busy worker; if Ray gives up on that worker, on another."""
        errors = self.ray.exceptions
        lost: Exception | None = None
        while self.alive:
            chosen = min(self.alive, key=lambda i: self.load[i])
            self.load[chosen] += 1
            try:
                rows: list[ResultRow] = await self.actors[chosen].score_block.remote(block)
                return rows
            except errors.RayActorError as exc:
                self.alive.discard(chosen)
                lost = exc
            except errors.RayTaskError as exc:  # raise_exceptions: the metric's own error
                cause = exc.cause
                raise (cause if isinstance(cause, BaseException) else exc) from None
            finally:
                self.load[chosen] -= 1
        first, last = block[0].item.where, block[-1].item.where
        why = (str(lost).strip().splitlines() or [type(lost).__name__])[0]  # Ray's is long
        raise RayWorkersLost(
            f"every Ray worker died ({RESTARTS} restarts each); the last scoring {first} to "
            f"{last}: {why} Every row before them is written: run again to resume"
        )

    async def close(self) -> None:
        """Stop the workers (and the local runtime if this run started it)."""
        tasks = list(self.tasks)
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        for actor in self.actors:
            self.ray.kill(actor)
        if self.started:
            self.ray.shutdown()


async def _pick(task: asyncio.Future[list[ResultRow]], position: int) -> ResultRow:
    return (await task)[position]
