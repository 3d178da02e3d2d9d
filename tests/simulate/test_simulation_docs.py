"""docs/simulation.md's promises, run: the Python-function bot and the plain JSON bot as the page
shows them, the OpenAI-compatible bot's options, and `--score` judged by the user model when no
judge is named."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
import time
from pathlib import Path
from typing import Any

from _sim_server import BOT_MODEL, USER_MODEL, SimServer, default_user

from _cli import convoeval

DOC = Path(__file__).resolve().parents[2] / "docs" / "simulation.md"
#: The user model, without the answer cache (a later test's server may get an earlier one's port).
USER = ["--no-cache", "--user-model", f"openai/{USER_MODEL}"]


def _block_after(marker: str) -> str:
    """The first ```python block after `marker` in the page."""
    text = DOC.read_text(encoding="utf-8")
    found = re.search(re.escape(marker) + r".*?```python\n(.*?)```", text, re.DOTALL)
    assert found, marker
    return found.group(1)


def _scenarios(folder: Path) -> None:
    (folder / "scenarios.jsonl").write_text(
        json.dumps({"scenario": "s1 goal after 1", "id": "a"}) + "\n"
    )


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_the_python_function_bot_of_the_page(sim: SimServer, tmp_path: Path) -> None:
    (tmp_path / "mybot.py").write_text(_block_after("`mybot.py`:"))
    _scenarios(tmp_path)
    done = convoeval(
        "simulate",
        "scenarios.jsonl",
        "--bot-callable",
        "mybot:answer",
        *USER,
        "--base-url",
        sim.url,
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    (line,) = _lines(tmp_path / "scenarios.conversations.jsonl")
    assert [m["type"] for m in line["user_input"]] == ["human", "ai", "tool", "ai"]
    assert line["user_input"][1]["tool_calls"][0]["name"] == "search_orders"


def test_the_plain_json_bot_of_the_page(sim: SimServer, tmp_path: Path) -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    code = _block_after("`echo_bot.py`:").replace("8900", str(port))
    (tmp_path / "echo_bot.py").write_text(code)
    bot = subprocess.Popen([sys.executable, "echo_bot.py"], cwd=tmp_path)
    try:
        _wait_listening(port)
        _scenarios(tmp_path)
        command = re.search(r"convoeval simulate scenarios.jsonl --bot-url \S+", DOC.read_text())
        assert command is not None
        url = command.group(0).split()[-1].replace("8900", str(port))
        done = convoeval(
            "simulate",
            "scenarios.jsonl",
            "--bot-url",
            url,
            *USER,
            "--base-url",
            sim.url,
            cwd=tmp_path,
        )
    finally:
        bot.kill()
        bot.wait(30)
    assert done.returncode == 0, done.stderr
    (line,) = _lines(tmp_path / "scenarios.conversations.jsonl")
    assert line["user_input"][1]["content"] == "You said: s1: message 1"


def _wait_listening(port: int) -> None:
    """Until the bot accepts connections (at most 60 s): it has just been started."""
    deadline = time.monotonic() + 60
    while True:
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return
        except OSError:
            assert time.monotonic() < deadline, "the example bot never listened"
            time.sleep(0.05)


def test_the_openai_compatible_bot_options(sim: SimServer, tmp_path: Path) -> None:
    (tmp_path / "prompt.txt").write_text("You sell tickets.")
    tools = [{"type": "function", "function": {"name": "refund", "parameters": {"type": "object"}}}]
    (tmp_path / "tools.json").write_text(json.dumps(tools))
    _scenarios(tmp_path)
    done = convoeval(
        "simulate",
        "scenarios.jsonl",
        "--bot",
        f"openai/{BOT_MODEL}",
        "--bot-base-url",
        sim.url,
        "--bot-system-prompt",
        "prompt.txt",
        "--bot-tools",
        "tools.json",
        "--bot-api-key-env",
        "MY_BOT_KEY",
        *USER,
        "--base-url",
        sim.url,
        cwd=tmp_path,
        env={**os.environ, "MY_BOT_KEY": "bot-key-123"},
    )
    assert done.returncode == 0, done.stderr
    (body,) = sim.bodies("bot")
    assert body["messages"][0] == {"role": "system", "content": "You sell tickets."}
    assert body["tools"] == tools and "Bearer bot-key-123" in sim.auth


def test_score_is_judged_by_the_user_model_when_no_judge_is_named(
    sim: SimServer, tmp_path: Path
) -> None:
    def user(prompt: str, body: dict[str, Any]) -> str:
        if body["response_format"]["json_schema"]["name"] == "simulate_user_turn":
            return default_user(prompt)
        verdict = {"frustration": "none", "first_message": None, "reason": "calm"}
        return json.dumps(verdict)

    sim.user = user
    _scenarios(tmp_path)
    done = convoeval(
        "simulate",
        "scenarios.jsonl",
        "--bot",
        f"openai/{BOT_MODEL}",
        "--bot-base-url",
        sim.url,
        *USER,
        "--base-url",
        sim.url,
        "-m",
        "user_frustration",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    (row,) = _lines(tmp_path / "scenarios.conversations.results.jsonl")
    assert row["scores"] == {"user_frustration": 1.0}
    names = [b["response_format"]["json_schema"]["name"] for b in sim.bodies("user")]
    assert names.count("user_frustration_verdict") == 1
