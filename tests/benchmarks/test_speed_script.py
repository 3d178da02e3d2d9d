"""benchmarks/speed.py runs end to end: its parent reads each child's figures even though every
process prints its machine block (and the load after it) around them."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

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
    if os.path.exists("/proc/stat"):  # Linux: the cores the machine left idle meanwhile
        idle = next(x for x in lines if x.startswith("tool_call_f1.machine_idle_cores: "))
        assert 0.0 <= float(idle.split(": ")[1]) <= (os.cpu_count() or 1)
