"""How requests form rounds: the open batch, and the rule that decides when it is complete.

The runner keeps a window of records in flight, each awaiting its current step. A step enters
(`enter`) when the judge starts answering it and leaves when it has its answer; a request it
sends waits in the open batch. The open batch is sent (flushed) when

- every step in progress is waiting on a batch (open or already sent) and has stayed so for
  `settle` seconds: no record can add anything more to this round; or
- no request has joined for `quiet` seconds (a step busy elsewhere never holds the round); or
- it holds `max_requests` requests (the provider's limit per batch).

So a run of N records in one window makes one batch per round of steps, not one per record.
Identical requests (one custom_id) share one line. Sending, polling and reading a batch is the
transport's job (`submit`); each waiting request gets its line's outcome.
"""

from __future__ import annotations

import asyncio
import contextlib
from collections.abc import Awaitable, Callable
from dataclasses import dataclass, field
from typing import Any

from convoeval.judges.core.backend import BackendFailure, Failure
from convoeval.judges.openai._batch_lines import Outcome


@dataclass
class Line:
    """One request of a batch, the body sent and the future its waiting steps share."""

    cid: str
    body: dict[str, Any]
    mode: str
    future: asyncio.Future[Outcome]
    waiters: int = 0


#: Sends one batch of lines (by custom_id) and returns each line's outcome.
Submit = Callable[[dict[str, Line]], Awaitable[dict[str, Outcome]]]


@dataclass
class Rounds:
    """The open batch of one event loop and the flush rule (module docstring)."""

    submit: Submit
    settle: float
    quiet: float
    max_requests: int
    active: int = 0
    waiting: int = 0
    open: dict[str, Line] = field(default_factory=dict)
    flying: dict[str, Line] = field(default_factory=dict)
    _settle: asyncio.TimerHandle | None = None
    _quiet: asyncio.TimerHandle | None = None
    _tasks: set[asyncio.Task[None]] = field(default_factory=set)

    def enter(self) -> None:
        """A step started."""
        self.active += 1
        self._changed()

    def leave(self) -> None:
        """A step ended."""
        self.active -= 1
        self._changed()

    async def wait(self, cid: str, body: dict[str, Any], mode: str) -> Outcome:
        """Add the request to the open batch (or join the same line already there or in
        flight) and wait for its outcome."""
        line = self.open.get(cid) or self.flying.get(cid)
        if line is None:
            future = asyncio.get_running_loop().create_future()
            line = self.open[cid] = Line(cid, body, mode, future)
            self._restart_quiet()
        line.waiters += 1
        self.waiting += 1
        self._changed()
        try:
            return await asyncio.shield(line.future)
        except asyncio.CancelledError:
            if not line.future.done():
                line.waiters -= 1
                self.waiting -= 1
                if line.waiters == 0 and self.open.get(cid) is line:
                    del self.open[cid]
                self._changed()
            raise

    def flush(self) -> None:
        """Send the open batch now (a task per batch; several may be in flight)."""
        self._cancel_timers()
        if not self.open:
            return
        lines, self.open = self.open, {}
        self.flying.update(lines)
        task = asyncio.get_running_loop().create_task(self._send(lines))
        self._tasks.add(task)
        task.add_done_callback(self._tasks.discard)

    async def _send(self, lines: dict[str, Line]) -> None:
        try:
            outcomes = await self.submit(lines)
        except asyncio.CancelledError:
            for line in lines.values():
                self._settled(line)
                line.future.cancel()
            raise
        except Exception as exc:  # a bug in a transport must not hang the steps
            failure = BackendFailure(Failure.FATAL, f"the batch could not be sent: {exc!r}")
            outcomes = dict.fromkeys(lines, failure)
        for cid, line in lines.items():
            found = outcomes.get(cid)
            if found is None:
                found = BackendFailure(
                    Failure.RETRYABLE, "no line came back for this request in the batch's files"
                )
            self._settled(line)
            if not line.future.done():
                line.future.set_result(found)
        self._changed()

    def _settled(self, line: Line) -> None:
        if self.flying.get(line.cid) is line:
            del self.flying[line.cid]
        if not line.future.done():
            self.waiting -= line.waiters

    def _changed(self) -> None:
        if not self.open:
            self._cancel_timers()
            return
        if len(self.open) >= self.max_requests:
            self.flush()
            return
        if self.waiting >= self.active:
            if self._settle is None:
                self._settle = asyncio.get_running_loop().call_later(self.settle, self._settled_now)
        elif self._settle is not None:
            self._settle.cancel()
            self._settle = None

    def _settled_now(self) -> None:
        self._settle = None
        if self.open and self.waiting >= self.active:
            self.flush()

    def _restart_quiet(self) -> None:
        if self._quiet is not None:
            self._quiet.cancel()
        self._quiet = asyncio.get_running_loop().call_later(self.quiet, self.flush)

    def _cancel_timers(self) -> None:
        for handle in (self._settle, self._quiet):
            if handle is not None:
                handle.cancel()
        self._settle = self._quiet = None

    async def aclose(self) -> None:
        """Cancel batches still being polled (they stay on the server; a rerun resumes them)."""
        self._cancel_timers()
        tasks = list(self._tasks)
        for task in tasks:
            task.cancel()
        for task in tasks:
            with contextlib.suppress(asyncio.CancelledError):
                await task
