"""`GGUFJudge`: an `OpenAIJudge` whose server is llama.cpp, run in this process on the user's GGUF
file (server.py). Everything else is the OpenAI-compatible path: the same schemas (llama.cpp
enforces them as a grammar), keyed verdicts, re-ask, retries and time budgets counted from send,
usage. Its answers are cached under the file's SHA-256 (file.py), never its path or port.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any, NoReturn

from convoeval.errors import check_count
from convoeval.judges.core.backend import BackendFailure, BackendReply, BackendRequest, Failure
from convoeval.judges.core.cache import JudgeCache
from convoeval.judges.gguf.file import check_gguf, file_sha256
from convoeval.judges.gguf.server import (
    LlamaServer,
    ServerStartError,
    default_threads,
    require_xllamacpp,
)
from convoeval.judges.openai.judge import PLACEHOLDER_KEY, OpenAIChatBackend, OpenAIJudge
from convoeval.judges.protocol.base import JudgeConfigError

#: The endpoint every gguf judge names (cache keys, descriptions): the file's hash tells them apart.
ENDPOINT = "llama.cpp in this process"
#: Defaults sized for a laptop: tokens of context per request, requests at once, answer cap,
#: seconds per request (a small CPU model writes a few tokens a second).
DEFAULT_CTX = 4096
DEFAULT_SLOTS = 2
DEFAULT_MAX_TOKENS = 1000
DEFAULT_TIMEOUT = 300.0


class GGUFChatBackend(OpenAIChatBackend):
    """The chat backend on the judge's own llama.cpp server, started on first use."""

    kind = "gguf"

    def __init__(self, model: str, *, server: LlamaServer, **settings: Any) -> None:
        super().__init__(model, **settings)
        self.server = server
        self.endpoint = ENDPOINT

    async def _started(self) -> None:
        if not self.server.running:
            self.base_url = await asyncio.to_thread(self.server.start)

    async def send(self, request: BackendRequest) -> BackendReply:
        """Start the server if it is not running (a load failure fails the step), then ask."""
        try:
            await self._started()
        except ServerStartError as exc:
            raise BackendFailure(Failure.FATAL, str(exc)) from None
        return await super().send(request)

    async def check_credentials(self, timeout: float) -> str | None:
        """Load the model before anything is scored (a file llama.cpp cannot load stops the
        run here, with why); there is no key to check."""
        await self._started()
        return None


class GGUFJudge(OpenAIJudge):
    """A judge on a local GGUF model that llama.cpp runs in this process (`--judge gguf:PATH`).

    `threads` (CPU threads, default half the logical CPUs, 1 to 4), `ctx` (tokens of context
    per request, default 4096) and `concurrency` (requests at once, the server's slots,
    default 2) size the server; the other options are `OpenAIJudge`'s, with `max_tokens` 1000
    and `timeout` 300 s by default. The server starts with the first request (or the run's
    reachability check) and stops with `close()` / `aclose()` (a run calls it when it ends)
    or when the process exits.
    """

    def __init__(
        self,
        path: str | Path,
        *,
        threads: int | None = None,
        ctx: int | None = None,
        concurrency: int | None = None,
        cache: bool | JudgeCache = True,
        timeout: float = DEFAULT_TIMEOUT,
        max_tokens: int | None = DEFAULT_MAX_TOKENS,
        **options: Any,
    ) -> None:
        for name, value in (("threads", threads), ("ctx", ctx), ("concurrency", concurrency)):
            check_count(value, name)
        unusable = sorted({"base_url", "api_key", "registry"} & set(options))
        if unusable:
            raise JudgeConfigError(
                f"the gguf judge serves its own file: it takes no {', '.join(unusable)}"
            )
        file = check_gguf(path)
        require_xllamacpp()
        self.file = file
        self.sha256 = file_sha256(file)
        slots = concurrency or DEFAULT_SLOTS
        self.server = LlamaServer(
            file, threads=threads or default_threads(), ctx=ctx or DEFAULT_CTX, slots=slots
        )
        super().__init__(
            f"sha256:{self.sha256}",
            base_url="http://127.0.0.1/v1",  # replaced by the server's own when it starts
            api_key=PLACEHOLDER_KEY,
            concurrency=slots,
            cache=cache,
            timeout=timeout,
            max_tokens=max_tokens,
            **{"context_window": self.server.ctx, **options},  # its own: requests sized to it
        )
        self.name = f"gguf:{file.name}"

    def _chat_backend(self, model: str, **settings: Any) -> OpenAIChatBackend:
        return GGUFChatBackend(model, server=self.server, **settings)

    def describe(self) -> dict[str, Any]:
        """The OpenAI judge's description, with the file, its threads and context."""
        server = self.server
        extra = {"file": str(self.file), "threads": server.threads, "ctx": server.ctx}
        return {**super().describe(), **extra}

    def recipe(self) -> NoReturn:
        raise JudgeConfigError(
            "the gguf judge runs llama.cpp in this process and cannot be rebuilt in another "
            "(a Ray worker): score with --engine local"
        )

    async def aclose(self) -> None:
        """Close this event loop's connections and stop the server (the next request starts
        it again)."""
        await super().aclose()
        self.server.stop()

    def close(self) -> None:
        """Stop the server and close the answer cache (both reopen if the judge is used again)."""
        self.server.stop()
        if self.cache is not None:
            self.cache.close()

    def __repr__(self) -> str:
        return f"GGUFJudge(file={str(self.file)!r})"
