"""What a command loads and sends, where its fixed cost lives (issue 35 §4): `--help` and
`metrics` load no heavy package, and re-running a finished run sends no request and loads
neither httpx, numpy, jsonschema nor the offline model. The times themselves are measured by
benchmarks/overhead.py; these checks need no clock."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

from convoeval import evaluate

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples" / "support.jsonl"
GOAL = "agent_goal_accuracy_with_reference"
GOOD_GOAL = {"end_state": "the order was found", "achieved": True, "reason": "it was found"}
#: Packages only some runs need, each costing 50-300 ms to import.
HEAVY = {"numpy", "onnxruntime", "tokenizers", "openai", "httpx", "pandas", "pyarrow", "ray"}

#: Runs the command line as the `convoeval` script does, then writes the top-level names of every
#: module it loaded to the file named by the first argument.
_RUN_AND_LIST = """
import json, sys
target, sys.argv = sys.argv[1], ["convoeval", *sys.argv[2:]]
from convoeval.cli import main
try:
    main()
except SystemExit as stop:
    code = stop.code
with open(target, "w") as handle:
    json.dump(sorted({name.split(".")[0] for name in sys.modules}), handle)
sys.exit(code)
"""


def _convoeval(cwd: Path, *args: str) -> tuple[subprocess.CompletedProcess[str], set[str]]:
    """Run `convoeval ARGS` in a process of its own: its outcome and the packages it loaded."""
    listing = cwd / "modules.json"
    done = subprocess.run(
        [sys.executable, "-c", _RUN_AND_LIST, str(listing), *args],
        cwd=cwd, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    return done, set(json.loads(listing.read_text())) if listing.exists() else set()


def test_help_and_metrics_load_no_heavy_package(tmp_path: Path) -> None:
    done, loaded = _convoeval(tmp_path, "--help")
    assert done.returncode == 0 and "metrics" in done.stdout, done.stderr
    assert loaded & (HEAVY | {"pydantic", "rich", "jsonschema"}) == set()
    assert "convoeval" in loaded  # the listing is real: the command line itself is there
    done, loaded = _convoeval(tmp_path, "metrics")
    assert done.returncode == 0 and "tool_schema_check" in done.stdout, done.stderr
    assert loaded & (HEAVY | {"rich", "jsonschema"}) == set()
    assert "pydantic" in loaded  # the metric classes were imported to describe them


def test_a_finished_run_runs_again_without_a_request_or_an_http_client(
    tmp_path: Path, fault_server: Any
) -> None:
    fault_server.responder = lambda body: GOOD_GOAL
    args = ["run", str(EXAMPLES), "-m", GOAL, "--limit", "2", "-o", "r.jsonl", "--no-cache"]
    args += ["--judge", f"openai/m@{fault_server.url}", "--api-key", "sk-t"]
    first, loaded = _convoeval(tmp_path, *args)
    assert first.returncode == 0, first.stderr
    assert "httpx" in loaded  # the first run sent its requests with it
    sent, listed = fault_server.attempts, len(fault_server.model_requests)
    assert sent == 2
    again, loaded = _convoeval(tmp_path, *args)
    assert again.returncode == 0, again.stderr
    assert "0 of 2 records, 2 already done" in again.stderr
    assert (fault_server.attempts, len(fault_server.model_requests)) == (sent, listed)
    assert loaded & (HEAVY | {"jsonschema"}) == set(), loaded & HEAVY
    assert "rich" in loaded  # the summary table is still printed


def test_a_finished_offline_run_does_not_load_the_model(tmp_path: Path) -> None:
    data, results = str(EXAMPLES), tmp_path / "r.jsonl"
    evaluate(data, ["topic_adherence"], "offline", output=results, limit=2, show_progress=False)
    again, loaded = _convoeval(
        tmp_path, "run", data, "-m", "topic_adherence", "--limit", "2", "-o", str(results)
    )
    assert again.returncode == 0, again.stderr
    assert "0 of 2 records, 2 already done" in again.stderr
    assert loaded & {"onnxruntime", "tokenizers", "httpx", "openai"} == set()
