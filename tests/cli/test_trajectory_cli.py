"""tau-bench trajectories through `convoeval run` / `report`: field options, TrajectoryMatch
with its options, and `--trials` (pass^k / pass@k in the summary and the HTML report)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Any

from _cli import convoeval
from _shared_data import TAU_BENCH, shared_file

if TYPE_CHECKING:
    from conftest import FaultServer

ROOT = Path(__file__).resolve().parents[2]
WRITE_TOOLS = "book|cancel"
FIELDS = ["--messages-field", "traj", "--field", "reference_tool_calls=info.task.actions"]


def _run(task: int, trial: int, booked: str, result: str) -> dict[str, Any]:
    """A tau-bench-shaped record: a lookup, then a booking whose result may be an error."""
    calls = [("lookup", {"user": "u1"}, "{}"), ("book", {"flight": booked}, result)]
    traj: list[dict[str, Any]] = [{"role": "user", "content": "book me HAT1"}]
    for name, args, content in calls:
        call_id = "call_1"  # tau-bench logs reuse ids: results pair by position
        function = {"name": name, "arguments": json.dumps(args)}
        traj.append(
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [{"id": call_id, "type": "function", "function": function}],
            }
        )
        traj.append({"role": "tool", "tool_call_id": call_id, "name": name, "content": content})
    traj.append({"role": "assistant", "content": "done"})
    actions = [
        {"name": "lookup", "kwargs": {"user": "u1"}},
        {"name": "book", "kwargs": {"flight": "HAT1"}},
    ]
    ok = booked == "HAT1" and not result.startswith("Error")
    return {
        "task_id": task,
        "trial": trial,
        "reward": 1.0 if ok else 0.0,
        "info": {"task": {"actions": actions}},
        "traj": traj,
    }


def test_run_reads_tau_bench_layout_scores_and_prints_trials(tmp_path: Path) -> None:
    records = [
        _run(0, 0, "HAT1", "{}"),
        _run(0, 1, "HAT1", "Error: no seats"),
        _run(1, 0, "HAT2", "{}"),
        _run(1, 1, "HAT1", "{}"),
    ]
    (tmp_path / "tau.json").write_text(json.dumps(records))
    metric = f"trajectory_match:mode=unordered,only_tools={WRITE_TOOLS},skip_errors=true"
    done = convoeval(
        "run", "tau.json", *FIELDS, "-m", metric, "--trials", "task_id:reward",
        "--report", "tau.html", "--quiet", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in (tmp_path / "tau.results.jsonl").read_text().splitlines()]
    assert [r["scores"]["trajectory_match"] for r in rows] == [1.0, 0.0, 0.0, 1.0]
    assert rows[1]["details"]["trajectory_match"]["left_out"]["errors"][0]["name"] == "book"
    assert rows[0]["sample"]["metadata"] == {"task_id": 0, "trial": 0, "reward": 1.0}
    # Task 0: 1 of 2, task 1: 1 of 2 -> pass^1 0.5, pass^2 0, pass@2 1.
    assert "trials: 2 tasks by task_id, 4 trials, success = reward (true or >= 1)" in done.stdout
    assert "k=1: pass^k 0.5000  pass@k 0.5000" in done.stdout
    assert "k=2: pass^k 0.0000  pass@k 1.0000" in done.stdout
    page = (tmp_path / "tau.html").read_text()
    assert "<h2>Repeated trials</h2>" in page and "<td>0.5000</td>" in page
    # The same figures from the metric, and from `report`.
    again = convoeval(
        "report", "tau.results.jsonl", "--trials", "task_id:trajectory_match", cwd=tmp_path
    )
    assert again.returncode == 0, again.stderr
    assert "success = trajectory_match >= 1" in again.stdout
    assert "k=2: pass^k 0.0000  pass@k 1.0000" in again.stdout


def test_bad_trials_option_is_a_usage_error_before_scoring(tmp_path: Path) -> None:
    (tmp_path / "tau.json").write_text(json.dumps([_run(0, 0, "HAT1", "{}")]))
    done = convoeval(
        "run", "tau.json", *FIELDS, "-m", "trajectory_match", "--trials", "task_id:reward>",
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 2
    assert "expected TASK_FIELD[:SUCCESS]" in done.stderr
    assert not (tmp_path / "tau.results.jsonl").exists()
    missing = convoeval(
        "run", "tau.json", *FIELDS, "-m", "trajectory_match", "--trials", "episode", cwd=tmp_path
    )
    assert missing.returncode == 2
    assert "no record has a task id in 'episode'" in missing.stderr


def test_real_tau_bench_file_through_the_cli(tmp_path: Path) -> None:
    """The documented command: write tools only, error results left out, unordered."""
    tau_bench = shared_file(TAU_BENCH)
    write = (
        "book_reservation|cancel_reservation|update_reservation_flights|"
        "update_reservation_baggages|update_reservation_passengers|send_certificate"
    )
    metric = f"trajectory_match:mode=unordered,only_tools={write},skip_errors=true"
    done = convoeval(
        "run", str(tau_bench), *FIELDS, "-m", metric, "-o", "tau.jsonl",
        "--trials", "task_id:reward", "--quiet", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    rows = [json.loads(line) for line in (tmp_path / "tau.jsonl").read_text().splitlines()]
    agree = sum(
        (r["scores"]["trajectory_match"] == 1.0) == (r["sample"]["metadata"]["reward"] == 1.0)
        for r in rows
    )
    assert (len(rows), agree) == (200, 195)
    assert "k=4: pass^k 0.2000  pass@k 0.7200" in done.stdout


def test_tool_schema_and_tool_use_judge_through_the_cli(
    tmp_path: Path, fault_server: FaultServer
) -> None:
    """OpenAI chat records with their `tools`: the schema check needs no judge; the tool-use
    judge makes one structured-output request per conversation to the scripted server."""
    tools = [
        {
            "type": "function",
            "function": {
                "name": "get_weather",
                "parameters": {
                    "type": "object",
                    "properties": {"city": {"type": "string"}},
                    "required": ["city"],
                },
            },
        }
    ]
    records = []
    for i, (name, args) in enumerate([("get_weather", {"city": "Oslo"}), ("get_wether", {})]):
        call = {"id": "c1", "type": "function", "function": {"name": name, "arguments": "{}"}}
        call["function"]["arguments"] = json.dumps(args)
        records.append(
            {
                "id": f"r{i}",
                "tools": tools,
                "messages": [
                    {"role": "user", "content": "Weather in Oslo?"},
                    {"role": "assistant", "content": None, "tool_calls": [call]},
                    {"role": "tool", "tool_call_id": "c1", "content": "sunny"},
                    {"role": "assistant", "content": "Sunny."},
                ],
            }
        )
    (tmp_path / "d.jsonl").write_text("\n".join(json.dumps(r) for r in records) + "\n")
    verdict = {"call": 0, "right_tool": True, "right_arguments": False, "reason": "scripted"}
    fault_server.reply({"verdicts": [verdict], "missing": []}).forever()
    env = {**os.environ, "CONVOEVAL_CACHE_DIR": str(tmp_path / "cache")}
    env.pop("OPENAI_API_KEY", None)
    command = [
        sys.executable, "-m", "convoeval.cli", "run", "d.jsonl", "-m", "tool_schema_check",
        "-m", "tool_use", "--judge", "openai/test-model", "--base-url", fault_server.url,
        "--api-key", "sk-test", "-o", "r.jsonl", "--quiet",
    ]  # fmt: skip
    done = subprocess.run(
        command, cwd=tmp_path, capture_output=True, text=True, timeout=300, env=env
    )
    assert done.returncode == 0, done.stderr
    rows = [json.loads(x) for x in (tmp_path / "r.jsonl").read_text().splitlines()]
    assert [r["scores"] for r in rows] == [
        {"tool_schema_check": 1.0, "tool_use": 0.0},
        {"tool_schema_check": 0.0, "tool_use": 0.0},
    ]
    assert rows[1]["details"]["tool_schema_check"]["hallucinated"][0]["name"] == "get_wether"
    assert fault_server.attempts == 2
    assert all(b["response_format"]["type"] == "json_schema" for b in fault_server.bodies)
    prompt = fault_server.bodies[0]["messages"][-1]["content"]
    assert '- "get_weather": "", arguments {"properties"' in prompt  # the record's own tools
