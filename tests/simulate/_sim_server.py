"""A scripted OpenAI-compatible server on 127.0.0.1 that plays both sides of a simulation
deterministically: the simulated user (requests for model `user-model`) and the bot (any other
model), plus a plain JSON bot at `/bot`.

The user's behaviour is read from the scenario text in its prompt: the first word is a tag that
starts every message it writes (`TAG: message K`), then `goal after N` (goal_reached once the
bot replied N times), `give up after N`, `never` (always continue), `garbage` (answers text that
is not JSON), `stops at once` (stops before the bot said anything, which the check refuses).
The bot answers `reply N to: <last user message>`. Tests replace either side (`user`, `bot`,
`http_bot`) and can block a request in `before(role, body)` (events, never sleeps). Every
request is recorded with its role and the tag of its conversation.
"""

from __future__ import annotations

import contextlib
import json
import re
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

USER_MODEL = "user-model"
BOT_MODEL = "bot-model"
#: Token counts reported per request, by role.
USER_TOKENS = (20, 10)
BOT_TOKENS = (30, 5)
_SCENARIO = re.compile(r"<<<SCENARIO\n    \| (.*?)\nSCENARIO>>>", re.DOTALL)


def scenario_of(prompt: str) -> str:
    """The scenario text shown in a user-turn prompt."""
    found = _SCENARIO.search(prompt)
    return found.group(1) if found else ""


def tag_of(text: str) -> str:
    """The conversation tag: the first word of a scenario or of a `TAG: ...` message."""
    return text.split(":")[0].split()[0] if text.strip() else ""


def default_user(prompt: str) -> str:
    """The scripted user's answer (JSON text) to a user-turn prompt."""
    scenario = scenario_of(prompt)
    tag = tag_of(scenario)
    replies = prompt.count("] Assistant:")
    if "garbage" in scenario:
        return "I am a user and I do not speak JSON"
    if "stops at once" in scenario:
        return json.dumps({"decision": "gave_up", "message": "", "reason": "bored"})
    for words, decision in (("goal after", "goal_reached"), ("give up after", "gave_up")):
        found = re.search(rf"{words} (\d+)", scenario)
        if found and replies >= int(found.group(1)):
            return json.dumps({"decision": decision, "message": "", "reason": f"{decision}!"})
    message = f"{tag}: message {replies + 1}"
    return json.dumps({"decision": "continue", "message": message, "reason": "going on"})


def default_bot(messages: list[dict[str, Any]]) -> dict[str, Any]:
    """The scripted bot's reply message to a conversation."""
    users = [m for m in messages if m.get("role") == "user"]
    last = users[-1]["content"] if users else ""
    return {"role": "assistant", "content": f"reply {len(users)} to: {last}"}


class SimServer:
    """Both sides of a simulation on one local server (see the module docstring)."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.requests: list[tuple[str, str, dict[str, Any]]] = []
        #: The Authorization header of every request ("" when none was sent).
        self.auth: list[str] = []
        #: (role, Authorization header) of every request, in the order they were answered.
        self.auth_by_role: list[tuple[str, str]] = []
        self.active: dict[str, int] = {}
        self.peak: dict[str, int] = {}
        self.user: Callable[[str, dict[str, Any]], str] = lambda prompt, body: default_user(prompt)
        self.bot: Callable[[dict[str, Any]], Any] = lambda body: default_bot(body["messages"])
        self.http_bot: Callable[[dict[str, Any]], Any] = lambda body: {
            "reply": default_bot(body["messages"])["content"]
        }
        self.before: Callable[[str, dict[str, Any]], None] = lambda role, body: None
        self.closing = threading.Event()
        self._httpd = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self._httpd.daemon_threads = True
        self._httpd.block_on_close = False
        host, port = self._httpd.server_address[:2]
        self.root = f"http://{host!s}:{port}"
        self.url = f"{self.root}/v1"
        self.bot_url = f"{self.root}/bot"
        self._thread = threading.Thread(
            target=self._httpd.serve_forever, kwargs={"poll_interval": 0.02}, daemon=True
        )
        self._thread.start()

    def close(self) -> None:
        self.closing.set()
        self._httpd.shutdown()
        self._httpd.server_close()

    def count(self, role: str, tag: str | None = None) -> int:
        """Requests received for `role` (user, bot, http_bot), of one conversation if `tag`."""
        with self.lock:
            return sum(1 for r, t, _ in self.requests if r == role and tag in (None, t))

    def bodies(self, role: str, tag: str | None = None) -> list[dict[str, Any]]:
        """The request bodies received for `role`, of one conversation if `tag`."""
        with self.lock:
            return [body for r, t, body in self.requests if r == role and tag in (None, t)]

    def answer(self, path: str, body: dict[str, Any], auth: str = "") -> tuple[int, Any]:
        """The status and JSON payload for one request (its peak in flight counted by role)."""
        role = self._role(path, body)
        with self.lock:
            self.auth_by_role.append((role, auth))
            self.active[role] = self.active.get(role, 0) + 1
            self.peak[role] = max(self.peak.get(role, 0), self.active[role])
        try:
            return self._answer(path, body)
        finally:
            with self.lock:
                self.active[role] -= 1

    def _role(self, path: str, body: dict[str, Any]) -> str:
        if path.endswith("/bot"):
            return "http_bot"
        return "user" if body.get("model") == USER_MODEL else "bot"

    def _answer(self, path: str, body: dict[str, Any]) -> tuple[int, Any]:
        if path.endswith("/bot"):
            role, tag = "http_bot", _conversation_tag(body.get("messages") or [])
        elif body.get("model") == USER_MODEL:
            prompt = next(m["content"] for m in body["messages"] if m["role"] == "user")
            role, tag = "user", tag_of(scenario_of(prompt))
        else:
            role, tag = "bot", _conversation_tag(body.get("messages") or [])
        with self.lock:
            self.requests.append((role, tag, body))
        self.before(role, body)
        if role == "http_bot":
            reply = self.http_bot(body)
            if isinstance(reply, tuple):  # (status, error message)
                return reply[0], {"error": {"message": reply[1]}}
            return 200, reply
        if role == "user":
            prompt = "\n".join(m["content"] for m in body["messages"] if m["role"] == "user")
            return 200, _completion(
                {"role": "assistant", "content": self.user(prompt, body)}, USER_TOKENS
            )
        answer = self.bot(body)
        if isinstance(answer, tuple):  # (status, error message)
            return answer[0], {"error": {"message": answer[1]}}
        return 200, _completion(answer, BOT_TOKENS)


def _conversation_tag(messages: list[dict[str, Any]]) -> str:
    first = next((m for m in messages if m.get("role") == "user"), None)
    return tag_of(str(first["content"])) if first else ""


def _completion(message: dict[str, Any], tokens: tuple[int, int]) -> dict[str, Any]:
    return {
        "id": "chatcmpl-sim",
        "object": "chat.completion",
        "model": "sim",
        "choices": [{"index": 0, "message": message, "finish_reason": "stop"}],
        "usage": {
            "prompt_tokens": tokens[0],
            "completion_tokens": tokens[1],
            "total_tokens": sum(tokens),
        },
    }


def _handler(server: SimServer) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, format: str, *args: Any) -> None:
            return

        def do_POST(self) -> None:
            length = int(self.headers.get("Content-Length") or 0)
            body = json.loads(self.rfile.read(length) or b"{}")
            with server.lock:
                server.auth.append(self.headers.get("Authorization") or "")
            path = self.path.split("?")[0]
            if not path.endswith(("/chat/completions", "/bot")):
                status, payload = 404, {"error": {"message": f"no route {self.path}"}}
            else:
                status, payload = server.answer(path, body, self.headers.get("Authorization") or "")
            data = json.dumps(payload).encode()
            with contextlib.suppress(OSError):
                self.send_response(status)
                self.send_header("Content-Type", "application/json")
                self.send_header("Content-Length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

    return Handler
