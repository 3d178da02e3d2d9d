"""The `gguf:` judge without a model: its spec, its errors (as the command line shows them, exit
code 2), its answers cached under the file's hash, and `convoeval metrics` naming it."""

from __future__ import annotations

import asyncio
import hashlib
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from _cli import convoeval
from convoeval.errors import UsageError
from convoeval.judges import JudgeConfigError, JudgeError, resolve_judge
from convoeval.judges.gguf import split_spec
from convoeval.judges.gguf.judge import GGUFJudge

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "support.jsonl"
pytest.importorskip("xllamacpp")


def _fake_gguf(path: Path, body: bytes = b"\0" * 64) -> Path:
    """A file with the GGUF magic bytes and no model in it (llama.cpp cannot load it)."""
    path.write_bytes(b"GGUF" + body)
    return path


def _convoeval(*args: str, cwd: Path, code: str = "") -> subprocess.CompletedProcess[str]:
    """The command line in a fresh interpreter; `code` runs first (e.g. to hide a package)."""
    script = f"{code}\nimport sys\nfrom convoeval.cli import main\nsys.exit(main())"
    command = [sys.executable, "-c", script, *args]
    return subprocess.run(command, cwd=cwd, capture_output=True, text=True, timeout=120)


def _run_gguf(path: Path, cwd: Path, code: str = "") -> subprocess.CompletedProcess[str]:
    """`convoeval run` on the bundled examples with user frustration through `gguf:PATH`."""
    args = ("run", str(EXAMPLES), "-m", "user_frustration", "--judge", f"gguf:{path}")
    return _convoeval(*args, "-o", "r.jsonl", cwd=cwd, code=code)


def test_the_spec_takes_server_options_after_a_path_that_may_hold_spaces() -> None:
    path, server, others = split_spec("gguf:/my models/m.gguf threads=2 ctx=4096 timeout=30")
    assert (path, server, others) == (
        "/my models/m.gguf",
        {"threads": 2, "ctx": 4096},
        ["timeout=30"],
    )
    assert split_spec("gguf:m.gguf") == ("m.gguf", {}, [])
    with pytest.raises(UsageError, match="threads must be a whole number of at least 1"):
        split_spec("gguf:m.gguf threads=0")


def test_a_spec_builds_the_judge_with_its_options(tmp_path: Path) -> None:
    folder = tmp_path / "my models"
    folder.mkdir()
    gguf = _fake_gguf(folder / "m.gguf")
    judge = resolve_judge(
        f"gguf:{gguf} threads=3 ctx=1024 concurrency=4 max_tokens=50",
        timeout=9.0,
        base_url="http://127.0.0.1:9/v1",  # an OpenAI endpoint's option: not this judge's
        api_key="sk-not-for-gguf",
        concurrency=16,  # the run's limit: a gguf judge's requests at once are its own
    )
    assert isinstance(judge, GGUFJudge)
    described = judge.describe()
    assert described["kind"] == "gguf"
    assert (described["threads"], described["ctx"], described["concurrency"]) == (3, 1024, 4)
    assert (described["max_tokens"], described["timeout"]) == (50, 9.0)
    assert described["file"] == str(gguf)
    assert judge.chat.secrets() == ()
    more = resolve_judge(f"gguf:{gguf} retry_budget=5 seed=3 reason_first=true judge_samples=3")
    assert isinstance(more, GGUFJudge)
    assert (more.retry.max_total_s, more.seed, more.reason_first, more.samples) == (5, 3, True, 3)
    assert resolve_judge(f"gguf:{gguf}", cache=False).cache is None  # --no-cache
    assert GGUFJudge(gguf).describe() == resolve_judge(f"gguf:{gguf}").describe()
    default = resolve_judge(f"gguf:{gguf}").describe()
    assert (default["ctx"], default["concurrency"], default["max_tokens"]) == (4096, 2, 1000)
    assert default["timeout"] == 300.0
    for sized in (
        resolve_judge(f"gguf:{gguf} context=1024"),
        resolve_judge(f"gguf:{gguf}", context=1024),
    ):
        assert isinstance(sized, GGUFJudge)  # context= (other judges' name) is its ctx
        assert (sized.server.ctx, sized.context_window) == (1024, 1024)
    with pytest.raises(UsageError, match="ctx=2048 and context=1024: give one"):
        resolve_judge(f"gguf:{gguf} ctx=2048 context=1024")
    with pytest.raises(UsageError, match="is not KEY=VALUE"):
        resolve_judge(f"gguf:{gguf} colour=2")
    with pytest.raises(JudgeConfigError, match="drop --batch"):
        resolve_judge(f"gguf:{gguf}", batch=True)


@pytest.mark.parametrize(
    ("make", "says"),
    [
        (lambda d: d / "absent.gguf", "no such file; give the path of a GGUF model file"),
        (lambda d: d, "is a folder; give the path of a .gguf file in it"),
        (
            lambda d: (d / "notes.gguf", (d / "notes.gguf").write_text("hello"))[0],
            "is not a GGUF file (it does not start with the bytes 'GGUF')",
        ),
    ],
    ids=["missing", "folder", "not-gguf"],
)
def test_a_bad_file_is_one_line_and_exit_code_2(tmp_path: Path, make: Any, says: str) -> None:
    path = make(tmp_path)
    done = _run_gguf(path, tmp_path)
    assert done.returncode == 2, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and says in errors[0], done.stderr
    assert "Traceback" not in done.stderr


def test_the_extra_missing_is_one_line_saying_what_to_install(tmp_path: Path) -> None:
    gguf = _fake_gguf(tmp_path / "m.gguf")
    hide = "import sys; sys.modules['xllamacpp'] = None  # import xllamacpp fails"
    done = _run_gguf(gguf, tmp_path, code=hide)
    assert done.returncode == 2, done.stderr
    errors = [line for line in done.stderr.splitlines() if line.startswith("error:")]
    assert len(errors) == 1 and "pip install 'convoeval[local]'" in errors[0], done.stderr


def test_a_file_llama_cpp_cannot_load_stops_the_run_before_scoring(tmp_path: Path) -> None:
    gguf = _fake_gguf(tmp_path / "broken.gguf")
    done = _run_gguf(gguf, tmp_path)
    assert done.returncode == 2, done.stderr
    assert f"error: llama.cpp could not load {gguf}" in done.stderr
    assert not (tmp_path / "r.jsonl").exists() or not (tmp_path / "r.jsonl").read_text().strip()


def test_answers_are_cached_under_the_files_hash_not_its_path(
    tmp_path: Path, verdict_step: Any
) -> None:
    first = _fake_gguf(tmp_path / "a.gguf")
    moved = tmp_path / "elsewhere" / "renamed.gguf"
    moved.parent.mkdir()
    shutil.copy(first, moved)
    other = _fake_gguf(tmp_path / "b.gguf", b"\1" * 64)  # another file (same size)
    inputs = {"statement": "water is wet"}
    judge = resolve_judge(f"gguf:{first}")
    assert isinstance(judge, GGUFJudge) and judge.cache is not None
    schema = verdict_step.request_schema(inputs, reason_first=False)
    key = judge._cache_key(verdict_step, verdict_step.render(inputs), schema, judge.chat.sampling())
    judge.cache.put(key, '{"verdict": true, "label": "yes"}')

    async def ask(path: Path) -> Any:
        asked = resolve_judge(f"gguf:{path}")
        try:
            return await asked.run(verdict_step, inputs)
        finally:
            await asked.aclose()

    answer = asyncio.run(ask(moved))  # the same bytes elsewhere: answered from the cache
    assert answer.output.verdict is True and answer.usage.cached == 1
    assert answer.usage.requests == 0
    with pytest.raises(JudgeError, match=r"llama\.cpp could not load"):
        asyncio.run(ask(other))  # other bytes: asked, so the server is started (and fails)


def test_metrics_lists_which_judges_run_each_metric(tmp_path: Path) -> None:
    """A column where the terminal is wide enough; on a narrow one each description starts with
    the judges instead."""
    from convoeval.metrics import describe_metrics

    wide = convoeval("metrics", cwd=tmp_path, env={**os.environ, "COLUMNS": "100"})
    narrow = convoeval("metrics", cwd=tmp_path, env={**os.environ, "COLUMNS": "80"})
    assert wide.returncode == 0 and narrow.returncode == 0, wide.stderr + narrow.stderr
    lines = wide.stdout.splitlines()
    assert lines[0].split() == ["metric", "(class)", "judges"]
    rows = {line.split()[0]: line for line in lines[1:] if line and not line.startswith(" ")}
    assert rows["user_frustration"].endswith("  gguf, any LLM")
    assert rows["turn_relevancy"].endswith("  offline, gguf, any LLM")
    assert rows["tool_call_f1"].endswith("  none needed")
    assert "gguf is a local GGUF model run in this process (--judge gguf:PATH" in " ".join(
        wide.stdout.split()
    )
    for info in describe_metrics():  # every metric that asks a judge can ask a gguf one
        assert (" gguf, " in rows[info["name"]]) == bool(info["uses_judge"]), info["name"]
    text = narrow.stdout.splitlines()
    assert text[0] == "metric (class)" and max(len(line) for line in text) <= 80
    first = text.index("user_frustration (UserFrustration)")
    assert text[first + 1].startswith("  judges: gguf, any LLM. needs user_input.")


def _section() -> str:
    """docs/judges.md's gguf section, whitespace collapsed."""
    text = (ROOT / "docs" / "judges.md").read_text(encoding="utf-8")
    start = text.index("## A local GGUF file")
    return " ".join(text[start:].split())


def test_the_docs_state_the_defaults_errors_and_extra_the_code_has() -> None:
    from convoeval.judges.gguf import judge, server

    docs = _section()
    assert f"| `ctx=N` | {judge.DEFAULT_CTX} |" in docs
    assert f"| `concurrency=N` | {judge.DEFAULT_SLOTS} |" in docs
    assert f"| `max_tokens=N` | {judge.DEFAULT_MAX_TOKENS} |" in docs
    assert f"| `timeout=S` | {judge.DEFAULT_TIMEOUT:g} |" in docs
    assert "| `threads=N` | half the logical CPUs, 1 to 4 |" in docs
    cpus = os.cpu_count() or 2
    assert server.default_threads() == max(1, min(4, cpus // 2))
    assert server.INSTALL_HINT in docs
    readme = " ".join((ROOT / "README.md").read_text(encoding="utf-8").split())
    assert (
        "`gguf:PATH`: a GGUF model file of yours, run by llama.cpp inside the run's own "
        f"process (`{server.INSTALL_HINT}`)" in readme
    )
    pyproject = (ROOT / "pyproject.toml").read_text(encoding="utf-8")
    assert 'local = ["xllamacpp>=' in pyproject  # pip install 'convoeval[local]'


def test_the_docs_table_of_local_models_is_the_benchmarks_one() -> None:
    docs = (ROOT / "docs" / "judges.md").read_text(encoding="utf-8")
    bench = (ROOT / "benchmarks" / "README.md").read_text(encoding="utf-8")
    section = docs[docs.index("### What a local model is worth") :]
    rows = [line for line in section.splitlines() if line.startswith("| ")]
    assert len(rows) >= 5, rows
    for row in rows:
        assert row in bench, row
    script = (ROOT / "benchmarks" / "local_model.py").read_text(encoding="utf-8")
    assert 'add_argument("--gguf"' in script  # measure your own file on the same rows


def test_the_files_hash_is_remembered_until_the_file_changes(
    tmp_path: Path, _isolated_cache_dir: Path
) -> None:
    from convoeval.judges.gguf import file

    gguf = _fake_gguf(tmp_path / "m.gguf")
    real = file.file_sha256(gguf)
    assert real == hashlib.sha256(gguf.read_bytes()).hexdigest()
    memo = _isolated_cache_dir / file.MEMO
    known = json.loads(memo.read_text(encoding="utf-8"))
    assert list(known.values()) == [real]
    file._DIGESTS.clear()  # as a new process: the digest comes from the memo, not the bytes
    memo.write_text(json.dumps(dict.fromkeys(known, "f" * 64)), encoding="utf-8")
    assert file.file_sha256(gguf) == "f" * 64
    file._DIGESTS.clear()
    gguf.write_bytes(b"GGUF" + b"\2" * 80)  # changed (size and time): hashed again
    assert file.file_sha256(gguf) == hashlib.sha256(gguf.read_bytes()).hexdigest()
    file._DIGESTS.clear()
