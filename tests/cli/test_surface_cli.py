"""One surface on the command line (issue 33 §1): any name of a metric in every option, one
spelling per concept with its aliases refused when they disagree, per-member judge endpoints."""

from __future__ import annotations

import json
import os
import socket
from pathlib import Path
from typing import Any

from _cli import convoeval
from _orders import meta, write_orders


def test_a_metric_named_by_its_class_takes_limits_named_by_its_column(tmp_path: Path) -> None:
    write_orders(tmp_path / "d.jsonl", wrong={2})
    done = convoeval(
        "run", "d.jsonl", "-m", "ToolCallAccuracy", "-o", "r.jsonl", "-q",
        "--threshold", "tool_call_accuracy=0.9", "--fail-under", "tool_call_accuracy=0.9",
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 3, done.stderr  # the mean is 2/3: the gate fails, not refused
    assert "tool_call_accuracy" in done.stderr + done.stdout
    assert meta(tmp_path / "r.jsonl")["metrics"][0]["threshold"] == 0.9


def test_a_deepeval_class_name_runs_with_m(tmp_path: Path) -> None:
    write_orders(tmp_path / "d.jsonl", wrong={2})
    done = convoeval(
        "run", "d.jsonl", "-m", "ToolCallAccuracy,TurnRelevancyMetric", "-o", "r.jsonl", "-q",
        "--fail-under", "TurnRelevancyMetric=0", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    names = [m["name"] for m in meta(tmp_path / "r.jsonl")["metrics"]]
    assert names == ["tool_call_accuracy", "turn_relevancy"]


def test_max_concurrency_is_an_alias_and_two_spellings_must_agree(tmp_path: Path) -> None:
    write_orders(tmp_path / "d.jsonl", wrong={2})
    args = ["run", "d.jsonl", "-m", "tool_call_accuracy", "-o", "r.jsonl", "-q"]
    same = convoeval(*args, "--concurrency", "2", "--max-concurrency", "2", cwd=tmp_path)
    assert same.returncode == 0, same.stderr
    both = convoeval(*args, "--concurrency", "2", "--max-concurrency", "3", cwd=tmp_path)
    assert both.returncode == 2
    assert "--concurrency=2 and --max-concurrency=3 are two spellings of one option" in both.stderr
    assert "Traceback" not in both.stderr


GOAL = "agent_goal_accuracy_with_reference"
GOOD_GOAL = {"end_state": "the order was found", "achieved": True, "reason": "it was found"}


def _closed_url() -> str:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    return f"http://127.0.0.1:{port}/v1"


def test_each_panel_member_gets_its_own_endpoint_and_a_down_one_is_left_out(
    tmp_path: Path, fault_server: Any
) -> None:
    fault_server.responder = lambda body: GOOD_GOAL
    write_orders(tmp_path / "d.jsonl", 2, wrong={2})
    closed = _closed_url()
    done = convoeval(
        "run", "d.jsonl", "-m", GOAL, "-o", "r.jsonl", "-q", "--no-cache", "--api-key", "sk-t",
        "--judge", f"openai/a@{fault_server.url}", "--judge", f"openai/b@{fault_server.url}",
        "--judge", f"openai/c@{closed}", cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    assert fault_server.attempts == 4  # a and b, for each record; c was never sent a request
    left_out = meta(tmp_path / "r.jsonl")["panel_left_out"]
    assert list(left_out) == ["openai/c"]
    assert closed in json.dumps(left_out)


def test_conflicting_endpoints_are_refused(tmp_path: Path) -> None:
    write_orders(tmp_path / "d.jsonl", wrong={2})
    args = ["run", "d.jsonl", "-m", GOAL, "--api-key", "sk-t"]
    first, second = "http://127.0.0.1:9/v1", "http://127.0.0.1:10/v1"
    twice = convoeval(
        *args, "--judge", "openai/a", "--base-url", first, "--base-url", second, cwd=tmp_path
    )
    assert twice.returncode == 2 and "--base-url" in twice.stderr and second in twice.stderr
    both = convoeval(*args, "--judge", f"openai/a@{first}", "--base-url", second, cwd=tmp_path)
    assert both.returncode == 2, both.stderr
    assert f"'openai/a@{first}' names its endpoint, and base_url (--base-url)" in both.stderr
    assert "Traceback" not in both.stderr


def test_each_panel_member_sends_its_own_key_to_its_own_server(
    tmp_path: Path, fault_server: Any
) -> None:
    """A hosted model beside a local one: each member's key goes only to its own server."""
    other = type(fault_server)()
    try:
        fault_server.responder = other.responder = lambda body: GOOD_GOAL
        write_orders(tmp_path / "d.jsonl", 1)
        env = {**os.environ, "LOCAL_KEY": "sk-local-member", "OPENAI_API_KEY": "sk-shared"}
        done = convoeval(
            "run", "d.jsonl", "-m", GOAL, "-o", "r.jsonl", "-q", "--no-cache",
            "--judge", f"openai/a@{fault_server.url}",
            "--judge", f"openai/b@{other.url}#LOCAL_KEY",
            "--judge", f"openai/c@{fault_server.url}", cwd=tmp_path, env=env,
        )  # fmt: skip
        assert done.returncode == 0, done.stderr
        seen = {h.get("authorization") for h in fault_server.headers}
        assert seen == {"Bearer sk-shared"}
        assert {h.get("authorization") for h in other.headers} == {"Bearer sk-local-member"}
        unset = convoeval(
            "run", "d.jsonl", "-m", GOAL, "-o", "s.jsonl", "--judge", f"openai/b@{other.url}#NOPE",
            cwd=tmp_path, env=env,
        )  # fmt: skip
        assert unset.returncode == 2
        assert "environment variable 'NOPE', which is not set" in unset.stderr
        assert "Traceback" not in unset.stderr
    finally:
        other.close()


def test_a_panel_member_takes_its_own_options_after_its_spec(
    tmp_path: Path, fault_server: Any
) -> None:
    """`--judge 'openai/a max_tokens=11'`: that member's requests carry it, the others' not."""
    fault_server.responder = lambda body: GOOD_GOAL
    write_orders(tmp_path / "d.jsonl", 1)
    args = ["run", "d.jsonl", "-m", GOAL, "-q", "--no-cache", "--api-key", "sk-t"]
    done = convoeval(
        *args, "-o", "r.jsonl", "--base-url", fault_server.url,
        "--judge", "openai/a max_tokens=11", "--judge", "openai/b", "--judge", "openai/c",
        cwd=tmp_path,
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    tokens = {b["model"]: b.get("max_tokens") for b in fault_server.bodies}
    assert tokens["a"] == 11 and tokens["b"] != 11 and tokens["c"] != 11
    clash = convoeval(
        *args, "-o", "s.jsonl", "--base-url", fault_server.url, "--timeout", "9",
        "--judge", "openai/a timeout=5", "--judge", "openai/b", cwd=tmp_path,
    )  # fmt: skip
    assert clash.returncode == 2, clash.stderr
    assert "sets timeout=5, and the run sets timeout=9.0: give one" in clash.stderr
    bad = convoeval(*args, "-o", "t.jsonl", "--judge", "openai/a seed=x", cwd=tmp_path)
    assert bad.returncode == 2 and "seed must be a number, not 'x'" in bad.stderr
