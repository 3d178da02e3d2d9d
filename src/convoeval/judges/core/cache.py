"""A persistent SQLite cache of validated judge answers, so a repeated run sends no requests.

Keys are SHA-256 digests of everything that determines an answer (endpoint, model, step name and
version, rendered prompts, output schema, sampling settings); API keys are never part of a key or
a value. The database uses WAL, a busy timeout and one short transaction per write, so several
processes and many asyncio tasks can share it. Each cache object works through one connection on
one thread of its own (opened once, not per call), so its reads and writes never queue on the
event loop nor contend with each other for SQLite's write lock.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import hashlib
import json
import os
import sqlite3
import threading
import time
from collections.abc import Callable, Mapping
from pathlib import Path
from typing import Any, TypeVar

from platformdirs import user_cache_dir

CACHE_DIR_ENV = "CONVOEVAL_CACHE_DIR"
_FILE_NAME = "judge-cache.sqlite3"
_BUSY_TIMEOUT_MS = 30_000
_T = TypeVar("_T")
_SCHEMA = """
CREATE TABLE IF NOT EXISTS answers (
    key TEXT PRIMARY KEY,
    value TEXT NOT NULL,
    step TEXT NOT NULL,
    model TEXT NOT NULL,
    created REAL NOT NULL
)
"""


def default_cache_dir() -> Path:
    """`CONVOEVAL_CACHE_DIR` if set, else the user cache directory of convoeval."""
    override = os.environ.get(CACHE_DIR_ENV)
    return Path(override) if override else Path(user_cache_dir("convoeval"))


def cache_key(
    *,
    endpoint: str,
    model: str,
    step: str,
    version: int,
    system: str,
    user: str,
    schema: Mapping[str, Any],
    sampling: Mapping[str, Any],
) -> str:
    """The SHA-256 key of one judge question (canonical JSON of every part that shapes it)."""
    parts = {
        "endpoint": endpoint,
        "model": model,
        "step": step,
        "version": version,
        "system": system,
        "user": user,
        "schema": schema,
        "sampling": dict(sampling),
    }
    canonical = json.dumps(parts, sort_keys=True, ensure_ascii=False, separators=(",", ":"))
    return hashlib.sha256(canonical.encode("utf-8")).hexdigest()


class JudgeCache:
    """Validated judge answers stored by key in one SQLite file (WAL, safe for many writers).

    Every call runs on the cache's own thread, through one connection kept open (so `aget` and
    `aput` never block the event loop, and no call pays for opening the database). `close()`
    releases both; a forked or unpickled copy opens its own.
    """

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path) if path is not None else default_cache_dir() / _FILE_NAME
        self._fresh()

    def _fresh(self) -> None:
        """No connection and no thread yet (a new, unpickled or forked cache)."""
        self._ready = False
        self._conn: sqlite3.Connection | None = None
        self._worker: concurrent.futures.ThreadPoolExecutor | None = None
        self._lock = threading.Lock()
        self._pid = os.getpid()

    def __getstate__(self) -> dict[str, Any]:
        return {"path": self.path}

    def __setstate__(self, state: dict[str, Any]) -> None:
        self.path = state["path"]
        self._fresh()

    def _call(self, work: Callable[[sqlite3.Connection], _T]) -> concurrent.futures.Future[_T]:
        """Run `work` with the connection on the cache's thread."""
        if self._pid != os.getpid():  # a forked child never uses its parent's thread or handle
            self._fresh()
        with self._lock:
            if self._worker is None:
                self._worker = concurrent.futures.ThreadPoolExecutor(1, "convoeval-cache")
            return self._worker.submit(self._with_connection, work)

    def _with_connection(self, work: Callable[[sqlite3.Connection], _T]) -> _T:
        if self._conn is None:
            self._conn = self._connect()
        return work(self._conn)

    def _connect(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        # Used by the cache's one thread only, but closed from whichever thread calls close().
        conn = sqlite3.connect(
            self.path,
            timeout=_BUSY_TIMEOUT_MS / 1000,
            isolation_level=None,
            check_same_thread=False,
        )
        try:
            conn.execute(f"PRAGMA busy_timeout={_BUSY_TIMEOUT_MS}")
            if not self._ready:
                self._initialise(conn)
            conn.execute("PRAGMA synchronous=NORMAL")
        except BaseException:
            conn.close()
            raise
        return conn

    def _initialise(self, conn: sqlite3.Connection) -> None:
        # Switching to WAL can report "locked" without waiting when another process is doing the
        # same at that instant; a few short retries settle it.
        for attempt in range(50):
            try:
                conn.execute("PRAGMA journal_mode=WAL")
                conn.execute(_SCHEMA)
                break
            except sqlite3.OperationalError as exc:
                if "locked" not in str(exc) or attempt == 49:
                    raise
                time.sleep(0.05)
        self._ready = True

    def get(self, key: str) -> str | None:
        """The stored answer (JSON text) for `key`, or None."""
        return self._call(lambda conn: _get(conn, key)).result()

    def put(self, key: str, value: str, *, step: str = "", model: str = "") -> None:
        """Store a validated answer (JSON text) under `key`, replacing any earlier one."""
        self._call(lambda conn: _put(conn, key, value, step, model)).result()

    def __len__(self) -> int:
        return self._call(_count).result()

    def clear(self) -> None:
        """Delete every stored answer."""
        self._call(_clear).result()

    async def aget(self, key: str) -> str | None:
        """`get` off the event loop (a busy database never blocks other tasks)."""
        return await asyncio.wrap_future(self._call(lambda conn: _get(conn, key)))

    async def aput(self, key: str, value: str, *, step: str = "", model: str = "") -> None:
        """`put` off the event loop."""
        await asyncio.wrap_future(self._call(lambda conn: _put(conn, key, value, step, model)))

    def close(self) -> None:
        """Close the connection and stop the cache's thread (a later call opens them again)."""
        with self._lock:
            worker, self._worker = self._worker, None
        if worker is not None:
            worker.shutdown(wait=True)
        conn, self._conn = self._conn, None
        if conn is not None:
            conn.close()

    def __repr__(self) -> str:
        return f"JudgeCache({str(self.path)!r})"


def _get(conn: sqlite3.Connection, key: str) -> str | None:
    # fetchall() ends the statement, so no read transaction stays open between calls.
    rows = conn.execute("SELECT value FROM answers WHERE key = ?", (key,)).fetchall()
    return str(rows[0][0]) if rows else None


def _put(conn: sqlite3.Connection, key: str, value: str, step: str, model: str) -> None:
    with conn:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute(
            "INSERT OR REPLACE INTO answers (key, value, step, model, created) "
            "VALUES (?, ?, ?, ?, ?)",
            (key, value, step, model, time.time()),
        )


def _count(conn: sqlite3.Connection) -> int:
    (count,) = conn.execute("SELECT COUNT(*) FROM answers").fetchall()[0]
    return int(count)


def _clear(conn: sqlite3.Connection) -> None:
    with conn:
        conn.execute("BEGIN IMMEDIATE")
        conn.execute("DELETE FROM answers")
