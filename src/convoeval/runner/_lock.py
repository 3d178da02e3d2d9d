"""Output safety for a run: every output path is checked writable before any judge call, and the
results file is locked for the whole run so that two runs can never write into one file.
"""

from __future__ import annotations

import fcntl
import os
import tempfile
from pathlib import Path
from types import TracebackType

from convoeval.rows.row import ResultsFileError


def check_writable(path: Path, what: str) -> None:
    """Raise `ResultsFileError` unless `path` can be written (created or appended to).

    Creates missing parent directories. Tries for real (a probe file, an append open) instead of
    trusting permission bits, which say nothing for root or on read-only mounts.
    """
    problem = _write_problem(path)
    if problem is not None:
        raise ResultsFileError(f"cannot write the {what} {path}: {problem}")


def _write_problem(path: Path) -> str | None:
    if path.is_dir():
        return "it is a directory"
    ancestor = path.parent
    while not ancestor.exists() and ancestor != ancestor.parent:
        ancestor = ancestor.parent
    if not ancestor.is_dir():
        return f"{ancestor} is a file, not a directory"
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        # The directory too: the sidecar, the lock and a retry are written next to the file.
        with tempfile.TemporaryFile(dir=path.parent):
            pass
        if path.exists():
            with open(path, "ab"):
                pass
    except OSError as exc:
        return exc.strerror or str(exc)
    return None


class RunLock:
    """An exclusive lock on a results file (and its sidecar) for one run: `<results>.lock`.

    The lock file holds the owner's PID; a second run fails at once naming it. The lock is
    `flock`-based, so a killed run releases it with its process.
    """

    def __init__(self, results: Path) -> None:
        self.results = results
        self.path = Path(f"{results}.lock")
        self._fd: int | None = None

    def __enter__(self) -> RunLock:
        while True:
            fd = os.open(self.path, os.O_RDWR | os.O_CREAT, 0o644)
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
            except BlockingIOError:
                owner = os.pread(fd, 32, 0).decode("ascii", "replace").strip() or "unknown"
                os.close(fd)
                raise ResultsFileError(
                    f"{self.results} is being written by another convoeval run (PID {owner}); "
                    "wait for it to end or choose another output file with -o"
                ) from None
            if self._same_file(fd):
                break
            os.close(fd)  # the previous owner removed the file between our open and our lock
        os.ftruncate(fd, 0)
        os.pwrite(fd, f"{os.getpid()}\n".encode("ascii"), 0)
        self._fd = fd
        return self

    def _same_file(self, fd: int) -> bool:
        try:
            return os.stat(self.path).st_ino == os.fstat(fd).st_ino
        except FileNotFoundError:
            return False

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        trace: TracebackType | None,
    ) -> None:
        if self._fd is not None:
            self.path.unlink(missing_ok=True)  # while still locked: no one can hold a stale file
            os.close(self._fd)
            self._fd = None
