"""Batch API lines: a request's `custom_id` and its line of the input JSONL, what a line of the
output or error file means (a reply, or a failure classified as a live answer is), and the spool
that keeps answered lines until their step is done.

A `custom_id` is the request's cache key, plus a suffix for the variants of one question that are
separate requests: a fallback output mode, adapted parameters, the re-ask. The spool is a table
in the judge cache's SQLite file: an answered line survives a killed run, so the resumed run reads
it instead of sending the request again; it is dropped once its step is done.
"""

from __future__ import annotations

import asyncio
import json
import sqlite3
import time
from collections.abc import Iterable, Mapping
from pathlib import Path
from typing import Any, Final

import httpx

from convoeval.judges.core.backend import BackendFailure, BackendReply, BackendRequest, Failure
from convoeval.judges.openai._replies import read_reply, status_failure
from convoeval.judges.protocol._redact import scrub

#: The endpoint every line of a convoeval batch goes to.
LINE_URL: Final = "/v1/chat/completions"
#: A line's outcome: the reply, or the failure to raise for it.
Outcome = BackendReply | BackendFailure

_SPOOL = """
CREATE TABLE IF NOT EXISTS batch_lines (
    custom_id TEXT PRIMARY KEY,
    body TEXT NOT NULL,
    batch TEXT NOT NULL,
    created REAL NOT NULL
)
"""


class Exported(BackendFailure):
    """The request was written to an export file instead of being sent (`batch export`)."""


def custom_id(key: str, request: BackendRequest) -> str:
    """`key` (the cache key) with the suffixes of a fallback mode, adapted parameters, a re-ask."""
    parts = [key]
    if request.mode != "json_schema":
        parts.append(f"mode-{request.mode}")
    if request.adapted:
        parts.append("adapted-" + "-".join(sorted(request.adapted)))
    if request.reask is not None:
        parts.append("reask")
    return "~".join(parts)


def request_line(cid: str, body: Mapping[str, Any]) -> bytes:
    """One line of a batch input file (JSONL, newline included)."""
    line = {"custom_id": cid, "method": "POST", "url": LINE_URL, "body": body}
    return json.dumps(line, ensure_ascii=False, separators=(",", ":")).encode("utf-8") + b"\n"


def read_lines(data: bytes) -> Iterable[dict[str, Any]]:
    """The JSON objects of an output or error file; a line that is not one is skipped (its
    request gets no outcome and is asked again)."""
    for raw in data.splitlines():
        if not raw.strip():
            continue
        try:
            line = json.loads(raw)
        except ValueError:
            continue
        if isinstance(line, dict) and isinstance(line.get("custom_id"), str):
            yield line


def answered_body(line: Mapping[str, Any]) -> dict[str, Any] | None:
    """The chat-completion body of a line answered with HTTP 200, else None."""
    response = line.get("response")
    if not isinstance(response, Mapping) or response.get("status_code") != 200:
        return None
    body = response.get("body")
    return dict(body) if isinstance(body, Mapping) else None


def outcome(line: Mapping[str, Any], sent: Mapping[str, Any], mode: str) -> Outcome:
    """What one output or error line means for its request (`sent` is the request's body)."""
    response = line.get("response")
    if isinstance(response, Mapping) and isinstance(response.get("status_code"), int):
        status = int(response["status_code"])
        body = response.get("body")
        http = httpx.Response(status, json=body if body is not None else {})
        if status == 200:
            return reply(http)
        return status_failure(http, sent, mode)
    error = line.get("error")
    error = error if isinstance(error, Mapping) else {}
    code = error.get("code") or "error"
    message = error.get("message") or "no message"
    return BackendFailure(Failure.RETRYABLE, f"the batch line failed: {code}: {message}")


def reply(http: httpx.Response) -> Outcome:
    """A 200 chat completion read as a live one is."""
    try:
        return read_reply(http)
    except BackendFailure as failure:
        return failure


def stored_reply(body: str) -> Outcome:
    """A spooled answer (its chat-completion body as JSON text) read back."""
    return reply(httpx.Response(200, content=body.encode("utf-8"), headers=_JSON))


_JSON = {"content-type": "application/json"}


class LineSpool:
    """Answered batch lines by custom_id, in the judge cache's SQLite file (table batch_lines)."""

    def __init__(self, path: Path) -> None:
        self.path = path
        self._ready = False
        self._done: list[str] = []

    def _connect(self) -> sqlite3.Connection:
        self.path.parent.mkdir(parents=True, exist_ok=True)
        conn = sqlite3.connect(self.path, timeout=30.0, isolation_level=None)
        conn.execute("PRAGMA busy_timeout=30000")
        if not self._ready:
            conn.execute(_SPOOL)
            self._ready = True
        return conn

    def get(self, cid: str) -> str | None:
        """The stored body of `cid`, or None."""
        conn = self._connect()
        try:
            row = conn.execute(
                "SELECT body FROM batch_lines WHERE custom_id = ?", (cid,)
            ).fetchone()
        finally:
            conn.close()
        return None if row is None else str(row[0])

    def put(self, rows: Iterable[tuple[str, str]], batch: str) -> int:
        """Store (custom_id, body JSON) rows of `batch` in one transaction, scrubbed of every
        judge key (the file never holds one); returns how many."""
        items = [(cid, scrub(body), batch, time.time()) for cid, body in rows]
        if not items:
            return 0
        conn = self._connect()
        try:
            with conn:
                conn.execute("BEGIN IMMEDIATE")
                conn.executemany("INSERT OR REPLACE INTO batch_lines VALUES (?, ?, ?, ?)", items)
        finally:
            conn.close()
        return len(items)

    def done(self, cids: Iterable[str]) -> None:
        """Mark lines whose step is over; they are deleted at the next `sweep` (one write)."""
        self._done.extend(cids)

    def sweep(self) -> None:
        """Delete the lines marked done."""
        done, self._done = self._done, []
        if not done:
            return
        conn = self._connect()
        try:
            with conn:
                conn.execute("BEGIN IMMEDIATE")
                conn.executemany(
                    "DELETE FROM batch_lines WHERE custom_id = ?", [(c,) for c in done]
                )
        finally:
            conn.close()

    def __len__(self) -> int:
        conn = self._connect()
        try:
            (count,) = conn.execute("SELECT COUNT(*) FROM batch_lines").fetchone()
        finally:
            conn.close()
        return int(count)

    async def aget(self, cid: str) -> str | None:
        """`get` off the event loop."""
        return await asyncio.to_thread(self.get, cid)

    async def aput(self, rows: Iterable[tuple[str, str]], batch: str) -> int:
        """`put` off the event loop."""
        return await asyncio.to_thread(self.put, list(rows), batch)

    async def asweep(self) -> None:
        """`sweep` off the event loop."""
        await asyncio.to_thread(self.sweep)
