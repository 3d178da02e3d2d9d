"""A local OpenAI-compatible benchmark server: schema-valid answers after a fixed delay, counted.

It serves `POST /v1/chat/completions` on 127.0.0.1 from an asyncio loop in a background thread
(so the delay never ties up a thread and 32+ concurrent requests cost nothing), answers every
structured-output request with JSON built from `response_format.json_schema.schema`, and fills
keyed verdict lists from the prompt (bullet topics, "- exchange N:" lines, "[i] User:" lines) so
convoeval's keyed checks accept the first answer. It counts requests, re-asks, prompt characters
and peak concurrency. With `faults=F` a seeded share F of requests is answered 429 (Retry-After:
1), 500 or 503 at once instead; a client that hangs up before its answer is counted as abandoned.
Run it alone with `python benchmarks/_fake_openai_server.py [--delay S] [--faults F]`.
"""

from __future__ import annotations

import argparse
import asyncio
import contextlib
import hashlib
import json
import random
import re
import signal
import subprocess
import sys
import threading
import time
import urllib.request
from dataclasses import asdict, dataclass
from types import TracebackType
from typing import Any

_EXCHANGE = re.compile(r"^- exchange (\d+):", re.MULTILINE)
_USER_LINE = re.compile(r"^\[(\d+)\] User: (.*)$", re.MULTILINE)
_REASK_MARK = "could not be accepted"


@dataclass
class ServerStats:
    """What the server received since the last reset."""

    requests: int = 0
    reasks: int = 0
    prompt_chars: int = 0
    #: Characters of the answer schemas sent, as `json.dumps` writes them.
    schema_chars: int = 0
    #: The most characters of one request's answer schema.
    schema_max_chars: int = 0
    peak_concurrency: int = 0
    active: int = 0
    unstructured: int = 0
    faults: int = 0
    abandoned: int = 0

    @property
    def prompt_tokens(self) -> int:
        """Prompt tokens estimated as characters / 4 (rounded up)."""
        return -(-self.prompt_chars // 4)

    @property
    def schema_tokens(self) -> int:
        """Answer-schema tokens estimated the same way (characters / 4, rounded up)."""
        return -(-self.schema_chars // 4)


def _flip(key: str) -> bool:
    """A deterministic, roughly balanced boolean for a key (so verdicts are not all alike)."""
    return hashlib.sha256(key.encode()).digest()[0] % 4 != 0


def _bullets_after_verdict_line(prompt: str) -> list[str]:
    """The "- item" lines right after the line that asks for "exactly one verdict" per item (an
    item written as a JSON string is decoded)."""
    lines = prompt.splitlines()
    for i, line in enumerate(lines):
        if "verdict" in line and line.rstrip().endswith(":"):
            out = []
            for item in lines[i + 1 :]:
                if not item.startswith("- "):
                    break
                out.append(_unquoted(item[2:].strip()))
            return out
    return []


def _unquoted(text: str) -> str:
    if text.startswith('"'):
        with contextlib.suppress(ValueError):
            return str(json.loads(text))
    return text


def _resolve(schema: dict[str, Any], defs: dict[str, Any]) -> dict[str, Any]:
    ref = schema.get("$ref")
    if isinstance(ref, str) and ref.startswith("#/$defs/"):
        return dict(defs[ref.split("/")[-1]])
    if "anyOf" in schema:
        options = [s for s in schema["anyOf"] if s.get("type") != "null"]
        return _resolve(options[0], defs) if options else {"type": "null"}
    return schema


def _string(schema: dict[str, Any], text: str) -> str:
    limit = schema.get("maxLength")
    if isinstance(limit, int):
        return text[:limit]
    return text


class _Builder:
    """Builds one answer from a JSON schema and the prompt it answers."""

    def __init__(self, defs: dict[str, Any], prompt: str) -> None:
        self.defs = defs
        self.prompt = prompt

    def value(self, schema: dict[str, Any], name: str, key: str) -> Any:
        schema = _resolve(schema, self.defs)
        kind = schema.get("type")
        if "enum" in schema:
            return schema["enum"][0]
        if kind == "object" or "properties" in schema:
            props: dict[str, Any] = schema.get("properties", {})
            return {n: self.value(s, n, key) for n, s in props.items()}
        if kind == "array":
            return self.array(_resolve(schema.get("items", {}), self.defs))
        if kind == "boolean":
            return _flip(f"{name}:{key}")
        if kind == "integer":
            return 0
        if kind == "number":
            return 0.5
        if kind == "string":
            return _string(schema, "" if name == "reason" and _flip(key) else f"{name} {key}")
        return None

    def array(self, item: dict[str, Any]) -> list[Any]:
        props: dict[str, Any] = item.get("properties", {})
        if "message_index" in props:  # topic extraction: one topic per user message
            return [
                {
                    "topic": _string(props["topic"], " ".join(text.split()[:4]) or f"msg {i}"),
                    "message_index": int(i),
                    "quote": _string(props["quote"], text),
                }
                for i, text in _USER_LINE.findall(self.prompt)
            ]
        if "exchange" in props:
            return [self.keyed(item, "exchange", int(n)) for n in _EXCHANGE.findall(self.prompt)]
        for key in ("message", "intention"):  # "- message N: ..." target lines (issue 13)
            found = re.findall(rf"^- {key} (\d+):", self.prompt, re.MULTILINE)
            if key in props and found:
                return [self.keyed(item, key, int(n)) for n in found]
        if "topic" in props:
            return [self.keyed(item, "topic", t) for t in _bullets_after_verdict_line(self.prompt)]
        return [self.value(item, "item", "0")]

    def keyed(self, item: dict[str, Any], field: str, key: Any) -> dict[str, Any]:
        answer = self.value(item, "", str(key))
        answer[field] = key
        return dict(answer)


def schema_chars(body: dict[str, Any]) -> int:
    """Characters of a request's answer schema as `json.dumps` writes it (0 without one)."""
    schema = ((body.get("response_format") or {}).get("json_schema") or {}).get("schema")
    if schema is None:
        return 0
    return len(json.dumps(schema))


def answer_for(body: dict[str, Any]) -> str:
    """The JSON text answering a chat-completions request body (`{}` without a schema)."""
    messages = body.get("messages") or []
    prompt = next((str(m.get("content", "")) for m in messages if m.get("role") == "user"), "")
    fmt = body.get("response_format") or {}
    schema = (fmt.get("json_schema") or {}).get("schema")
    if not isinstance(schema, dict):
        return "{}"
    return json.dumps(_Builder(schema.get("$defs", {}), prompt).value(schema, "", "root"))


class FakeOpenAIServer:
    """The benchmark server: start with `with FakeOpenAIServer(delay=0.2) as server: server.url`."""

    def __init__(self, delay: float = 0.2, port: int = 0, faults: float = 0.0) -> None:
        self.delay = delay
        self.faults = faults
        self._chance = random.Random(20261201)
        self.stats = ServerStats()
        self._port = port
        self._lock = threading.Lock()
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._server: asyncio.Server | None = None
        self._thread = threading.Thread(target=self._serve, name="fake-openai", daemon=True)
        self.url = ""

    def __enter__(self) -> FakeOpenAIServer:
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("the fake OpenAI server did not start")
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def reset(self) -> ServerStats:
        """Return the counts so far and start counting again."""
        with self._lock:
            old, self.stats = self.stats, ServerStats()
        return old

    def close(self) -> None:
        """Stop the server and its thread."""
        if self._thread.is_alive():
            self._loop.call_soon_threadsafe(self._loop.stop)
            self._thread.join(5)

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._server = self._loop.run_until_complete(
            asyncio.start_server(self._connection, "127.0.0.1", self._port, backlog=256)
        )
        port = self._server.sockets[0].getsockname()[1]
        self.url = f"http://127.0.0.1:{port}/v1"
        self._ready.set()
        try:
            self._loop.run_forever()
        finally:
            self._server.close()
            pending = asyncio.all_tasks(self._loop)
            for task in pending:
                task.cancel()
            self._loop.run_until_complete(asyncio.gather(*pending, return_exceptions=True))
            self._loop.close()

    async def _connection(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(
            ConnectionError, asyncio.IncompleteReadError, asyncio.CancelledError
        ):
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.decode("latin-1").split("\r\n")
                headers = {}
                for line in lines[1:]:
                    if ":" in line:
                        name, value = line.split(":", 1)
                        headers[name.strip().lower()] = value.strip()
                body = await reader.readexactly(int(headers.get("content-length", "0")))
                status, payload = await self._handle(lines[0], body, reader)
                if status == 0:
                    break  # the client hung up before its answer
                extra = "Retry-After: 1\r\n" if status == 429 else ""
                writer.write(
                    f"HTTP/1.1 {status} {'OK' if status == 200 else 'Error'}\r\n"
                    f"Content-Type: application/json\r\n{extra}"
                    f"Content-Length: {len(payload)}\r\n\r\n".encode()
                    + payload
                )
                await writer.drain()
                if headers.get("connection", "").lower() == "close":
                    break
        writer.close()

    async def _handle(
        self, request_line: str, raw: bytes, reader: asyncio.StreamReader
    ) -> tuple[int, bytes]:
        parts = request_line.split()
        if len(parts) >= 2 and parts[1] == "/stats":  # GET reads the counts, POST also resets
            stats = self.reset() if parts[0] == "POST" else self.stats
            counts = {"prompt_tokens": stats.prompt_tokens, "schema_tokens": stats.schema_tokens}
            return 200, json.dumps({**asdict(stats), **counts}).encode()
        if len(parts) < 2 or parts[0] != "POST" or not parts[1].endswith("/chat/completions"):
            return 404, json.dumps({"error": {"message": f"no route {request_line}"}}).encode()
        body: dict[str, Any] = json.loads(raw or b"{}")
        messages = body.get("messages") or []
        chars = sum(len(str(m.get("content", ""))) for m in messages)
        with self._lock:
            stats = self.stats
            stats.requests += 1
            stats.prompt_chars += chars
            sent = schema_chars(body)
            stats.schema_chars += sent
            stats.schema_max_chars = max(stats.schema_max_chars, sent)
            stats.reasks += any(_REASK_MARK in str(m.get("content", "")) for m in messages)
            stats.unstructured += "json_schema" not in (body.get("response_format") or {})
            fault = (
                self._chance.choice((429, 500, 503)) if self._chance.random() < self.faults else 0
            )
            stats.faults += bool(fault)
            stats.active += 1
            stats.peak_concurrency = max(stats.peak_concurrency, stats.active)
        try:
            if fault:
                error = {"message": f"injected {fault}", "type": "injected", "code": fault}
                return fault, json.dumps({"error": error}).encode()
            if await _hung_up_within(reader, self.delay):
                with self._lock:
                    stats.abandoned += 1
                return 0, b""
            content = answer_for(body)
        finally:
            with self._lock:
                stats.active -= 1
        return 200, json.dumps(_completion(body, content, chars)).encode()


async def _hung_up_within(reader: asyncio.StreamReader, seconds: float) -> bool:
    """Wait `seconds`; True (at once) if the client closes the connection meanwhile."""
    eof = asyncio.ensure_future(reader.read(1))
    try:
        done, _ = await asyncio.wait({eof}, timeout=seconds)
    finally:
        eof.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await eof  # the reader is free again before the next request is read
    return bool(done) and eof.exception() is None and eof.result() == b""


class ServerProcess:
    """The same server in a child process (own core, own GIL), so it never slows the client."""

    def __init__(self, delay: float = 0.2, faults: float = 0.0) -> None:
        self.delay = delay
        self.faults = faults
        self.url = ""
        self._process: subprocess.Popen[str] | None = None

    def __enter__(self) -> ServerProcess:
        command = [sys.executable, __file__, "--delay", str(self.delay)]
        command += ["--faults", str(self.faults)]
        self._process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
        assert self._process.stdout is not None
        line = self._process.stdout.readline()
        if not line.startswith("base_url: "):
            self.close()
            raise RuntimeError(f"the fake OpenAI server did not start: {line!r}")
        self.url = line.split(": ", 1)[1].strip()
        return self

    def __exit__(
        self,
        kind: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.close()

    def reset(self) -> ServerStats:
        """Return the server's counts so far and start counting again."""
        request = urllib.request.Request(self.url.removesuffix("/v1") + "/stats", method="POST")
        with urllib.request.urlopen(request, timeout=10) as response:
            data = json.loads(response.read())
        data.pop("prompt_tokens", None)
        data.pop("schema_tokens", None)
        return ServerStats(**data)

    def close(self) -> None:
        """Stop the child process (it was started by this object)."""
        if self._process is not None and self._process.poll() is None:
            self._process.terminate()
            self._process.wait(10)


def _completion(body: dict[str, Any], content: str, chars: int) -> dict[str, Any]:
    prompt_tokens = -(-chars // 4)
    completion_tokens = -(-len(content) // 4)
    return {
        "id": "chatcmpl-bench",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": str(body.get("model", "bench")),
        "choices": [
            {
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop",
            }
        ],
        "usage": {
            "prompt_tokens": prompt_tokens,
            "completion_tokens": completion_tokens,
            "total_tokens": prompt_tokens + completion_tokens,
        },
    }


def main() -> int:
    """Serve until interrupted, printing the base URL and, at the end, the counts."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--delay", type=float, default=0.2, help="seconds before each answer")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--faults", type=float, default=0.0, help="share answered 429/500/503")
    args = parser.parse_args()
    with FakeOpenAIServer(args.delay, args.port, args.faults) as server:
        print(f"base_url: {server.url}", flush=True)
        stop = threading.Event()
        signal.signal(signal.SIGTERM, lambda *_: stop.set())
        with contextlib.suppress(KeyboardInterrupt):
            stop.wait()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
