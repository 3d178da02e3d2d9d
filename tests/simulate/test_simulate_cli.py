"""`convoeval simulate` as a real command against the local two-sided server: one command from
scenarios to scored conversations and a report, the file `convoeval run` reads as it is, exit
codes, resume after SIGKILL, failures played again, API keys never written."""

from __future__ import annotations

import json
import os
import signal
import subprocess
import sys
import threading
from pathlib import Path
from typing import Any

from _sim_server import BOT_MODEL, USER_MODEL, SimServer

from _cli import convoeval


def _sides(sim: SimServer) -> list[str]:
    return [
        "--bot",
        f"openai/{BOT_MODEL}",
        "--bot-base-url",
        sim.url,
        "--user-model",
        f"openai/{USER_MODEL}",
        "--base-url",
        sim.url,
        "--no-cache",  # a later test's server may get an earlier one's port (and its answers)
    ]


def _scenarios(path: Path, records: list[dict[str, Any]]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def _lines(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines() if line.strip()]


def test_one_command_simulates_scores_and_reports(sim: SimServer, tmp_path: Path) -> None:
    topics = ["tickets", "refunds"]
    _scenarios(
        tmp_path / "support.jsonl",
        [
            {"scenario": "s1 goal after 1", "id": "a", "reference_topics": topics},
            {"scenario": "s2 give up after 2", "id": "b", "reference_topics": topics},
        ],
    )
    done = convoeval(
        "simulate",
        "support.jsonl",
        *_sides(sim),
        "--score",
        "-m",
        "conversation_relevancy",
        "--judge",
        "offline",
        "--report",
        "report.html",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    assert "simulated: 2 conversations (1 gave_up, 1 goal_reached)" in done.stdout
    assert "convoeval: a trial 1: goal_reached after 1 turn" in done.stderr
    assert "conversations: support.conversations.jsonl (2 lines)" in done.stdout
    assert "results: support.conversations.results.jsonl (2 rows)" in done.stdout
    rows = _lines(tmp_path / "support.conversations.results.jsonl")
    assert [r["id"] for r in rows] == ["a", "b"]
    assert all(isinstance(r["scores"]["conversation_relevancy"], float) for r in rows)
    assert (tmp_path / "report.html").stat().st_size > 0
    # The file is what `convoeval run` reads, as it is.
    again = convoeval(
        "run",
        "support.conversations.jsonl",
        "-m",
        "conversation_relevancy",
        "-o",
        "r.jsonl",
        "--trials",
        "simulation.scenario:conversation_relevancy",
        cwd=tmp_path,
    )
    assert again.returncode == 0, again.stderr
    assert "trials: 2 tasks by simulation.scenario" in again.stdout
    assert [r["scores"] for r in _lines(tmp_path / "r.jsonl")] == [r["scores"] for r in rows]


def test_resume_after_kill_does_not_play_finished_conversations_again(
    sim: SimServer, tmp_path: Path
) -> None:
    _scenarios(tmp_path / "s.jsonl", [{"scenario": f"s{i} goal after 1"} for i in range(1, 5)])
    reached, release = threading.Event(), threading.Event()

    def before(role: str, body: dict[str, Any]) -> None:
        if (
            role == "bot"
            and body["messages"][-1]["content"].startswith("s3")
            and not release.is_set()
        ):
            reached.set()
            release.wait(120)

    sim.before = before
    args = ["simulate", "s.jsonl", *_sides(sim), "--concurrency", "1", "-o", "c.jsonl"]
    command = [sys.executable, "-m", "convoeval.cli", *args]
    child = subprocess.Popen(command, cwd=tmp_path, stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    try:
        assert reached.wait(120), "the simulation never reached the third conversation"
        assert [r["id"] for r in _lines(tmp_path / "c.jsonl")] == ["scenario-1", "scenario-2"]
        child.send_signal(signal.SIGKILL)
        child.wait(60)
    finally:
        release.set()
        child.kill()
        child.communicate()
    before_rerun = {
        tag: len(sim.bodies("user", tag)) + len(sim.bodies("bot", tag)) for tag in ("s1", "s2")
    }
    done = convoeval(*args, cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert [r["id"] for r in _lines(tmp_path / "c.jsonl")] == [f"scenario-{i}" for i in range(1, 5)]
    after = {
        tag: len(sim.bodies("user", tag)) + len(sim.bodies("bot", tag)) for tag in ("s1", "s2")
    }
    assert after == before_rerun  # nothing of the finished conversations was sent again
    total = len(sim.requests)
    finished = convoeval(*args, cwd=tmp_path)
    assert finished.returncode == 0 and "simulated: 4 conversations" in finished.stdout
    assert "user model: 0 requests" in finished.stdout
    assert len(sim.requests) == total  # a finished simulation run again sends nothing


def test_failed_conversations_exit_4_and_are_played_again_on_request(
    sim: SimServer, tmp_path: Path
) -> None:
    _scenarios(tmp_path / "s.jsonl", [{"scenario": "s1 goal after 1"}, {"scenario": "s2 garbage"}])
    args = ["simulate", "s.jsonl", *_sides(sim), "-o", "c.jsonl", "-q"]
    done = convoeval(*args, cwd=tmp_path)
    assert done.returncode == 4, done.stderr
    assert "1 conversation failed:" in done.stderr
    assert (
        "scenario-2 trial 1 (s.jsonl:2): step 'simulate.user_turn': no valid answer" in done.stderr
    )
    assert "--retry-failed" in done.stderr
    assert len(_lines(tmp_path / "c.jsonl")) == 1
    kept = convoeval(*args, cwd=tmp_path)  # a failure is kept, as a failed row of `run` is
    assert kept.returncode == 4 and sim.count("user", "s2") == 2
    sim.user = lambda prompt, body: json.dumps(
        {
            "decision": "gave_up" if "] Assistant:" in prompt else "continue",
            "message": "s2: hi",
            "reason": "r",
        }
    )
    retried = convoeval(*args, "--retry-failed", cwd=tmp_path)
    assert retried.returncode == 0, retried.stderr
    assert [r["metadata"]["simulation"]["stop"] for r in _lines(tmp_path / "c.jsonl")] == [
        "goal_reached",
        "gave_up",
    ]
    assert json.loads((tmp_path / "c.jsonl.meta.json").read_text())["failed"] == []


def test_bad_scenarios_are_listed_before_anything_is_sent(sim: SimServer, tmp_path: Path) -> None:
    (tmp_path / "s.jsonl").write_text(
        '{"scenario": "s1 goal after 1"}\n{"scenario": "  "}\n{"scenrio": "typo"}\n'
    )
    done = convoeval("simulate", "s.jsonl", *_sides(sim), cwd=tmp_path)
    assert done.returncode == 2
    assert (
        "s.jsonl:2: scenario: Value error, must say what the user wants (it is blank)"
        in done.stderr
    )
    assert "s.jsonl:3: scenrio: unknown field" in done.stderr
    assert sim.requests == []


def test_a_bot_that_is_down_stops_the_command_at_once(sim: SimServer, tmp_path: Path) -> None:
    _scenarios(tmp_path / "s.jsonl", [{"scenario": "s1 goal after 1"}])
    sim.close()
    done = convoeval("simulate", "s.jsonl", *_sides(sim), cwd=tmp_path)
    assert done.returncode == 2
    assert "cannot reach the user model openai/user-model" in done.stderr
    assert "nothing was sent" in done.stderr


def test_name_the_bot_once(sim: SimServer, tmp_path: Path) -> None:
    _scenarios(tmp_path / "s.jsonl", [{"scenario": "s1 goal after 1"}])
    both = convoeval("simulate", "s.jsonl", *_sides(sim), "--bot-url", sim.bot_url, cwd=tmp_path)
    assert both.returncode == 2 and "name the bot once" in both.stderr
    assert sim.requests == []


def test_a_python_function_as_the_bot_with_trials(sim: SimServer, tmp_path: Path) -> None:
    (tmp_path / "mybot.py").write_text(
        "def answer(messages):\n    return 'echo: ' + messages[-1].content\n"
    )
    _scenarios(tmp_path / "s.jsonl", [{"scenario": "s1 goal after 1"}])
    done = convoeval(
        "simulate",
        "s.jsonl",
        "--bot-callable",
        "mybot:answer",
        "--user-model",
        f"openai/{USER_MODEL}",
        "--base-url",
        sim.url,
        "--no-cache",
        "--repeat",
        "2",
        "--seed",
        "3",
        "-o",
        "c.jsonl",
        cwd=tmp_path,
    )
    assert done.returncode == 0, done.stderr
    lines = _lines(tmp_path / "c.jsonl")
    assert [line["id"] for line in lines] == ["scenario-1#1", "scenario-1#2"]
    assert [line["metadata"]["simulation"]["seeds"] for line in lines] == [
        {"user": 3, "bot": None},  # a Python bot is sent no seed
        {"user": 4, "bot": None},
    ]
    assert lines[0]["user_input"][1]["content"] == "echo: s1: message 1"
    assert lines[0]["metadata"]["simulation"]["bot"] == "callable:mybot:answer"


def test_the_bots_api_key_is_sent_but_never_written_or_shown(
    sim: SimServer, tmp_path: Path
) -> None:
    secret = "sk-bot-NEVER-WRITE-THIS-31f"
    sim.http_bot = lambda body: (401, f"invalid key {sim.auth[-1]}")
    _scenarios(tmp_path / "s.jsonl", [{"scenario": "s1 goal after 1"}])
    env = {**os.environ, "MY_BOT_KEY": secret}
    done = convoeval(
        "simulate",
        "s.jsonl",
        "--bot-url",
        sim.bot_url,
        "--bot-api-key-env",
        "MY_BOT_KEY",
        "--user-model",
        f"openai/{USER_MODEL}",
        "--base-url",
        sim.url,
        "--no-cache",
        "-o",
        "c.jsonl",
        cwd=tmp_path,
        env=env,
    )
    assert done.returncode == 4, done.stderr
    assert f"Bearer {secret}" in sim.auth
    assert "HTTP 401" in done.stderr and "[REDACTED]" in done.stderr
    written = "".join(p.read_text() for p in tmp_path.iterdir() if p.is_file())
    assert secret not in done.stdout + done.stderr + written


def _python_bot(folder: Path) -> list[str]:
    (folder / "mybot.py").write_text("def answer(messages):\n    return 'ok'\n")
    return ["--bot-callable", "mybot:answer"]


def test_a_refused_key_exits_5_and_says_so(fault_server: Any, tmp_path: Path) -> None:
    fault_server.error(401, "Incorrect API key provided").forever()
    fault_server.models_answer(401, "Incorrect API key provided")
    _scenarios(tmp_path / "s.jsonl", [{"scenario": "s1 goal after 1"}])
    done = convoeval(
        "simulate", "s.jsonl", *_python_bot(tmp_path), "--user-model", "openai/user-model",
        "--base-url", fault_server.url, "--api-key", "sk-refused-31f", "--no-cache",
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 5, done.stderr  # EXIT_AUTH, as `convoeval run`
    assert "Incorrect API key provided" in done.stderr and "Traceback" not in done.stderr
    assert "sk-refused-31f" not in done.stderr + done.stdout


def test_a_bug_exits_6_with_its_traceback(tmp_path: Path) -> None:
    _scenarios(tmp_path / "s.jsonl", [{"scenario": "s1 goal after 1"}])
    code = (
        "import convoeval.simulate as simulate\n"
        "def broken(*a, **k): raise TypeError('an internal bug')\n"
        "simulate.simulate = broken\n"
        "from convoeval.cli import main\n"
        "main(['simulate', 's.jsonl', '--bot-callable', 'mybot:answer', '--user-model',\n"
        "      'openai/user-model', '--base-url', 'http://127.0.0.1:9/v1'])\n"
    )
    _python_bot(tmp_path)
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=tmp_path, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 6, done.stderr  # EXIT_BUG, as `convoeval run`
    assert "Traceback" in done.stderr and "TypeError: an internal bug" in done.stderr
    assert "error: a bug stopped the run" in done.stderr


def test_price_is_read_by_the_shared_option(sim: SimServer, tmp_path: Path) -> None:
    _scenarios(tmp_path / "s.jsonl", [{"scenario": "s1 goal after 1"}])
    for bad in ("user-model=1", "user-model=-1,2"):
        done = convoeval("simulate", "s.jsonl", *_sides(sim), "--price", bad, cwd=tmp_path)
        assert done.returncode == 2, done.stderr
        assert "Invalid value for --price: " in done.stderr, done.stderr
    assert sim.requests == []
