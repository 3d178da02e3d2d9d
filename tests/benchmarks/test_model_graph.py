"""benchmarks/model_graph.py: the previous rewrite it rebuilds is the old arithmetic (truncating
cast, not QuantizeLinear), close to but not the same as the shipped ones, and the script runs."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import onnx

from _benchmarks import benchmark_module

ROOT = Path(__file__).resolve().parents[2]


def test_the_previous_graph_shifts_and_truncates_instead_of_quantizing() -> None:
    model_graph = benchmark_module("model_graph")
    from convoeval.judges.offline.embedder import default_model_path
    from convoeval.judges.offline.quantize import integer_products

    model = onnx.load(str(default_model_path()))
    integer_products(model, signed=True)
    assert model_graph.previous_graph(model) == 24  # 6 layers x 4 distinct product inputs
    ops = [node.op_type for node in model.graph.node]
    assert "QuantizeLinear" not in ops
    casts = [n for n in model.graph.node if n.op_type == "Cast" and n.output[0].endswith(".q")]
    assert len(casts) == 24 and all(c.attribute[0].i == onnx.TensorProto.UINT8 for c in casts)
    # nothing of the QuantizeLinear form is left to run: its zero point is not made
    assert not [n for n in model.graph.node if {"int8.tokens", "int8.zp"} & set(n.output)]


def test_the_script_prints_its_machine_and_figures() -> None:
    env = {**os.environ, "PYTHONPATH": str(ROOT / "src")}
    command = [sys.executable, str(ROOT / "benchmarks" / "model_graph.py")]
    done = subprocess.run(
        [*command, "--passes", "2", "--texts", "12"],
        capture_output=True,
        text=True,
        timeout=120,
        env=env,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    lines = done.stdout.splitlines()
    assert lines[0].startswith("# machine.commit: ")
    figures = dict(line.split(": ", 1) for line in lines if not line.startswith("#"))
    assert figures["texts"] == "12" and figures["passes"] == "2"
    assert float(figures["shipped_cpu_ms_per_text"]) > 0
    for name in ("shipped", "quantize_linear"):  # alike but not identical to the previous
        assert 0.98 < float(figures[f"{name}_vectors_lowest_cosine"]) < 1.0
