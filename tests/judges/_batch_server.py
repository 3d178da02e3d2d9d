"""A small OpenAI Files + Batches server on 127.0.0.1 for tests (and benchmarks).

It stores uploaded files, creates batches, and works through each batch in a background thread
after `delay` seconds (validating, in_progress with growing request counts, completed or
expired), answering every line with `responder(body)` (default: a schema-valid answer built from
the request's JSON schema and prompt). Faults on demand: `lose` (batch numbers, from 1, that
answer 404 once created), `hide` (batch numbers whose creation is answered 500 although the batch
was created), `expire` (batch numbers that expire after half their lines), `refuse` (batch
number -> (code, message): the batch ends `failed` while validating, with that `errors` entry
and no output file, as OpenAI refuses a whole batch), `fail`
(a function of the custom_id, how often it was submitted and the request body: an HTTP status,
or a status and message, for an error line; None for an answer), and `hold` (batches are not
worked on until `release()`). It counts every custom_id submitted (`submitted`), the lines of
each batch (`batches`) and the polls.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
import time
from collections import Counter
from collections.abc import Callable
from email.parser import BytesParser
from email.policy import HTTP
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

_USER = re.compile(r"^\[(\d+)\] User: (.*)$", re.MULTILINE)


def schema_answer(body: dict[str, Any]) -> dict[str, Any]:
    """A schema-valid answer: topics from the transcript's user lines, every boolean true."""
    messages = body.get("messages") or []
    prompt = next((str(m["content"]) for m in messages if m.get("role") == "user"), "")
    schema = ((body.get("response_format") or {}).get("json_schema") or {}).get("schema")
    if schema is None:  # JSON mode: the schema is the system prompt's last line
        schema = json.loads(str(messages[0]["content"]).rsplit("\n", 1)[-1])
    users = _USER.findall(prompt)
    defs = schema.get("$defs", {})

    def value(node: dict[str, Any], name: str) -> Any:
        ref = node.get("$ref")
        if isinstance(ref, str):
            node = defs[ref.rsplit("/", 1)[-1]]
        if "enum" in node:
            return node["enum"][0]
        kind = node.get("type")
        if kind == "object" or "properties" in node:
            return {k: value(v, k) for k, v in node.get("properties", {}).items()}
        if kind == "array":
            item = node.get("items", {})
            ref = item.get("$ref")
            item = defs[ref.rsplit("/", 1)[-1]] if isinstance(ref, str) else item
            if "message_index" in item.get("properties", {}):
                return [
                    {"topic": " ".join(t.split()[:4]), "message_index": int(i), "quote": t[:200]}
                    for i, t in users
                ]
            return []
        if kind == "boolean":
            return True
        if kind in ("integer", "number"):
            return 1
        return name or "x"

    return dict(value(schema, ""))


class BatchServer:
    """The server; `url` is its base URL (`http://127.0.0.1:PORT/v1`)."""

    def __init__(
        self,
        responder: Callable[[dict[str, Any]], Any] = schema_answer,
        *,
        delay: float = 0.005,
        port: int = 0,
    ) -> None:
        self.responder = responder
        self.delay = delay
        self.lose: set[int] = set()
        self.expire: set[int] = set()
        #: Batch numbers refused as a whole (status failed): the code and message of the error.
        self.refuse: dict[int, tuple[str, str]] = {}
        #: Batch numbers whose creation is answered 500 although the batch was created.
        self.hide: set[int] = set()
        self.fail: Callable[[str, int, dict[str, Any]], int | tuple[int, str] | None] = (
            lambda cid, times, body: None
        )
        self.submitted: Counter[str] = Counter()
        self.batches: list[list[str]] = []
        self.polls = 0
        #: The Authorization headers received (the client's key must arrive, and only there).
        self.authorizations: set[str] = set()
        self._go = threading.Event()
        self._go.set()
        self._lock = threading.Lock()
        self._files: dict[str, bytes] = {}
        self._state: dict[str, dict[str, Any]] = {}
        self._lost: set[str] = set()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", port), _handler(self))
        self._httpd.daemon_threads = True
        host, bound = self._httpd.server_address[:2]
        self.url = f"http://{host!s}:{bound}/v1"
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()

    def hold(self) -> None:
        """Batches created from now on wait (validating) until `release()`."""
        self._go.clear()

    def release(self) -> None:
        self._go.set()

    def close(self) -> None:
        self._go.set()
        self._httpd.shutdown()
        self._httpd.server_close()

    def twice(self) -> list[str]:
        """custom_ids submitted more than once."""
        return sorted(cid for cid, n in self.submitted.items() if n > 1)

    # Server side.
    def _file(self, data: bytes, purpose: str, name: str) -> dict[str, Any]:
        with self._lock:
            file_id = f"file-{len(self._files) + 1}"
            self._files[file_id] = data
        return {
            "id": file_id,
            "object": "file",
            "bytes": len(data),
            "created_at": int(time.time()),
            "filename": name,
            "purpose": purpose,
            "status": "processed",
        }

    def _create(self, request: dict[str, Any]) -> dict[str, Any]:
        data = self._files[request["input_file_id"]]
        lines = [json.loads(raw) for raw in data.splitlines() if raw.strip()]
        with self._lock:
            number = len(self.batches) + 1
            batch_id = f"batch_{number}"
            ids = [line["custom_id"] for line in lines]
            times = {cid: self.submitted[cid] for cid in ids}
            self.submitted.update(ids)
            self.batches.append(ids)
            state = self._state[batch_id] = {
                "id": batch_id,
                "object": "batch",
                "endpoint": request["endpoint"],
                "input_file_id": request["input_file_id"],
                "completion_window": request["completion_window"],
                "status": "validating",
                "created_at": int(time.time()),
                "metadata": request.get("metadata"),
                "request_counts": {"total": len(lines), "completed": 0, "failed": 0},
            }
            if number in self.lose:
                self._lost.add(batch_id)
            shown = dict(state)
        threading.Thread(
            target=self._work, args=(batch_id, number, lines, times), daemon=True
        ).start()
        return shown

    def _work(
        self, batch_id: str, number: int, lines: list[dict[str, Any]], times: dict[str, int]
    ) -> None:
        time.sleep(self.delay)
        self._go.wait()
        if number in self.refuse:  # refused while validating: nothing is run
            code, message = self.refuse[number]
            error = {"code": code, "message": message, "param": None, "line": 1}
            errors = {"object": "list", "data": [error]}
            self._set(batch_id, status="failed", errors=errors, failed_at=int(time.time()))
            return
        self._set(batch_id, status="in_progress")
        out: list[bytes] = []
        errors: list[bytes] = []
        counts = {"total": len(lines), "completed": 0, "failed": 0}
        cut = len(lines) // 2 if number in self.expire else len(lines)
        for i, line in enumerate(lines):
            cid = line["custom_id"]
            if i >= cut:
                error = {"code": "batch_expired", "message": "the batch expired"}
                errors.append(_line(cid, None, error))
                continue
            status = self.fail(cid, times[cid], line["body"])
            if status is not None:
                status, message = status if isinstance(status, tuple) else (status, "injected")
                body = {"error": {"message": f"{message} {status}", "type": "injected"}}
                errors.append(_line(cid, {"status_code": status, "body": body}, None))
                counts["failed"] += 1
            else:
                answer = self.responder(line["body"])
                text = answer if isinstance(answer, str) else json.dumps(answer)
                out.append(_line(cid, {"status_code": 200, "body": _completion(text)}, None))
                counts["completed"] += 1
            self._set(batch_id, request_counts=dict(counts))
        time.sleep(self.delay)
        final = {"status": "expired" if cut < len(lines) else "completed"}
        if out:
            final["output_file_id"] = self._file(b"".join(out), "batch_output", "out")["id"]
        if errors:
            final["error_file_id"] = self._file(b"".join(errors), "batch_output", "err")["id"]
        self._set(batch_id, **final)

    def _set(self, batch_id: str, **fields: Any) -> None:
        with self._lock:
            self._state[batch_id].update(fields)

    def _get(self, batch_id: str) -> dict[str, Any] | None:
        with self._lock:
            self.polls += 1
            if batch_id in self._lost or batch_id not in self._state:
                return None
            return dict(self._state[batch_id])

    def _list(self) -> dict[str, Any]:
        with self._lock:
            data = [dict(s) for s in reversed(self._state.values()) if s["id"] not in self._lost]
        return {"object": "list", "data": data, "has_more": False}


def _line(cid: str, response: dict[str, Any] | None, error: dict[str, Any] | None) -> bytes:
    line = {"id": f"req-{cid[:8]}", "custom_id": cid, "response": response, "error": error}
    return json.dumps(line).encode() + b"\n"


def _completion(text: str) -> dict[str, Any]:
    return {
        "id": "chatcmpl-batch",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": "batch-model",
        "choices": [
            {"index": 0, "message": {"role": "assistant", "content": text}, "finish_reason": "stop"}
        ],
        "usage": {"prompt_tokens": 20, "completion_tokens": 10, "total_tokens": 30},
    }


def _handler(server: BatchServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            return

        def _send(self, status: int, payload: Any) -> None:
            data = payload if isinstance(payload, bytes) else json.dumps(payload).encode()
            self.send_response(status)
            kind = "application/octet-stream" if isinstance(payload, bytes) else "application/json"
            self.send_header("Content-Type", kind)
            self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def _missing(self) -> None:
            self._send(404, {"error": {"message": f"no such thing: {self.path}"}})

        def parse_request(self) -> bool:
            parsed = super().parse_request()
            if parsed:
                server.authorizations.add(self.headers.get("Authorization", ""))
            return parsed

        def do_GET(self) -> None:
            path = self.path.split("?")[0].removeprefix("/v1")
            parts = path.strip("/").split("/")
            if parts == ["batches"]:
                self._send(200, server._list())
            elif len(parts) == 2 and parts[0] == "batches":
                state = server._get(parts[1])
                self._send(200, state) if state is not None else self._missing()
            elif len(parts) == 3 and parts[0] == "files" and parts[2] == "content":
                data = server._files.get(parts[1])
                self._send(200, data) if data is not None else self._missing()
            else:
                self._missing()

        def do_POST(self) -> None:
            raw = self.rfile.read(int(self.headers.get("Content-Length") or 0))
            path = self.path.split("?")[0].removeprefix("/v1").strip("/")
            if path == "files":
                head = f"Content-Type: {self.headers['Content-Type']}\r\n\r\n".encode()
                form = BytesParser(policy=HTTP).parsebytes(head + raw)
                fields: dict[str, Any] = {}
                for part in form.iter_parts():
                    name = part.get_param("name", header="content-disposition")
                    fields[str(name)] = part.get_payload(decode=True)
                purpose = fields["purpose"].decode()
                self._send(200, server._file(fields["file"], purpose, "input.jsonl"))
            elif path == "batches":
                made = server._create(json.loads(raw))
                if int(made["id"].removeprefix("batch_")) in server.hide:
                    self._send(500, {"error": {"message": "the answer was lost"}})
                else:
                    self._send(200, made)
            else:
                self._missing()

    return Handler


def main() -> int:
    """Serve until stopped (SIGTERM or Ctrl-C), printing the base URL first."""
    import argparse
    import signal

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--delay", type=float, default=0.005, help="seconds before each stage")
    parser.add_argument("--port", type=int, default=0)
    args = parser.parse_args()
    server = BatchServer(delay=args.delay, port=args.port)
    print(f"base_url: {server.url}", flush=True)
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())
    with contextlib.suppress(KeyboardInterrupt):
        stop.wait()
    server.close()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
