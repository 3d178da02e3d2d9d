"""The model's own CPU per text under the shipped graph rewrite and under the earlier ones.

Usage: python benchmarks/model_graph.py [--passes 21] [--texts 1200]

Until calibration 2026-12-06.1 (issue 35) each product's input was scaled by a Mul, shifted by
+128.5 in an Add and truncated to uint8 by a Cast, and each layer's attention ran as the model file
spells it out. Now one blocked QuantizeLinear (opset 21, a block per token) does the scaling,
rounding (half to even) and shift (`judges/offline/quantize.py`), and one MultiHeadAttention node
does each layer's attention (`judges/offline/attention.py`). Three graphs are compared:
`shipped` (both), `quantize_linear` (the products' rewrite alone) and `previous` (the products'
rewrite with `previous_graph` turning each QuantizeLinear back into the old steps: bit for bit
the vectors of the code before). Single-threaded embedders (no cache), one per graph, embed the
same distinct workload texts in turns, pass after pass, the order reversed every other pass; the
figures are each graph's median CPU per text, the median of the per-pass ratios to `previous`
with their range, and how far each graph's vectors are from the previous ones.
"""

from __future__ import annotations

import argparse
import statistics
import sys
from pathlib import Path
from typing import Any

import numpy as np
import onnx
from onnx import helper

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parent / "src"))
sys.path.insert(0, str(HERE))

from _machine import print_machine  # noqa: E402
from _workload import conversations  # noqa: E402

from convoeval.judges.offline.attention import keep_used  # noqa: E402
from convoeval.judges.offline.embedder import (  # noqa: E402
    Embedder,
    default_model_path,
    model_session,
)
from convoeval.judges.offline.quantize import integer_products, signed_weights_exact  # noqa: E402


def previous_graph(model: onnx.ModelProto) -> int:
    """Replace, in a model rewritten by `integer_products`, each QuantizeLinear(x, down, 128) by
    the previous Div(127, range), Mul(x, .), Add(., 128.5), Cast(uint8); return how many."""
    graph = model.graph
    shift = onnx.numpy_helper.from_array(np.array([128.5], np.float32), "int8.shift")
    graph.initializer.append(shift)  # +128, and +0.5 to round
    nodes: list[onnx.NodeProto] = []
    replaced = 0
    for node in graph.node:
        if node.op_type != "QuantizeLinear":
            nodes.append(node)
            continue
        replaced += 1
        x, p = node.input[0], node.output[0][: -len("q")]
        nodes += [
            helper.make_node("Div", ["int8.levels", p + "range"], [p + "up"]),
            helper.make_node("Mul", [x, p + "up"], [p + "scaled"]),
            helper.make_node("Add", [p + "scaled", "int8.shift"], [p + "shifted"]),
            helper.make_node("Cast", [p + "shifted"], [node.output[0]], to=onnx.TensorProto.UINT8),
        ]
    keep_used(graph, nodes)  # the zero point's Shape and Expand are no longer read
    return replaced


def embedders() -> dict[str, Embedder]:
    """One single-threaded, uncached embedder per graph, loaded: shipped, quantize_linear and
    previous."""
    signed = signed_weights_exact()
    products = onnx.load(str(default_model_path()))
    integer_products(products, signed=signed)
    previous = onnx.ModelProto()
    previous.CopyFrom(products)
    previous_graph(previous)
    shipped = Embedder(threads=1, cache_size=0)
    shipped.load()
    return {
        "shipped": shipped,
        "quantize_linear": _embedder(products),
        "previous": _embedder(previous),
    }


def _embedder(model: onnx.ModelProto) -> Embedder:
    """An embedder like the shipped one whose session runs `model`."""
    embedder = Embedder(threads=1, cache_size=0)
    embedder.load()
    embedder._session = model_session(model.SerializeToString(), integer=True)  # under test
    return embedder


def workload_texts(count: int) -> list[str]:
    """The first `count` distinct message texts (requests and replies) of the seeded workload."""
    texts = [
        m["content"]
        for row in conversations(count, tools=True)
        for m in row["user_input"]
        if m.get("content")
    ]
    return list(dict.fromkeys(texts))[:count]


def measure(passes: int, count: int) -> dict[str, Any]:
    """CPU per text of each graph over `passes` passes in turns, and their vectors apart."""
    texts = workload_texts(count)
    arms = embedders()
    vectors = {name: e.embed(texts) for name, e in arms.items()}
    costs: dict[str, list[float]] = {name: [] for name in arms}
    for turn in range(passes):
        order = list(arms) if turn % 2 == 0 else list(reversed(arms))
        for name in order:
            spent = arms[name].counts()["run_cpu_ns"]
            arms[name].embed(texts)
            costs[name].append((arms[name].counts()["run_cpu_ns"] - spent) / 1e6 / len(texts))
    figures: dict[str, Any] = {"texts": len(texts), "passes": passes}
    for name, spent in costs.items():
        figures[f"{name}_cpu_ms_per_text"] = round(statistics.median(spent), 3)
    base = vectors["previous"]
    for name in ("shipped", "quantize_linear"):
        ratios = [a / b for a, b in zip(costs[name], costs["previous"], strict=True)]
        figures[f"{name}_over_previous_median"] = round(statistics.median(ratios), 3)
        figures[f"{name}_over_previous_range"] = f"{min(ratios):.3f}-{max(ratios):.3f}"
        v = vectors[name]
        figures[f"{name}_vectors_max_abs_difference"] = round(float(np.abs(v - base).max()), 4)
        figures[f"{name}_vectors_lowest_cosine"] = round(float((v * base).sum(axis=1).min()), 4)
        figures[f"{name}_vectors_identical_share"] = round(float((v == base).all(axis=1).mean()), 3)
    return figures


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--passes", type=int, default=21)
    parser.add_argument("--texts", type=int, default=1200)
    args = parser.parse_args(argv)
    print_machine()
    for name, value in measure(args.passes, args.texts).items():
        print(f"{name}: {value}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
