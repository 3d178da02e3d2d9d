"""tests/_cli.py runs the command line as a real process of its own, forked from a zygote: its
exit code, stdout and stderr apart, its environment, working directory, argv and stdin are the
call's, it runs beside another call, a crash or a kill is seen as one, and for the same command
it answers what a fresh `python -m convoeval.cli` answers."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

import pytest

from _cli import convoeval

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "support.jsonl"

#: A bot the `simulate` command imports from the working directory: code that runs inside the
#: command's process and tells what that process is, then does what the scenario asks.
_BOT = """
import json, os, sys, time

def answer(messages):
    facts = {
        "pid": os.getpid(), "cwd": os.getcwd(), "marker": os.environ.get("RUNNER_MARKER"),
        "gone": os.environ.get("RUNNER_GONE"),
        "argv": sys.argv, "path0": sys.path[0], "main": sys.modules["__main__"].__spec__.name,
        "stdin": sys.stdin.read(), "isatty": sys.stdout.isatty(), "encoding": sys.stdout.encoding,
    }
    with open("facts.json", "w") as handle:
        json.dump(facts, handle)
    what = os.environ.get("RUNNER_DO", "")
    print("from the bot to stdout " + "x" * (200_000 if what == "flood" else 0))
    print("from the bot to stderr", file=sys.stderr)
    sys.stdout.flush()
    if what == "segfault":
        import ctypes
        ctypes.string_at(0)
    if what == "exit7":
        os._exit(7)
    if what == "sleep":
        time.sleep(60)
    if what.startswith("meet "):  # wait until the other call's bot is running too
        mine, other = what.split()[1:]
        open(mine, "w").close()
        deadline = time.monotonic() + 30
        while not os.path.exists(other) and time.monotonic() < deadline:
            time.sleep(0.01)
    return "ok"
"""
USER = {"decision": "continue", "message": "hello", "reason": "starting"}


def _simulate(folder: Path, url: str, **kw: Any) -> subprocess.CompletedProcess[str]:
    """`convoeval simulate` with the bot above, one user turn (the local server plays the user)."""
    (folder / "mybot.py").write_text(_BOT)
    (folder / "s.jsonl").write_text(json.dumps({"scenario": "say hello"}) + "\n")
    args = ["simulate", "s.jsonl", "--bot-callable", "mybot:answer", "--max-turns", "1"]
    args += ["--user-model", "openai/user", "--base-url", url, "--api-key", "sk-t", "--no-cache"]
    return convoeval(*args, cwd=folder, **kw)


def _facts(folder: Path) -> dict[str, Any]:
    facts: dict[str, Any] = json.loads((folder / "facts.json").read_text())
    return facts


@pytest.mark.parametrize("fork", [True, False])
def test_the_command_gets_the_calls_env_cwd_argv_and_stdin(
    tmp_path: Path, fault_server: Any, fork: bool, monkeypatch: pytest.MonkeyPatch
) -> None:
    fault_server.responder = lambda body: USER
    env = {**os.environ, "RUNNER_MARKER": "m-41"}
    monkeypatch.setenv("RUNNER_GONE", "only in the test's environment")
    done = _simulate(tmp_path, fault_server.url, env=env, input="typed in", fork=fork)
    assert done.returncode == 0, done.stderr
    facts = _facts(tmp_path)
    assert facts["pid"] != os.getpid()
    assert facts["cwd"] == str(tmp_path) == facts["path0"]  # `python -m` puts the cwd first
    assert facts["marker"] == "m-41" and "RUNNER_MARKER" not in os.environ
    assert facts["gone"] is None  # the call's environment, not the test's plus the call's
    assert facts["argv"][1:3] == ["simulate", "s.jsonl"]
    assert facts["main"] == "convoeval.cli.__main__"
    assert facts["stdin"] == "typed in" and facts["isatty"] is False
    assert "from the bot to stdout" in done.stdout and "from the bot to stdout" not in done.stderr
    assert "from the bot to stderr" in done.stderr and "from the bot to stderr" not in done.stdout
    assert (tmp_path / "s.conversations.jsonl").exists()  # a relative output, in the call's cwd


def test_without_an_environment_the_command_inherits_the_tests(
    tmp_path: Path, fault_server: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    fault_server.responder = lambda body: USER
    monkeypatch.setenv("RUNNER_MARKER", "inherited")
    monkeypatch.setenv("RUNNER_DO", "flood")  # 200 kB on stdout: more than a pipe holds
    done = _simulate(tmp_path, fault_server.url)
    assert done.returncode == 0, done.stderr
    assert _facts(tmp_path)["marker"] == "inherited"
    assert done.stdout.count("x") >= 200_000


@pytest.mark.parametrize(("what", "code"), [("exit7", 7), ("segfault", -11)])
def test_a_crash_is_the_exit_code_the_process_died_with(
    tmp_path: Path, fault_server: Any, what: str, code: int
) -> None:
    fault_server.responder = lambda body: USER
    done = _simulate(tmp_path, fault_server.url, env={**os.environ, "RUNNER_DO": what})
    assert done.returncode == code, done.stderr
    assert "from the bot to stdout" in done.stdout  # what it wrote before it died is kept


def test_a_timeout_kills_the_command(tmp_path: Path, fault_server: Any) -> None:
    fault_server.responder = lambda body: USER
    started = time.monotonic()
    with pytest.raises(subprocess.TimeoutExpired):
        _simulate(tmp_path, fault_server.url, env={**os.environ, "RUNNER_DO": "sleep"}, timeout=3)
    assert time.monotonic() - started < 30
    pid = _facts(tmp_path)["pid"]
    deadline = time.monotonic() + 10
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert not _alive(pid)


def _alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie waiting to be reaped counts as gone)."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except FileNotFoundError:
        return False
    return stat.rsplit(")", 1)[1].split()[0] != "Z"


def test_two_calls_run_at_once(tmp_path: Path, fault_server: Any) -> None:
    fault_server.responder = lambda body: USER
    done: dict[str, subprocess.CompletedProcess[str]] = {}

    def call(name: str, other: str) -> None:
        folder = tmp_path / name
        folder.mkdir()
        env = {**os.environ, "RUNNER_DO": f"meet {tmp_path / name}.here {tmp_path / other}.here"}
        done[name] = _simulate(folder, fault_server.url, env=env)

    threads = [threading.Thread(target=call, args=pair) for pair in (("a", "b"), ("b", "a"))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(120)
    assert [done[name].returncode for name in "ab"] == [0, 0]
    assert _facts(tmp_path / "a")["pid"] != _facts(tmp_path / "b")["pid"]


@pytest.mark.parametrize(
    "args",
    [
        ["--version"],
        ["no-such-command"],
        ["run", "missing.jsonl"],
        ["validate", str(EXAMPLES)],
        ["run", str(EXAMPLES), "-m", "tool_call_accuracy", "--limit", "3", "-o", "r.jsonl", "-q"],
    ],
)
def test_forked_and_fresh_processes_answer_alike(tmp_path: Path, args: list[str]) -> None:
    (tmp_path / "forked").mkdir()
    (tmp_path / "fresh").mkdir()
    forked = convoeval(*args, cwd=tmp_path / "forked")
    fresh = subprocess.run(
        [sys.executable, "-m", "convoeval.cli", *args],
        cwd=tmp_path / "fresh", capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert (forked.returncode, forked.stdout, forked.stderr) == (
        fresh.returncode,
        fresh.stdout,
        fresh.stderr,
    )


def test_a_changed_interpreter_setting_starts_a_fresh_interpreter(
    tmp_path: Path, fault_server: Any
) -> None:
    fault_server.responder = lambda body: USER
    env = {**os.environ, "PYTHONIOENCODING": "ascii"}  # read only when Python starts
    done = _simulate(tmp_path, fault_server.url, env=env)
    assert done.returncode == 0, done.stderr
    assert _facts(tmp_path)["encoding"] == "ascii"
