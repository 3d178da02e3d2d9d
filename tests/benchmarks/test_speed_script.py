"""benchmarks/speed.py runs end to end: its parent reads each child's figures even though every
process prints its machine block (and the load after it) around them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

from _benchmarks import benchmark_module

ROOT = Path(__file__).resolve().parents[2]


def test_speed_prints_machine_and_figures_for_a_cheap_metric() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    command = [sys.executable, str(ROOT / "benchmarks" / "speed.py"), "--no-stream"]
    command += ["--metric", "tool_call_f1", "--conversations", "3"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=120, env=env)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("# machine.commit: ")
    assert any(line.startswith("tool_call_f1.conversations_per_second: ") for line in lines)
    assert "tool_call_f1.failed: 0" in lines
    assert any(line.startswith("tool_call_f1.thread_cpu_ms_per_conversation[MainThread]: ")
               for line in lines)  # fmt: skip
    # The cores the machine left idle meanwhile: n/a off Linux or when 3 conversations took less
    # than one tick of /proc/stat's clock (10 ms), else a count of cores.
    idle = next(x for x in lines if x.startswith("tool_call_f1.machine_idle_cores: "))
    value = idle.split(": ")[1]
    assert value == "n/a" or 0.0 <= float(value) <= (os.cpu_count() or 1), idle


def test_idle_cores_are_the_idle_share_of_the_ticks_times_the_cores() -> None:
    speed = benchmark_module("speed")
    cores = os.cpu_count() or 1
    assert speed.idle_between((100, 400), (150, 600)) == 0.25 * cores
    assert speed.idle_between((100, 400), (100, 400)) is None  # no tick went by
    assert speed.idle_between(None, (150, 600)) is None  # no /proc/stat
    ticks = speed.machine_ticks()
    assert ticks is None or 0 <= ticks[0] <= ticks[1]


def test_cpu_per_conversation_is_compared_with_the_floor_and_with_the_runs_own_model_cpu() -> None:
    speed = benchmark_module("speed")
    figures = {
        "metric": "m",
        "conversations": 10,
        "cpu_s": 0.25,  # 25 ms per conversation
        "model": {  # 100 texts, 0.2 s of model CPU: 20 ms per conversation, 2 ms per text
            "texts": 100,
            "tokens": 1500,
            "padded_tokens": 2000,
            "calls": 3,
            "runs": 13,
            "run_cpu_ns": 200_000_000,
            "run_wall_ns": 250_000_000,
        },
        "floor": {"texts": 100, "cpu_ms_per_text": 1.6, "same_vectors": True},  # 16 ms a conv.
        "run_sizes": {},
    }
    lines = dict(line.split(": ") for line in speed.model_figures(figures))
    assert lines["m.model_run_cpu_ms_per_text"] == "2.000"
    assert lines["m.model_run_waiting_ms_per_conversation"] == "5.00"
    assert lines["m.floor_cpu_ms_per_conversation"] == "16.00"
    assert lines["m.cpu_per_conversation_vs_floor"] == "1.56x"
    assert lines["m.cpu_per_conversation_vs_model_in_run"] == "1.25x"
    assert lines["m.model_padding_share"] == "0.250"
    assert speed.model_figures({**figures, "model": {**figures["model"], "texts": 0}}) == []
