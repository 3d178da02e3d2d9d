"""The pytest plugin as users meet it: the README's example run as written by a real pytest in a
subprocess, the judge option, the marker form, and an invalid record as a collection error."""

from __future__ import annotations

import ast
import json
import os
import re
import shutil
import subprocess
import sys
from importlib.metadata import entry_points
from pathlib import Path
from typing import Any

import convoeval
from _plugins import NO_UNUSED
from convoeval import evaluate

ROOT = Path(__file__).resolve().parents[1]
EXAMPLES = ROOT / "examples" / "support.jsonl"


def _pytest(directory: Path, *args: str, **env: str) -> subprocess.CompletedProcess[str]:
    """Run pytest on `directory` like a user would (the plugin loads from its entry point)."""
    names = [e.name for e in entry_points(group="pytest11")]
    assert "convoeval" in names, "the pytest11 entry point is missing: pip install -e ."
    source = str(Path(convoeval.__file__).resolve().parents[1])  # this checkout's src
    environment = {**os.environ, "PYTHONPATH": source, **env}
    command = [
        sys.executable,
        "-m",
        "pytest",
        "-q",
        "-p",
        "no:cacheprovider",
        *NO_UNUSED,
        "-rfE",
        *args,
    ]
    return subprocess.run(
        command, cwd=directory, env=environment, capture_output=True, text=True, timeout=600
    )


def _readme_example() -> str:
    readme = (ROOT / "README.md").read_text(encoding="utf-8")
    blocks = re.findall(r"```python\n(.*?)```", readme, flags=re.S)
    found = [b for b in blocks if "convoeval_cases(" in b]
    assert len(found) == 1, "the README has one pytest example"
    return found[0]


def test_readme_pytest_example_runs_as_written(tmp_path: Path) -> None:
    example = _readme_example()
    (tmp_path / "tests").mkdir()
    (tmp_path / "tests" / "test_readme_example.py").write_text(example, encoding="utf-8")
    (tmp_path / "examples").mkdir()
    shutil.copy(EXAMPLES, tmp_path / "examples" / "support.jsonl")
    done = _pytest(tmp_path, "tests")

    # The same metrics through evaluate() say which conversations must fail, and why.
    call = re.search(r"assert_conversation\(conversation, (\[.*?\])", example)
    assert call is not None
    result = evaluate(EXAMPLES, ast.literal_eval(call.group(1)), show_progress=False)
    summary = result.summary()
    expected = {
        row["id"]
        for row in result.rows()
        if any(
            score is None or score < (summary[name]["threshold"] or 0.0)
            for name, score in row["scores"].items()
        )
    }
    failed = set(
        re.findall(
            r"^FAILED tests/test_readme_example.py::test_support_bot\[(.+?)\]", done.stdout, re.M
        )
    )
    assert failed == expected and expected, done.stdout + done.stderr
    assert f"{len(failed)} failed, {len(result) - len(failed)} passed" in done.stdout
    assert "conversation 'address-wrong-zip' failed 1 of 2 metrics" in done.stdout
    assert "tool_call_accuracy: score 0.5 < threshold 1; reason:" in done.stdout
    assert done.returncode == 1


def test_judge_option_marker_form_and_argname(tmp_path: Path, fault_server: Any) -> None:
    data = tmp_path / "chats.jsonl"
    data.write_text(
        json.dumps(
            {
                "messages": [
                    {"role": "user", "content": "hi"},
                    {"role": "assistant", "content": "hello"},
                ],
                "id": "greet",
            }
        )
        + "\n",
        encoding="utf-8",
    )
    (tmp_path / "test_judge.py").write_text(
        "import pytest\n\n"
        "@pytest.mark.convoeval_cases('chats.jsonl', argname='chat')\n"
        "def test_it(chat, convoeval_judge):\n"
        "    assert chat.id == 'greet'\n"
        "    print('JUDGE', type(convoeval_judge).__name__)\n",
        encoding="utf-8",
    )
    default = _pytest(tmp_path, "-s", "--strict-markers", "test_judge.py")
    assert default.returncode == 0, default.stdout + default.stderr
    assert "JUDGE OfflineJudge" in default.stdout and "1 passed" in default.stdout
    chosen = _pytest(
        tmp_path,
        "-s",
        "--convoeval-judge",
        "openai/some-model",
        "test_judge.py",
        OPENAI_API_KEY="sk-test-not-sent",
        OPENAI_BASE_URL=fault_server.url,  # the session's judge must be reachable
    )
    assert chosen.returncode == 0, chosen.stdout + chosen.stderr
    assert "JUDGE OpenAIJudge" in chosen.stdout


def test_bad_data_is_a_collection_error_naming_file_and_line(tmp_path: Path) -> None:
    good = {"user_input": [{"type": "human", "content": "hi"}]}
    bad = {"user_input": [{"type": "user", "content": "hi"}]}
    lines = [json.dumps(good), json.dumps(bad)]
    (tmp_path / "data.jsonl").write_text("\n".join(lines) + "\n", encoding="utf-8")
    for test, data in (("bad", "data.jsonl"), ("missing", "nowhere.jsonl")):
        (tmp_path / f"test_{test}.py").write_text(
            "from convoeval.testing import convoeval_cases\n\n"
            f"@convoeval_cases({data!r})\n"
            "def test_it(conversation):\n"
            "    pass\n",
            encoding="utf-8",
        )
    done = _pytest(tmp_path, "test_bad.py", "test_missing.py")
    out = done.stdout + done.stderr
    assert done.returncode == 2, out
    assert "ERROR test_bad.py" in out and "ERROR test_missing.py" in out
    assert re.search(r"data\.jsonl:2: .*user_input", out), out
    assert "data file 'nowhere.jsonl' not found (tried" in out
