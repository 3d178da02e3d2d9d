"""Sending a batch through the OpenAI Files and Batches endpoints (any server that implements
them), or writing it to an export file instead.

`BatchAPI.submit` uploads the lines as a JSONL file, creates the batch, records it in the
journal (the results sidecar), polls it (reporting its status and its own request counts), then
downloads the output and error files, spools the answered lines and returns every line's outcome.
A batch the server lost (404) or that failed to reach a final state gives retryable failures; an
expired or cancelled batch gives its answered lines and retryable failures for the rest; a batch
the server refused as a whole (status failed) gives its errors as final failures (not sent again:
the same input would be refused again; they are kept in its journal entry).

`BatchAPI.resume` picks up the batches a killed run left in flight (journal entries not yet
collected): it waits for each to end and spools its answered lines, so the resumed run reads them
instead of sending those requests again.
"""

from __future__ import annotations

import asyncio
import json
import time
import weakref
from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from convoeval._sync import at_loop_end
from convoeval.judges.core.backend import BackendFailure, Failure
from convoeval.judges.openai._batch_lines import (
    LINE_URL,
    Exported,
    LineSpool,
    Outcome,
    answered_body,
    outcome,
    read_lines,
    request_line,
)
from convoeval.judges.openai._batch_rounds import Line
from convoeval.judges.openai._replies import REFUSED_STATUS
from convoeval.judges.openai.judge import OpenAIChatBackend
from convoeval.judges.protocol._redact import scrub_data

if TYPE_CHECKING:
    import openai

#: Final batch statuses (the others: validating, in_progress, finalizing, cancelling).
FINAL = frozenset({"completed", "failed", "expired", "cancelled"})
#: Journal statuses of a batch that may still hold answers for a resumed run.
OPEN = frozenset({"uploaded", "submitted"})
#: Polls that may fail in a row (connection errors, 5xx) before a batch is given up.
POLL_PATIENCE = 20
#: Batches listed (newest first) to find one a killed run created but did not record.
LISTED = 1000
#: The first wait between polls; each next wait is 1.5 times longer, up to the judge's `poll`.
FIRST_POLL_S = 0.25


class Journal:
    """Where a batch judge records its batches: a list of entries (in the results sidecar when
    a run attached one) and a function that saves it. What is recorded is scrubbed of every
    judge key (a server may refuse a batch with an error naming the key)."""

    def __init__(
        self,
        judge: str,
        entries: list[dict[str, Any]] | None = None,
        save: Callable[[], None] | None = None,
    ) -> None:
        self.judge = judge
        self.entries = entries if entries is not None else []
        self._save = save

    def add(self, **fields: Any) -> dict[str, Any]:
        """A new entry (saved at once)."""
        entry = {"judge": self.judge, **scrub_data(fields), "updated": _now()}
        self.entries.append(entry)
        self.save()
        return entry

    def update(self, entry: dict[str, Any], **fields: Any) -> None:
        """Change an entry (saved at once)."""
        entry.update(scrub_data(fields), updated=_now())
        self.save()

    def open(self) -> list[dict[str, Any]]:
        """This judge's entries that a resumed run must collect."""
        return [e for e in self.entries if e.get("judge") == self.judge and e.get("status") in OPEN]

    def save(self) -> None:
        if self._save is not None:
            self._save()


def _now() -> str:
    return time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime())


class _Lost(Exception):
    """The batch is gone or unreachable; its requests are retried in a new batch."""


class BatchAPI:
    """The Files + Batches transport of one judge (one SDK client per event loop)."""

    def __init__(
        self,
        chat: OpenAIChatBackend,
        spool: LineSpool,
        journal: Journal,
        *,
        poll: float,
        status: Callable[[str], None] | None = None,
    ) -> None:
        self.chat = chat
        self.spool = spool
        self.journal = journal
        self.poll = poll
        self.status = status
        self._clients: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, openai.AsyncOpenAI] = (
            weakref.WeakKeyDictionary()
        )

    def _client(self) -> openai.AsyncOpenAI:
        import openai  # the SDK loads (about a second) only when a batch is sent

        loop = asyncio.get_running_loop()
        client = self._clients.get(loop)
        if client is None:
            client = openai.AsyncOpenAI(**self.chat.client_options(), max_retries=3, timeout=120.0)
            self._clients[loop] = client
            at_loop_end(self.aclose)  # its connections close with the loop (a sync call's)
        return client

    async def aclose(self) -> None:
        """Close this event loop's client."""
        client = self._clients.pop(asyncio.get_running_loop(), None)
        if client is not None:
            await client.close()

    async def submit(self, lines: dict[str, Line]) -> dict[str, Outcome]:
        """Send `lines` as one batch and return each line's outcome (module docstring)."""
        import openai

        await self.spool.asweep()
        data = b"".join(request_line(cid, line.body) for cid, line in lines.items())
        client = self._client()
        try:
            uploaded = await client.files.create(
                file=("convoeval-batch.jsonl", data, "application/jsonl"), purpose="batch"
            )
        except openai.APIError as exc:
            return dict.fromkeys(lines, _failure(exc, "uploading the batch input file"))
        entry = self.journal.add(input_file_id=uploaded.id, requests=len(lines), status="uploaded")
        try:  # never retried blindly: a lost answer may hide a batch that was created
            batch = await client.with_options(max_retries=0).batches.create(
                input_file_id=uploaded.id,
                endpoint=LINE_URL,
                completion_window="24h",
                metadata={"created_by": "convoeval"},
            )
            batch_id = str(batch.id)
        except openai.APIError as exc:
            found = await self._created_from(uploaded.id)
            if found is None:
                self.journal.update(entry, status="not created")
                return dict.fromkeys(lines, _failure(exc, "creating the batch"))
            batch_id = found
        self.journal.update(entry, id=batch_id, status="submitted")
        self._say(f"batch {batch_id}: sent {len(lines)} requests")
        try:
            return await self._collect(batch_id, entry, lines)
        except _Lost as lost:
            return dict.fromkeys(lines, BackendFailure(Failure.RETRYABLE, str(lost)))

    async def _collect(
        self, batch_id: str, entry: dict[str, Any], lines: dict[str, Line] | None
    ) -> dict[str, Outcome]:
        """Wait for the batch to end, spool its answered lines, and (when its `lines` are known)
        return their outcomes."""
        try:
            batch = await self._wait(batch_id)
        except _Lost:
            self.journal.update(entry, status="lost")
            raise
        status = str(batch.status)
        if status == "failed":  # refused as a whole: the same input would be refused again
            errors = getattr(getattr(batch, "errors", None), "data", None) or []
            said = "; ".join(_said(e) for e in errors[:3]) or "no reason given"
            self.journal.update(entry, status="failed", error=said)
            failure = BackendFailure(Failure.FATAL, f"the server refused batch {batch_id}: {said}")
            return dict.fromkeys(lines or {}, failure)
        found: list[dict[str, Any]] = []
        for file_id in (batch.output_file_id, batch.error_file_id):
            if file_id:
                found += await self._download(file_id, batch_id)
        answered = [(line["custom_id"], body) for line in found if (body := answered_body(line))]
        await self.spool.aput(((cid, json.dumps(body)) for cid, body in answered), batch_id)
        self.journal.update(entry, status="collected", final=status)
        if lines is None:
            return {}
        outcomes: dict[str, Outcome] = {}
        for line in found:
            sent = lines.get(line["custom_id"])
            if sent is not None:
                outcomes[sent.cid] = outcome(line, sent.body, sent.mode)
        if status != "completed":
            missing = BackendFailure(
                Failure.RETRYABLE, f"batch {batch_id} {status} before this request was answered"
            )
            for cid in lines:
                outcomes.setdefault(cid, missing)
        return outcomes

    async def _wait(self, batch_id: str) -> Any:
        """Poll until the batch reaches a final status; `_Lost` when it is gone (404) or the
        server stops answering."""
        import openai

        client = self._client()
        wait, failures, said = FIRST_POLL_S, 0, ""
        while True:
            try:
                batch = await client.batches.retrieve(batch_id)
            except openai.NotFoundError:
                raise _Lost(
                    f"the server lost batch {batch_id} (HTTP 404 when polling it); its "
                    "requests go into a new batch"
                ) from None
            except (openai.APIConnectionError, openai.InternalServerError, openai.RateLimitError):
                failures += 1
                if failures >= POLL_PATIENCE:
                    raise _Lost(
                        f"gave up polling batch {batch_id} after {failures} failed polls"
                    ) from None
            else:
                failures = 0
                counts = batch.request_counts
                now = f"{batch.status}" + (
                    f", {counts.completed}/{counts.total} done, {counts.failed} failed"
                    if counts is not None
                    else ""
                )
                if now != said:
                    self._say(f"batch {batch_id}: {now}")
                    said = now
                if str(batch.status) in FINAL:
                    return batch
            await asyncio.sleep(min(wait, self.poll))
            wait *= 1.5

    async def _download(self, file_id: str, batch_id: str) -> list[dict[str, Any]]:
        import openai

        try:
            content = await self._client().files.content(file_id)
        except openai.APIError as exc:
            raise _Lost(f"could not download file {file_id} of batch {batch_id}: {exc}") from None
        return list(read_lines(content.content))

    async def resume(self) -> None:
        """Collect the batches a killed run left open (their answered lines go to the spool)."""
        for entry in self.journal.open():
            batch_id = entry.get("id") or await self._created_from(entry.get("input_file_id"))
            if batch_id is None:
                self.journal.update(entry, status="not created")
                continue
            self.journal.update(entry, id=batch_id)
            self._say(f"batch {batch_id}: resuming (left in flight by an interrupted run)")
            try:
                await self._collect(batch_id, entry, None)
            except _Lost as lost:
                self._say(str(lost))

    async def _created_from(self, input_file_id: str | None) -> str | None:
        """The batch made from `input_file_id` (a run killed before it saw the batch's id)."""
        if not input_file_id:
            return None
        import openai

        try:
            seen = 0
            async for batch in self._client().batches.list(limit=100):  # newest first
                if batch.input_file_id == input_file_id:
                    return str(batch.id)
                seen += 1
                if seen >= LISTED:
                    break
        except openai.APIError:
            return None
        return None

    def _say(self, text: str) -> None:
        if self.status is not None:
            self.status(text)


def _said(error: Any) -> str:
    """One error of a refused batch: its code, message and input line, as far as given."""
    code, message = getattr(error, "code", None), getattr(error, "message", None)
    line = getattr(error, "line", None)
    text = ": ".join(str(part) for part in (code, message) if part) or "an error"
    return text if line is None else f"{text} (input line {line})"


def _failure(exc: openai.APIError, doing: str) -> BackendFailure:
    """A failed upload or create: retryable when the server may take it later, the credentials
    refused on 401/403."""
    status = getattr(exc, "status_code", None)
    retry = status is None or status >= 500 or status in (408, 409, 429)
    kind = Failure.RETRYABLE if retry else Failure.FATAL
    if status in REFUSED_STATUS:
        kind = Failure.CREDENTIALS_REFUSED
    where = f"HTTP {status}" if status is not None else type(exc).__name__
    return BackendFailure(kind, f"{doing} failed ({where}): {exc}")


class ExportFile:
    """Writes each batch's lines to a JSONL file (each custom_id once) instead of sending it;
    the requests fail as `Exported`, so the run goes on to the records after them."""

    def __init__(self, path: str) -> None:
        self.path = path
        self.written: set[str] = set()

    async def submit(self, lines: dict[str, Line]) -> dict[str, Outcome]:
        """Append the lines not written yet."""
        new = [(cid, line) for cid, line in lines.items() if cid not in self.written]
        with open(self.path, "ab") as handle:
            handle.writelines(request_line(cid, line.body) for cid, line in new)
        self.written.update(cid for cid, _ in new)
        failure = Exported(Failure.FATAL, f"exported to {self.path}, not sent")
        return dict.fromkeys(lines, failure)
