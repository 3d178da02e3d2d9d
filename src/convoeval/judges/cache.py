"""A persistent SQLite cache of validated judge answers, so a repeated run sends no requests.

Keys are SHA-256 digests of everything that determines an answer (endpoint, model, step name and
version, rendered prompts, output schema, sampling settings); API keys are never part of a key or
a value. The database uses WAL, a busy timeout and one short transaction per write, so several
processes and many asyncio tasks can share it.
"""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import sqlite3
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from platformdirs import user_cache_dir

CACHE_DIR_ENV = "CONVOEVAL_CACHE_DIR"
_FILE_NAME = "judge-cache.sqlite3"
_BUSY_TIMEOUT_MS = 30_000
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
    """Validated judge answers stored by key in one SQLite file (WAL, safe for many writers)."""

    def __init__(self, path: str | os.PathLike[str] | None = None) -> None:
        self.path = Path(path) if path is not None else default_cache_dir() / _FILE_NAME
        self._ready = False

    def _connect(self) -> sqlite3.Connection:
        if not self._ready:
            self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.path, timeout=_BUSY_TIMEOUT_MS / 1000, isolation_level=None)
        conn.execute(f"PRAGMA busy_timeout={_BUSY_TIMEOUT_MS}")
        if not self._ready:
            self._initialise(conn)
        conn.execute("PRAGMA synchronous=NORMAL")
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
                    conn.close()
                    raise
                time.sleep(0.05)
        self._ready = True

    def get(self, key: str) -> str | None:
        """The stored answer (JSON text) for `key`, or None."""
        conn = self._connect()
        try:
            row = conn.execute("SELECT value FROM answers WHERE key = ?", (key,)).fetchone()
        finally:
            conn.close()
        return None if row is None else str(row[0])

    def put(self, key: str, value: str, *, step: str = "", model: str = "") -> None:
        """Store a validated answer (JSON text) under `key`, replacing any earlier one."""
        conn = self._connect()
        try:
            with conn:
                conn.execute("BEGIN IMMEDIATE")
                conn.execute(
                    "INSERT OR REPLACE INTO answers (key, value, step, model, created) "
                    "VALUES (?, ?, ?, ?, ?)",
                    (key, value, step, model, time.time()),
                )
        finally:
            conn.close()

    def __len__(self) -> int:
        conn = self._connect()
        try:
            (count,) = conn.execute("SELECT COUNT(*) FROM answers").fetchone()
        finally:
            conn.close()
        return int(count)

    def clear(self) -> None:
        """Delete every stored answer."""
        conn = self._connect()
        try:
            with conn:
                conn.execute("BEGIN IMMEDIATE")
                conn.execute("DELETE FROM answers")
        finally:
            conn.close()

    async def aget(self, key: str) -> str | None:
        """`get` off the event loop (a busy database never blocks other tasks)."""
        return await asyncio.to_thread(self.get, key)

    async def aput(self, key: str, value: str, *, step: str = "", model: str = "") -> None:
        """`put` off the event loop."""
        await asyncio.to_thread(self.put, key, value, step=step, model=model)

    def __repr__(self) -> str:
        return f"JudgeCache({str(self.path)!r})"
