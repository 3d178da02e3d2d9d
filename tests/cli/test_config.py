"""`convoeval run --config FILE` and `[tool.convoeval.run]` in ./pyproject.toml (issue 33 §1):
the options of the file take effect (seen at a local server), the command line wins, each
`[[judges]]` member gets its own endpoint and key, and a wrong key or value exits 2 naming the
file and the key."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from _cli import convoeval
from _orders import meta, write_orders

GOAL = "agent_goal_accuracy_with_reference"
GOOD_GOAL = {"end_state": "the order was found", "achieved": True, "reason": "it was found"}


def _convoeval(*args: str, cwd: Path, **env: str) -> subprocess.CompletedProcess[str]:
    return convoeval(*args, cwd=cwd, env={**os.environ, "OPENAI_API_KEY": "sk-shared", **env})


def test_the_config_options_take_effect_and_the_command_line_wins(
    tmp_path: Path, fault_server: Any
) -> None:
    write_orders(tmp_path / "d.jsonl", 6)
    (tmp_path / "run.toml").write_text(
        f'metric = ["{GOAL}"]\njudge = ["openai/m@{fault_server.url}"]\nconcurrency = 2\n'
        f"no-cache = true\nquiet = true\nthreshold = {{{GOAL} = 0.75}}\n"
        'price = {"m" = [0.15, 0.6]}\n'
    )
    fault_server.reply(GOOD_GOAL, gather=2).forever()
    done = _convoeval("run", "d.jsonl", "--config", "run.toml", "-o", "a.jsonl", cwd=tmp_path)
    assert done.returncode == 0, done.stderr
    assert fault_server.attempts == 6 and fault_server.peak == 2  # concurrency = 2 of the file
    assert meta(tmp_path / "a.jsonl")["metrics"][0]["threshold"] == 0.75
    assert "--price / prices=" in done.stdout  # the file's price is the one used

    fault_server.attempts = fault_server.peak = 0
    fault_server.reply(GOOD_GOAL, gather=3).forever()
    args = ["--threshold", f"{GOAL}=0.5", "--concurrency", "3"]
    done = _convoeval(
        "run", "d.jsonl", "--config", "run.toml", "-o", "b.jsonl", *args, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    assert fault_server.attempts == 6 and fault_server.peak == 3  # the command line's 3
    assert meta(tmp_path / "b.jsonl")["metrics"][0]["threshold"] == 0.5


def test_each_judges_table_sends_its_own_key_to_its_own_server(
    tmp_path: Path, fault_server: Any
) -> None:
    other = type(fault_server)()
    try:
        fault_server.responder = other.responder = lambda body: GOOD_GOAL
        write_orders(tmp_path / "d.jsonl", 1)
        (tmp_path / "pyproject.toml").write_text(
            '[project]\nname = "x"\n\n[tool.convoeval.run]\n'
            f'metric = "{GOAL}"\nno_cache = true\n\n'
            f'[[tool.convoeval.run.judges]]\nspec = "openai/a"\nbase_url = "{fault_server.url}"\n'
            f'timeout = 30\n\n[[tool.convoeval.run.judges]]\nspec = "openai/b@{other.url}"\n'
            'api_key_env = "LOCAL_KEY"\nmax_tokens = 300\n'
        )
        done = _convoeval("run", "d.jsonl", "-o", "r.jsonl", "-q", cwd=tmp_path, LOCAL_KEY="sk-l")
        assert done.returncode == 0, done.stderr
        assert {h.get("authorization") for h in fault_server.headers} == {"Bearer sk-shared"}
        assert {h.get("authorization") for h in other.headers} == {"Bearer sk-l"}
        assert [body["model"] for body in other.bodies] == ["b"]
        assert other.bodies[0]["max_tokens"] == 300

        # A member's key and the run-wide --api-key: refused, naming both.
        both = _convoeval("run", "d.jsonl", "--api-key", "sk-x", cwd=tmp_path, LOCAL_KEY="sk-l")
        assert both.returncode == 2, both.stderr
        assert "[[judges]] table 2 (openai/b@" in both.stderr
        assert "sets api_key_env, and the run-wide --api-key" in both.stderr
        assert "sk-x" not in both.stderr and "sk-l" not in both.stderr
        # --judge on the command line replaces the file's members.
        alone = _convoeval(
            "run", "d.jsonl", "-o", "s.jsonl", "-q", "--judge", f"openai/c@{other.url}",
            cwd=tmp_path,
        )  # fmt: skip
        assert alone.returncode == 0, alone.stderr
        assert [body["model"] for body in other.bodies] == ["b", "c"]
    finally:
        other.close()


def test_a_members_base_url_and_its_specs_url_must_agree(tmp_path: Path) -> None:
    write_orders(tmp_path / "d.jsonl", 1)
    (tmp_path / "c.toml").write_text(
        '[[judges]]\nspec = "openai/a@http://127.0.0.1:9/v1"\nbase_url = "http://127.0.0.1:10/v1"\n'
    )
    done = _convoeval("run", "d.jsonl", "--config", "c.toml", "-m", GOAL, cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "c.toml: [[judges]] table 1 (openai/a@http://127.0.0.1:9/v1)" in done.stderr
    assert "its base_url 'http://127.0.0.1:10/v1' names another" in done.stderr


def test_unknown_keys_and_wrong_types_name_the_file_and_the_key(tmp_path: Path) -> None:
    write_orders(tmp_path / "d.jsonl", 1)
    cases = {
        "concurency = 3\n": "c.toml: unknown key 'concurency' (did you mean 'concurrency'?)",
        'concurrency = "8"\n': "c.toml: key 'concurrency' must be a whole number, not '8'",
        "concurrency = 0\n": "c.toml: key 'concurrency': 0 is not in the range x>=1",
        "quiet = 1\n": "c.toml: key 'quiet' must be true or false, not 1",
        'threshold = {m = "x"}\n': "c.toml: key 'threshold': 'm' must be a number, not 'x'",
        'api_key = "sk-secret"\n': "c.toml: key 'api_key': keep API keys out of files",
        '[[judges]]\nspec = "openai/a"\ntimeot = 3\n':
            "c.toml: [[judges]] table 1: unknown key 'timeot' (did you mean 'timeout'?)",
        'concurrency = 3\n[[judges]]\nspec = "openai/a"\nmax_tokens = "9"\n':
            "c.toml: [[judges]] table 1: key 'max_tokens' must be int, not '9'",
    }  # fmt: skip
    for text, message in cases.items():
        (tmp_path / "c.toml").write_text(text)
        done = _convoeval("run", "d.jsonl", "--config", "c.toml", cwd=tmp_path)
        assert done.returncode == 2, (text, done.stderr)
        assert message in done.stderr, (text, done.stderr)
        assert "Traceback" not in done.stderr and "sk-secret" not in done.stderr
    (tmp_path / "pyproject.toml").write_text("[tool.convoeval.run]\nlimt = 1\n")
    done = _convoeval("run", "d.jsonl", cwd=tmp_path)
    assert done.returncode == 2
    assert "pyproject.toml: unknown key 'limt' (did you mean 'limit'?)" in done.stderr


def test_a_pyproject_without_the_table_is_not_read(tmp_path: Path) -> None:
    write_orders(tmp_path / "d.jsonl", 2)
    (tmp_path / "pyproject.toml").write_text('[project]\nname = "x"\n[tool.other]\nlimit = 0\n')
    done = _convoeval("run", "d.jsonl", "-m", "tool_call_accuracy", "-q", cwd=tmp_path)
    assert done.returncode == 0, done.stderr


def test_the_readme_config_example_is_read_and_a_member_option_must_agree(tmp_path: Path) -> None:
    """The README's example file is accepted key by key (it stops at its member's unset key
    variable, before any request); a member's own concurrency beside a different run-wide one
    is refused naming both."""
    readme = (Path(__file__).resolve().parents[2] / "README.md").read_text(encoding="utf-8")
    example = readme.split("```toml\n", 1)[1].split("```", 1)[0]
    (tmp_path / "run.toml").write_text(example)
    write_orders(tmp_path / "d.jsonl", 1)
    done = _convoeval("run", "d.jsonl", "--config", "run.toml", cwd=tmp_path)
    assert done.returncode == 2, done.stderr
    assert "run.toml: [[judges]] table 2 (openai/qwen2.5) takes its key" in done.stderr
    assert "variable 'LOCAL_KEY', which is not set" in done.stderr
    (tmp_path / "c.toml").write_text(
        'concurrency = 3\n[[judges]]\nspec = "openai/a"\nconcurrency = 2\n'
    )
    both = _convoeval("run", "d.jsonl", "--config", "c.toml", "-m", GOAL, cwd=tmp_path)
    assert both.returncode == 2, both.stderr
    assert (
        "c.toml: [[judges]] table 1 (openai/a) sets concurrency, and the run-wide " in both.stderr
    )
    assert "--concurrency 3 says otherwise: give one" in both.stderr


def test_an_invalid_pyproject_is_noted_and_the_run_goes_on(tmp_path: Path) -> None:
    """Without --config, ./pyproject.toml may belong to another tool: a file that is not TOML
    is named in a note, and the run goes on without it."""
    (tmp_path / "pyproject.toml").write_text("[project\nname = 'x'\n")
    data = tmp_path / "d.jsonl"
    data.write_text(
        '{"user_input": [{"type": "human", "content": "hi"}], "reference_tool_calls": []}\n'
    )
    done = subprocess.run(
        [sys.executable, "-m", "convoeval.cli", "run", "d.jsonl", "-m", "tool_call_f1", "-q"],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 0, done.stderr
    assert "pyproject.toml is not valid TOML" in done.stderr and "is not read" in done.stderr
