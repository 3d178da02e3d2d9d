"""`OpenAIBatchJudge`: the LLM-judge core over the OpenAI Batch API (Files + Batches endpoints,
on OpenAI or any server that implements them): half the price, its own rate limits, answers
within hours instead of seconds.

Each round of steps goes out as one batch (judges/openai/_batch_rounds.py says when a round is
complete), with `custom_id` = the request's cache key. The core is the same as every other LLM
judge's: cache, usage, the one re-ask (in the next round) and retries (a failed line is retried
in a follow-up batch, `retries` times, then the step fails). A run that is killed while a batch is
in flight resumes it: the batch ids are kept in the results sidecar, answered lines in the cache
file, so no request is sent twice. `export_to` writes the rounds to a JSONL file instead, for
offline batch runners (`convoeval batch export` / `import`, docs/scale.md).
"""

from __future__ import annotations

import asyncio
import contextlib
import math
import weakref
from collections.abc import Callable, Iterator
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any

from convoeval.judges.core.backend import BackendFailure, BackendReply, BackendRequest, Failure
from convoeval.judges.core.cache import JudgeCache
from convoeval.judges.core.endpoints import EndpointRegistry
from convoeval.judges.core.llm import LLMJudge
from convoeval.judges.core.retry import RetryPolicy
from convoeval.judges.openai._batch_api import BatchAPI, ExportFile, Journal
from convoeval.judges.openai._batch_lines import (
    Exported,
    LineSpool,
    Outcome,
    custom_id,
    stored_reply,
)
from convoeval.judges.openai._batch_rounds import Rounds
from convoeval.judges.openai.judge import OpenAIChatBackend, OpenAIJudge
from convoeval.judges.protocol.base import JudgeConfigError, JudgeError

#: Requests per batch at most (OpenAI's limit per batch is 50,000).
MAX_REQUESTS = 50_000
#: Records a run keeps in flight with a batch judge (they all wait on the same rounds).
WINDOW = 10_000


@dataclass
class _StepLines:
    """The custom_ids one step (one sample of it) used, and whether it was only exported."""

    used: list[str] = field(default_factory=list)
    exported: bool = False


_STEP: ContextVar[_StepLines | None] = ContextVar("convoeval_batch_step", default=None)


@dataclass
class _Loop:
    """A backend's state on one event loop: the rounds and the resume of earlier batches."""

    rounds: Rounds
    resuming: asyncio.Task[None] | None


class OpenAIBatchBackend:
    """The batch backend: `send` looks the line up in the spool, else adds the request to the
    open batch and awaits its line."""

    kind = "openai-batch"

    def __init__(
        self,
        chat: OpenAIChatBackend,
        api: BatchAPI,
        *,
        settle: float,
        quiet: float,
        max_requests: int,
    ) -> None:
        self.chat = chat
        self.api = api
        self.model = chat.model
        self.endpoint = chat.endpoint
        self.settle = settle
        self.quiet = quiet
        self.max_requests = max_requests
        #: When set, rounds are written to this file instead of being sent.
        self.export: ExportFile | None = None
        self._loops: weakref.WeakKeyDictionary[asyncio.AbstractEventLoop, _Loop] = (
            weakref.WeakKeyDictionary()
        )

    def sampling(self) -> dict[str, Any]:
        """The chat backend's: batch and live answers to one question share a cache entry."""
        return self.chat.sampling()

    def secrets(self) -> tuple[str, ...]:
        return self.chat.secrets()

    def here(self) -> _Loop:
        """This event loop's rounds (made, and the resume of open batches started, on first
        use)."""
        loop = asyncio.get_running_loop()
        state = self._loops.get(loop)
        if state is None:
            rounds = Rounds(self._submit, self.settle, self.quiet, self.max_requests)
            resuming = None
            if self.export is None and self.api.journal.open():
                resuming = loop.create_task(self.api.resume())
            state = self._loops[loop] = _Loop(rounds, resuming)
        return state

    async def _submit(self, lines: dict[str, Any]) -> dict[str, Outcome]:
        if self.export is not None:
            return await self.export.submit(lines)
        return await self.api.submit(lines)

    async def send(self, request: BackendRequest) -> BackendReply:
        """The request's line: spooled (answered in an earlier batch or imported), else from
        the batch it joins."""
        step = _STEP.get()
        if step is None or not request.key:
            raise BackendFailure(
                Failure.FATAL, "the batch backend is asked only through OpenAIBatchJudge"
            )
        cid = custom_id(request.key, request)
        step.used.append(cid)
        state = self.here()
        found = await self._spooled(cid)
        if found is None and state.resuming is not None:
            await asyncio.wait({state.resuming})
            found = await self._spooled(cid)
        if found is None:
            found = await state.rounds.wait(cid, self.chat.body(request), request.mode)
        if isinstance(found, Exported):
            step.exported = True
        if isinstance(found, BackendFailure):
            raise BackendFailure(found.kind, found.message, param=found.param)
        return found

    async def _spooled(self, cid: str) -> Outcome | None:
        body = await self.api.spool.aget(cid)
        return None if body is None else stored_reply(body)

    async def aclose(self) -> None:
        """Stop polling on this loop (batches in flight stay on the server for a rerun), drop
        the spooled lines of finished steps, close the client."""
        state = self._loops.pop(asyncio.get_running_loop(), None)
        if state is not None:
            await state.rounds.aclose()
            if state.resuming is not None:
                state.resuming.cancel()
                await asyncio.wait({state.resuming})
        await self.api.spool.asweep()
        await self.api.aclose()


class OpenAIBatchJudge(LLMJudge):
    """A judge that sends its requests through the OpenAI Batch API, a round at a time.

    `base_url`, `api_key`, `seed`, `temperature`, `max_tokens`, `strict`, `reason_first` and
    `samples` are as for `OpenAIJudge` (answers share its cache entries). `retries`: how many
    follow-up batches a failed line gets before its step fails. `retry_budget`: seconds a step
    may spend waiting on batches and retrying (default: no bound; a batch may take 24 hours).
    `poll`: the longest wait between two polls of a batch (the first is 0.25 s, then 1.5 times
    longer each time). `settle`, `quiet`, `max_requests`: when the open batch is sent
    (judges/openai/_batch_rounds.py). `window`: records a run keeps in flight with this judge. The
    answer cache is required: batch answers land there, and a killed run resumes from it.
    """

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        cache: bool | JudgeCache = True,
        seed: int | None = None,
        temperature: float = 0.0,
        max_tokens: int | None = None,
        strict: bool | None = None,
        retries: int = 2,
        retry_budget: float | None = None,
        registry: EndpointRegistry | None = None,
        reason_first: bool = False,
        samples: int = 1,
        poll: float = 30.0,
        settle: float = 0.05,
        quiet: float = 1.0,
        max_requests: int = MAX_REQUESTS,
        window: int = WINDOW,
    ) -> None:
        if cache is False:
            raise JudgeConfigError(
                "the batch judge needs the answer cache: batch answers land there, and an "
                "interrupted run resumes from it (drop --no-cache / cache=False)"
            )
        for name, value in (("poll", poll), ("settle", settle), ("quiet", quiet)):
            if value <= 0:
                raise JudgeConfigError(f"{name} must be positive, not {value:g}")
        if retries < 0 or max_requests < 1 or window < 1:
            raise JudgeConfigError("retries must be >= 0, max_requests and window >= 1")
        if retry_budget is not None and retry_budget <= 0:
            raise JudgeConfigError(f"retry_budget must be positive, not {retry_budget:g}")
        # The live judge resolves the URL and key (environment, placeholder for local servers)
        # and builds the request bodies; it never sends anything here.
        live = OpenAIJudge(
            model,
            base_url=base_url,
            api_key=api_key,
            cache=False,
            seed=seed,
            temperature=temperature,
            max_tokens=max_tokens,
            strict=strict,
            registry=registry,
        )
        answers = cache if isinstance(cache, JudgeCache) else JudgeCache()
        self.journal = Journal(f"openai/{model} at {live.endpoint}")
        api = BatchAPI(live.chat, LineSpool(answers.path), self.journal, poll=poll)
        self._batch = OpenAIBatchBackend(
            live.chat, api, settle=settle, quiet=quiet, max_requests=max_requests
        )
        super().__init__(
            self._batch,
            name=f"openai/{model}",
            cache=answers,
            limiter=None,
            timeout=None,
            retry=RetryPolicy(
                max_retries=retries,
                max_total_s=retry_budget if retry_budget is not None else math.inf,
                base_delay_s=0.0,
                max_delay_s=0.0,
                jitter=0.0,
            ),
            registry=registry,
            reason_first=reason_first,
            samples=samples,
        )
        self.model = model
        self.base_url = live.base_url
        self.endpoint = live.endpoint
        self.poll = poll
        self.window = window

    def __repr__(self) -> str:
        return f"OpenAIBatchJudge(model={self.model!r}, endpoint={self.endpoint!r})"

    def describe(self) -> dict[str, Any]:
        """As every LLM judge's, plus `batch: True` and the longest poll wait."""
        return {**super().describe(), "batch": True, "poll": self.poll}

    def track(
        self,
        entries: list[dict[str, Any]],
        save: Callable[[], None],
        status: Callable[[str], None] | None = None,
    ) -> None:
        """Record batches in `entries` (saved by `save`, e.g. into the results sidecar), and
        resume those a killed run left open; `status` receives progress lines."""
        self.journal = Journal(f"{self.name} at {self.endpoint}", entries, save)
        self._batch.api.journal = self.journal
        self._batch.api.status = status

    def export_to(self, path: str) -> ExportFile:
        """Write every round to `path` (JSONL) instead of sending it (`batch export`)."""
        self._batch.export = ExportFile(path)
        return self._batch.export

    keyed = True  # custom_id = the request's cache key, even if the cache became unusable

    @contextlib.contextmanager
    def _answering(self) -> Iterator[None]:
        # The step is in progress until it has its answer (the flush rule counts it). Its
        # spooled lines are dropped once it is done, so a later run asks a failed step afresh;
        # an export run keeps them all for the run that scores from them.
        lines = _StepLines()
        token = _STEP.set(lines)
        rounds = self._batch.here().rounds
        rounds.enter()
        try:
            yield
        except JudgeError:
            self._done(lines)
            raise
        finally:
            rounds.leave()
            _STEP.reset(token)
        self._done(lines)

    def _done(self, lines: _StepLines) -> None:
        if self._batch.export is None and not lines.exported:
            self._batch.api.spool.done(lines.used)
