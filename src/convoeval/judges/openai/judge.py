"""The `openai` judge: any OpenAI-compatible chat-completions server, with structured output.

`OpenAIChatBackend` does one `POST /chat/completions` over httpx and classifies what came back
(retryable, format rejected, parameter rejected, fatal; judges/openai/_replies.py), saying in every
message what the server sent or what failed. `OpenAIJudge` is that backend under the shared
`LLMJudge` core, which owns the cache, limit, timeout, retries, re-ask and usage. API keys only
ever go into the header.
Why httpx and not the openai SDK: the core must see every answer's raw status, headers and body
(an HTML 200, Retry-After-ms, a reset mid-body) and own timeouts and retries itself; the SDK
wraps, retries and re-times those in ways the core would have to undo.
"""

from __future__ import annotations

import asyncio
import itertools
import os
import re
import weakref
from dataclasses import replace
from typing import TYPE_CHECKING, Any, TypedDict, cast
from urllib.parse import parse_qsl, urlsplit, urlunsplit

from convoeval._sync import at_loop_end
from convoeval.errors import check_count, one_spelling
from convoeval.judges.core.backend import BackendFailure, BackendReply, BackendRequest, Failure
from convoeval.judges.core.cache import JudgeCache, default_cache_dir
from convoeval.judges.core.endpoints import ENDPOINTS, EndpointRegistry, tls_context
from convoeval.judges.core.llm import LLMJudge
from convoeval.judges.core.retry import Limiter, RetryPolicy
from convoeval.judges.openai._replies import read_reply, status_failure
from convoeval.judges.openai.recipe import OpenAIRecipe
from convoeval.judges.protocol.base import JudgeConfigError

if TYPE_CHECKING:  # httpx loads with the first request: a run that sends none never needs it
    import httpx

OPENAI_URL = "https://api.openai.com/v1"
#: The key sent to local servers that need none (never a real credential).
PLACEHOLDER_KEY = "not-needed"


def redact_url(url: str) -> str:
    """The URL without user info, query or fragment (they may carry credentials)."""
    parts = urlsplit(url)
    host = parts.hostname or ""
    if ":" in host:
        host = f"[{host}]"
    netloc = f"{host}:{parts.port}" if parts.port else host
    return urlunsplit((parts.scheme, netloc, parts.path.rstrip("/"), "", ""))


#: HTTP clients (connection pools) per judge and event loop, used in turn. httpcore's pool walks
#: every connection it holds, asking each socket whether it is still open, whenever a request
#: starts or ends: its CPU per request grows with the requests in flight. On the mock judge at
#: 64 in flight, 3,000 requests cost 39 s of CPU through one pool and 7-8 s through four
#: (benchmarks/README.md, "Connection pools").
POOLS = 4


def _on_private_network(base_url: str) -> bool:
    """Whether the URL's host is `localhost` or a loopback, private or link-local address: where
    a self-hosted server (llama.cpp) may answer `/props`."""
    import ipaddress

    host = (urlsplit(base_url).hostname or "").lower()
    if host == "localhost" or host.endswith(".localhost"):
        return True
    try:
        address = ipaddress.ip_address(host)
    except ValueError:
        return False
    return address.is_loopback or address.is_private or address.is_link_local


def _joined(base_url: str, path: str) -> str:
    """`path` appended to the base URL's path, its query (if any) kept at the end."""
    parts = urlsplit(base_url)
    return urlunsplit(parts._replace(path=f"{parts.path.rstrip('/')}/{path}"))


def _schema_name(step_name: str) -> str:
    cleaned = re.sub(r"[^a-zA-Z0-9_-]", "_", step_name)[:64]
    return cleaned or "answer"


def _strict_compatible(schema: Any) -> bool:
    """True when every object in the schema closes its properties and requires all of them."""
    if isinstance(schema, dict):
        if schema.get("type") == "object" or "properties" in schema:
            props = schema.get("properties", {})
            if schema.get("additionalProperties") is not False:
                return False
            if set(schema.get("required", [])) != set(props):
                return False
        return all(_strict_compatible(v) for v in schema.values())
    if isinstance(schema, list):
        return all(_strict_compatible(v) for v in schema)
    return True


class ClientOptions(TypedDict):
    """What another client of a judge's endpoint needs (the openai SDK's keyword arguments)."""

    api_key: str
    base_url: str


class OpenAIChatBackend:
    """One round trip to `{base_url}/chat/completions`, on one httpx client per event loop."""

    kind = "openai"

    def __init__(
        self,
        model: str,
        *,
        base_url: str,
        api_key: str,
        seed: int | None,
        temperature: float,
        max_tokens: int | None,
        strict: bool | None,
    ) -> None:
        self.model = model
        self.base_url = base_url
        self.endpoint = redact_url(base_url)
        self._api_key = api_key
        self.seed = seed
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.strict = strict
        self._clients: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, list[httpx.AsyncClient]
        ] = weakref.WeakKeyDictionary()
        self._turn = itertools.count()

    def sampling(self) -> dict[str, Any]:
        """Temperature, seed and token limit: they shape answers, so they key the cache."""
        return {"temperature": self.temperature, "seed": self.seed, "max_tokens": self.max_tokens}

    def secrets(self) -> tuple[str, ...]:
        """The API key, and a password or query values in the base URL (masked in every error
        text: some gateways take their key as `?api-key=...`)."""
        parts = urlsplit(self.base_url)
        found = [] if self._api_key == PLACEHOLDER_KEY else [self._api_key]
        found += [parts.password or "", *(v for _, v in parse_qsl(parts.query))]
        return tuple(v for v in found if v)

    def client_options(self) -> ClientOptions:
        """`api_key` and `base_url` for another client of this endpoint (the openai SDK's, for
        the Batch API). Holds the key: pass it to the client, never show or log it."""
        return ClientOptions(api_key=self._api_key, base_url=self.base_url)

    def _client(self) -> httpx.AsyncClient:
        """One of this event loop's `POOLS` HTTP clients, in turn (made on first use)."""
        loop = asyncio.get_running_loop()
        clients = self._clients.get(loop)
        if clients is None:
            import httpx

            # No httpx timeouts and no pool limit: the core's limiter and per-request timeout
            # bound every request, counted from when it is sent.
            clients = [
                httpx.AsyncClient(
                    timeout=None,
                    verify=tls_context(self.base_url),
                    limits=httpx.Limits(max_connections=None, max_keepalive_connections=64),
                    headers={"Authorization": f"Bearer {self._api_key}"},
                )
                for _ in range(POOLS)
            ]
            self._clients[loop] = clients
            at_loop_end(self.aclose)  # its connections close with the loop (a sync call's)
        return clients[next(self._turn) % len(clients)]

    async def aclose(self) -> None:
        """Close this event loop's HTTP clients (clients of closed loops are dropped)."""
        for client in self._clients.pop(asyncio.get_running_loop(), []):
            await client.aclose()

    def body(self, request: BackendRequest) -> dict[str, Any]:
        """The JSON body of a chat-completions request (adapted parameters left out or renamed)."""
        args: dict[str, Any] = {"model": self.model, "messages": request.messages()}
        if "temperature" not in request.adapted:
            given = request.temperature  # a repeated sample's
            args["temperature"] = self.temperature if given is None else given
        seed = self.seed if request.seed is None else request.seed
        if seed is not None and "seed" not in request.adapted:
            args["seed"] = seed
        if self.max_tokens is not None:
            adapted = "max_tokens" in request.adapted
            args["max_completion_tokens" if adapted else "max_tokens"] = self.max_tokens
        if request.mode == "json_schema":
            schema = request.schema
            strict = _strict_compatible(schema) if self.strict is None else self.strict
            args["response_format"] = {
                "type": "json_schema",
                "json_schema": {
                    "name": _schema_name(request.step.name),
                    "schema": schema,
                    "strict": strict,
                },
            }
        elif request.mode == "json_object":
            args["response_format"] = {"type": "json_object"}
        return args

    async def send(self, request: BackendRequest) -> BackendReply:
        """POST the request; classify any failure with what came back or what failed."""
        import httpx

        body = self.body(request)
        url = _joined(self.base_url, "chat/completions")
        try:
            response = await self._client().post(url, json=body)
        except httpx.TransportError as exc:
            detail = str(exc) or _TRANSPORT_DETAIL.get(type(exc).__name__, "no detail given")
            raise BackendFailure(
                Failure.RETRYABLE,
                f"connection failed ({type(exc).__name__} on POST {redact_url(url)}): {detail}",
            ) from None
        except httpx.HTTPError as exc:
            raise BackendFailure(
                Failure.FATAL, f"unusable server response: {type(exc).__name__}: {exc}"
            ) from None
        if response.status_code != 200:
            raise status_failure(response, body, request.mode)
        return read_reply(response)

    async def served_context(self, timeout: float) -> int | None:
        """The context window the server reports, read from llama.cpp's `GET /props`
        (`default_generation_settings.n_ctx`, or `n_ctx`) at the server's root and under the
        base URL; None when neither answers with one (any other server), and without asking
        when the server is not on this machine or a private network (hosted APIs have no
        `/props`, and a request they would refuse costs a round trip and a log line)."""
        if not _on_private_network(self.base_url):
            return None
        import httpx

        root = urlsplit(self.base_url)._replace(path="", query="", fragment="").geturl()
        for url in dict.fromkeys((_joined(root, "props"), _joined(self.base_url, "props"))):
            try:
                async with asyncio.timeout(timeout):
                    response = await self._client().get(url)
                data = response.json() if response.status_code == 200 else None
            except (httpx.HTTPError, TimeoutError, ValueError):
                continue
            found = _n_ctx(data)
            if found is not None:
                return found
        return None

    async def check_credentials(self, timeout: float) -> str | None:
        """`GET {base_url}/models` with the key: what the server said when it answers 401, else
        None. Nothing else proves the key wrong: a server without the route answers 404, some
        list models without a key (llama.cpp, OpenRouter), and a key restricted to some
        endpoints may chat yet get 403 here; the first chat request's refusal stops the run."""
        import httpx

        try:
            async with asyncio.timeout(timeout):
                response = await self._client().get(_joined(self.base_url, "models"))
        except (httpx.HTTPError, TimeoutError):
            return None
        if response.status_code != 401:
            return None
        return status_failure(response, {}, "prompt").message


def _n_ctx(props: object) -> int | None:
    """llama.cpp's context size in a `/props` answer (per slot), if it holds one."""
    if not isinstance(props, dict):
        return None
    settings = props.get("default_generation_settings")
    for value in (
        settings.get("n_ctx") if isinstance(settings, dict) else None,
        props.get("n_ctx"),
    ):
        if isinstance(value, int) and not isinstance(value, bool) and value > 0:
            return value
    return None


#: What an httpx transport error with an empty message means.
_TRANSPORT_DETAIL = {
    "RemoteProtocolError": "the server closed the connection before the whole answer arrived",
    "ReadError": "the connection was reset while reading the answer",
    "WriteError": "the connection was reset while sending the request",
    "ConnectError": "could not connect (nothing listening, or the host is unreachable)",
}


class OpenAIJudge(LLMJudge):
    """A judge backed by an OpenAI-compatible server (OpenAI, vLLM, Ollama, llama.cpp, gateways).

    `concurrency` gives this judge its own limit on requests in flight, shared by every metric and
    sample using it; without it the judge shares its endpoint's default limit (16) with the other
    judges there that set none. A judge's explicit limit never changes another judge's.
    `timeout` is per request, from when it is sent; `retry_budget` (seconds, default 120) bounds
    the retries of one step and replaces `retry.max_total_s` when given. `reason_first` asks for
    each verdict's short rationale before the verdict itself; `judge_samples=N` asks every step
    N times (N requests, each at a sampling temperature) and takes the majority (docs/judges.md).
    `max_concurrency` and `samples` are aliases of `concurrency` and `judge_samples`
    (README.md, "One name per concept"); two spellings with different values are a `UsageError`.
    `context_window` is the model's context in tokens: a metric splits a conversation whose
    request would not fit it (or whose answer would not fit `max_tokens`) into several requests;
    without it the judge asks llama.cpp's `/props` once (`context_limit()`, docs/judges.md).
    """

    timeout: float  # always set (the core's may be None)

    def __init__(
        self,
        model: str,
        *,
        base_url: str | None = None,
        api_key: str | None = None,
        concurrency: int | None = None,
        cache: bool | JudgeCache = True,
        timeout: float = 60.0,
        seed: int | None = None,
        temperature: float = 0.0,
        max_tokens: int | None = None,
        retry: RetryPolicy | None = None,
        strict: bool | None = None,
        retry_budget: float | None = None,
        registry: EndpointRegistry | None = None,
        reason_first: bool = False,
        judge_samples: int | None = None,
        max_concurrency: int | None = None,
        samples: int | None = None,
        context_window: int | None = None,
    ) -> None:
        # one spelling per concept (README.md): samples, max_concurrency are aliases
        given = one_spelling({"judge_samples": judge_samples, "samples": samples})
        samples = 1 if given is None else cast(int, given)
        concurrency = cast(
            int | None,
            one_spelling({"concurrency": concurrency, "max_concurrency": max_concurrency}),
        )
        check_count(concurrency, "concurrency")
        check_count(context_window, "context_window")
        if not model or not model.strip():
            raise JudgeConfigError("OpenAIJudge needs a model name")
        if timeout <= 0:
            raise JudgeConfigError(f"timeout must be positive, not {timeout:g}")
        url = (base_url or os.environ.get("OPENAI_BASE_URL") or OPENAI_URL).rstrip("/")
        key = api_key or os.environ.get("OPENAI_API_KEY")
        if not key:
            if urlsplit(url).hostname == "api.openai.com":
                raise JudgeConfigError(
                    "no API key for api.openai.com: set OPENAI_API_KEY or pass api_key "
                    "(or point OPENAI_BASE_URL at a local server)"
                )
            key = PLACEHOLDER_KEY
        policy = retry or RetryPolicy()
        if retry_budget is not None:
            if retry_budget <= 0:
                raise JudgeConfigError(f"retry_budget must be positive, not {retry_budget:g}")
            policy = replace(policy, max_total_s=retry_budget)
        self._backend = self._chat_backend(
            model,
            base_url=url,
            api_key=key,
            seed=seed,
            temperature=temperature,
            max_tokens=max_tokens,
            strict=strict,
        )
        registry = registry if registry is not None else ENDPOINTS
        super().__init__(
            self._backend,
            name=f"openai/{model}",
            cache=_cache(cache),
            limiter=(
                registry.shared_limiter(self._backend.endpoint)
                if concurrency is None
                else Limiter(concurrency)
            ),
            timeout=timeout,
            retry=policy,
            registry=registry,
            reason_first=reason_first,
            samples=samples,
        )
        self.model = model
        self.base_url = url
        self.endpoint = self._backend.endpoint
        self.seed = seed
        self.temperature = temperature
        self.max_tokens = max_tokens
        self.strict = strict
        #: The model's context in tokens, given; else read from the server once (None: unknown).
        self.context_window = context_window
        self._context_read = context_window is not None
        #: The one `/props` read in progress per event loop (every caller awaits the same one).
        self._context_reads: weakref.WeakKeyDictionary[
            asyncio.AbstractEventLoop, asyncio.Task[int | None]
        ] = weakref.WeakKeyDictionary()

    async def context_limit(self) -> int | None:
        """The context window requests must fit: `context_window` when given, else what the
        server reports (llama.cpp's `/props`), asked once per judge; None when unknown."""
        if self._context_read:
            return self.context_window
        loop = asyncio.get_running_loop()
        read = self._context_reads.get(loop)
        if read is None:
            read = loop.create_task(self._backend.served_context(min(self.timeout, 10.0)))
            self._context_reads[loop] = read
        found = await asyncio.shield(read)
        self.context_window, self._context_read = found, True
        return found

    def output_limit(self) -> int | None:
        """The most tokens one answer may have (`max_tokens`; None: no limit set)."""
        return self.max_tokens

    def _chat_backend(self, model: str, **settings: Any) -> OpenAIChatBackend:
        """The backend this judge asks through (a subclass may serve its own: judges/gguf/)."""
        return OpenAIChatBackend(model, **settings)

    @property
    def chat(self) -> OpenAIChatBackend:
        """The chat-completions backend: its settings, request bodies and client options."""
        return self._backend

    def recipe(self) -> OpenAIRecipe:
        """How to build this judge again elsewhere (`from_recipe`): its settings, API key
        included (kept out of the recipe's repr), and its limit, own or its endpoint's shared."""
        cache = self.cache
        # The default cache travels as True (each worker opens its own default), not bool(cache),
        # which is the entry count: an empty default cache would become no cache.
        if cache is None or cache.path == default_cache_dir() / cache.path.name:
            where: bool | str = cache is not None
        else:
            where = str(cache.path)
        return OpenAIRecipe.of(
            self,
            **self._backend.client_options(),
            cache=where,
            concurrency=self.concurrency or 1,
            shared=self._limiter is self.registry.shared_limiter(self.endpoint),
        )

    @classmethod
    def from_recipe(
        cls, recipe: OpenAIRecipe, registry: EndpointRegistry, concurrency: int
    ) -> OpenAIJudge:
        """The judge of `recipe`, using `registry`, with `concurrency` requests in flight: its
        own limit, or, for a judge on its endpoint's shared limit, that shared limit there."""
        if recipe.shared:
            registry.shared_limiter(recipe.endpoint).limit = concurrency
        own = None if recipe.shared else concurrency
        return cls(**recipe.kwargs(), concurrency=own, registry=registry)

    def __repr__(self) -> str:
        return f"OpenAIJudge(model={self.model!r}, endpoint={self.endpoint!r})"


def _cache(cache: bool | JudgeCache) -> JudgeCache | None:
    if isinstance(cache, JudgeCache):
        return cache
    return JudgeCache() if cache else None
