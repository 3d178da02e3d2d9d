"""Progress of a run: a rich bar on a terminal or in a notebook, plain lines otherwise, or nothing.

Plain lines (for CI logs and pipes) come every 10% of the records or every few seconds,
whichever is first, so a long run shows it is alive without flooding the log.
"""

from __future__ import annotations

import sys
import time
from typing import IO, Protocol

#: Seconds between plain progress lines at most.
PLAIN_INTERVAL_S = 5.0


class Progress(Protocol):
    """What the runner calls while it works."""

    def start(self, total: int, done: int) -> None:
        """The run begins: `total` records, `done` of them already finished (resume)."""

    def advance(self) -> None:
        """One more record written."""

    def close(self) -> None:
        """The run ended (normally or not)."""


class NoProgress:
    """Shows nothing."""

    def start(self, total: int, done: int) -> None:
        """Nothing to show."""

    def advance(self) -> None:
        """Nothing to show."""

    def close(self) -> None:
        """Nothing to show."""


class PlainProgress:
    """One line per 10% of records or per few seconds: `scored 120/1000 records (12%), 8.1/s`."""

    def __init__(self, stream: IO[str], interval_s: float = PLAIN_INTERVAL_S) -> None:
        self.stream = stream
        self.interval_s = interval_s
        self.total = 0
        self.count = 0
        self._base = 0
        self._started = 0.0
        self._last_time = 0.0
        self._last_count = 0

    def start(self, total: int, done: int) -> None:
        """Print what the run will do."""
        self.total, self.count, self._base = total, done, done
        self._started = self._last_time = time.monotonic()
        self._last_count = done
        resumed = f", {done} already done (resumed)" if done else ""
        self._line(f"scoring {total - done} of {total} {_records(total)}{resumed}")

    def advance(self) -> None:
        """Count a record; print a line when 10% more are done or some seconds have passed."""
        self.count += 1
        now = time.monotonic()
        step = max(1, -(-self.total // 10))  # a tenth, rounded up
        if (
            self.count - self._last_count >= step
            or now - self._last_time >= self.interval_s
            or self.count == self.total
        ):
            self._report(now)

    def _report(self, now: float) -> None:
        self._last_time, self._last_count = now, self.count
        elapsed = max(now - self._started, 1e-9)
        rate = (self.count - self._base) / elapsed
        share = 100.0 * self.count / self.total if self.total else 100.0
        self._line(
            f"scored {self.count}/{self.total} {_records(self.total)} ({share:.0f}%), {rate:.1f}/s"
        )

    def close(self) -> None:
        """Print the final count unless the last line already did."""
        if self.count != self._last_count:
            self._report(time.monotonic())

    def _line(self, text: str) -> None:
        self.stream.write(f"convoeval: {text}\n")
        self.stream.flush()


def _records(count: int) -> str:
    return "record" if count == 1 else "records"


class RichProgress:
    """A rich progress bar on a terminal (stderr)."""

    def __init__(self) -> None:
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            TextColumn,
            TimeElapsedColumn,
            TimeRemainingColumn,
        )
        from rich.progress import Progress as Bar

        self._bar = Bar(
            TextColumn("scoring"),
            BarColumn(),
            MofNCompleteColumn(),
            TimeElapsedColumn(),
            TimeRemainingColumn(),
            console=Console(stderr=True),
            transient=False,
        )
        self._task = self._bar.add_task("records", total=None)

    def start(self, total: int, done: int) -> None:
        """Show the bar at `done` of `total`."""
        self._bar.update(self._task, total=total, completed=done)
        self._bar.start()

    def advance(self) -> None:
        """One more record."""
        self._bar.advance(self._task)

    def close(self) -> None:
        """Stop drawing."""
        self._bar.stop()


def make_progress(show: bool, stream: IO[str] | None = None) -> Progress:
    """A rich bar when stderr is a terminal or in a Jupyter notebook, plain lines otherwise,
    nothing when not `show`."""
    if not show:
        return NoProgress()
    out = stream if stream is not None else sys.stderr
    if stream is None and (out.isatty() or _in_notebook()):
        return RichProgress()
    return PlainProgress(out)


def _in_notebook() -> bool:
    """Whether this runs in a Jupyter kernel (rich then draws its bar as a widget)."""
    from rich.console import Console

    return Console().is_jupyter
