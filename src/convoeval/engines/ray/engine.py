"""The Ray engine (`engine="ray"`): the driver reads the records once and sends them to Ray
actors in blocks; the rows stream back as they finish and go through the local writer (input
order, resume, lock). The driver scores nothing and holds no state per judge request.

A worker scores a block with the local per-record scorer (engines/ray/worker.py) and its share of
every endpoint's limit, so the limits hold in total. A run of fewer records than the workers'
blocks hold is cut into one block per worker, so every worker and the whole limit are used. A
worker that dies is restarted by Ray and the records of its blocks whose rows had not come back
are sent again (none lost or doubled); the requests it sent for them, as its last report before
dying gave them, are added to their rows' usage. When Ray gives up on a worker its blocks go to the
others, and when none is left the run stops with a `RayWorkersLost` (every row before is
written; running again resumes).
"""

from __future__ import annotations

import asyncio
import importlib.util
import itertools
import logging
import os
import socket
import sys
import time
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from convoeval._version import VERSION
from convoeval.engines.ray.blocks import Pending, Scored
from convoeval.errors import ConvoevalError, UsageError
from convoeval.judges.protocol.base import Usage
from convoeval.metrics import Metric
from convoeval.rows.row import ResultRow, usage_entry, usage_of
from convoeval.runner._plan import JudgePlan
from convoeval.runner._schedule import Job

#: Records per block (a block is one Ray task); with an LLM judge, at least 4 per request slot;
#: fewer when the run has fewer records than one such block per worker.
DEFAULT_BLOCK = 32
#: Blocks in flight or waiting to be written, per worker (one scoring while the next arrives).
BLOCKS_PER_WORKER = 2
#: How many times Ray restarts a dead worker (its blocks sent again) before giving up on it.
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
        self.load = [0] * len(actors)  # records sent to each worker and not yet back
        self.alive = set(range(len(actors)))
        self.attempts = itertools.count()
        self.tasks: set[asyncio.Future[None]] = set()
        #: Seconds spent connecting to Ray and starting the workers (the run summary's start-up).
        self.startup_s = 0.0

    @classmethod
    async def start(
        cls,
        metrics: Sequence[Metric],
        plan: JudgePlan,
        options: Mapping[str, Any],
        records: int | None = None,
    ) -> RayEngine:
        """Connect to Ray and start the workers, each with its share of every limit; blocks
        are cut so that `records` (the records to score) reach every worker."""
        from convoeval.engines.ray.worker import Worker, recipe, shares

        began = time.perf_counter()
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
            if records:  # a small run: one block per worker, not all on the first one
                block = max(1, min(block, -(-records // workers)))
            remote = ray.remote(Worker).options(
                num_cpus=1, max_restarts=RESTARTS, max_task_retries=0
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
            try:
                await engine._ready()
            except BaseException:
                await engine.close()
                raise
        except BaseException:
            if started:
                ray.shutdown()
            raise
        engine.startup_s = time.perf_counter() - began
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

    def describe(self) -> dict[str, Any]:
        """The engine as the run's sidecar names it: the cluster's address, workers, block size,
        start-up seconds."""
        return {
            "name": "ray",
            "address": str(self.ray.get_runtime_context().gcs_address),
            "workers": len(self.actors),
            "block": self.block,
            "startup_s": round(self.startup_s, 3),
        }

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
        loop = asyncio.get_running_loop()
        rows: list[asyncio.Future[ResultRow]] = [loop.create_future() for _ in block]
        if block:
            task = asyncio.ensure_future(self._score(block, rows))
            self.tasks.add(task)
            task.add_done_callback(self._forget)
        waiting = iter(rows)
        for job in held:
            yield next(waiting) if isinstance(job, Pending) else job

    def _forget(self, task: asyncio.Future[None]) -> None:
        """Drop a finished block; its error reaches the rows awaiting it, and is not logged
        as never retrieved when the run stopped before them."""
        self.tasks.discard(task)
        if not task.cancelled():
            task.exception()

    async def _score(self, block: list[Pending], rows: list[asyncio.Future[ResultRow]]) -> None:
        """Score a block on the least busy worker, its rows delivered as they come; if that
        worker dies, the records whose rows did not come back go again (to it once Ray has
        restarted it, else to another), their requests so far added to their rows' usage."""
        try:
            await self._score_on_workers(block, rows)
        except BaseException as exc:
            for row in rows:
                if not row.done():
                    row.set_exception(exc)
                    row.exception()  # raised where awaited; never logged as unretrieved
            raise

    async def _score_on_workers(
        self, block: list[Pending], rows: list[asyncio.Future[ResultRow]]
    ) -> None:
        errors = self.ray.exceptions
        left = list(range(len(block)))
        spent: dict[int, int] = {}  # requests sent by dead workers, per position
        lost: Exception | None = None
        while self.alive:
            running: dict[int, int] = {}  # the worker's last report: requests per record running
            chosen = min(self.alive, key=lambda i: self.load[i])
            attempt = next(self.attempts)
            self.load[chosen] += len(left)
            try:
                stream = self.actors[chosen].score_block.remote(
                    attempt, [(p, block[p]) for p in left]
                )
                async for ref in stream:
                    scored: Scored = await ref
                    finished, running = scored
                    for position, row in finished:
                        self.load[chosen] -= 1
                        rows[position].set_result(_with_spent(row, spent.pop(position, 0)))
                return
            except errors.RayActorError as exc:
                lost = exc
                left = [p for p in left if not rows[p].done()]
                for position, count in running.items():
                    spent[position] = spent.get(position, 0) + count
                if not await self._restarted(chosen):
                    self.alive.discard(chosen)
            except errors.RayTaskError as exc:  # raise_exceptions: the metric's own error
                cause = exc.cause
                raise (cause if isinstance(cause, BaseException) else exc) from None
            finally:
                self.load[chosen] -= sum(1 for p in left if not rows[p].done())
        first, last = block[left[0]].item.where, block[left[-1]].item.where
        why = (str(lost).strip().splitlines() or [type(lost).__name__])[0]  # Ray's is long
        raise RayWorkersLost(
            f"every Ray worker died ({RESTARTS} restarts each); the last scoring {first} to "
            f"{last}: {why} Every row before them is written: run again to resume"
        )

    async def _restarted(self, index: int) -> bool:
        """Whether Ray brought worker `index` back after it died (False: it gave up on it). A
        restarted worker may die again before it answers: asked once per restart Ray may make.
        A call Ray refuses while the worker is coming back (`ActorUnavailableError`, quicker
        than a restart on a busy machine) is asked again and is not counted as a restart."""
        exceptions = self.ray.exceptions
        deadline = asyncio.get_running_loop().time() + START_TIMEOUT
        deaths = 0
        while deaths <= RESTARTS:
            left = deadline - asyncio.get_running_loop().time()
            try:
                await asyncio.wait_for(self.actors[index].ready.remote(), max(left, 0.0))
            except exceptions.ActorUnavailableError:
                await asyncio.sleep(0.05)
            except exceptions.RayActorError:
                deaths += 1
            except TimeoutError:
                return False
            else:
                return True
        return False

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


def _with_spent(row: ResultRow, requests: int) -> ResultRow:
    """`row` with `requests` more in its usage: those its record cost on a worker that died."""
    if requests:
        usage = usage_of(row.get("usage"))
        usage.add(Usage(requests=requests))
        row["usage"] = usage_entry(usage)
    return row
