"""Integer matrix products for the pinned model: about twice the speed of its float products.

The model file stores every weight matrix as int8 with one scale per output column and turns it
back into float (Cast, then Mul by the scales) in front of each MatMul, so onnxruntime would run
the products in float32. `integer_products` rewrites each of those MatMuls to multiply in
integers over the same int8 weights and scales (no weight is quantized again). Each input row (one
token) is quantized on its own, symmetrically to 8 bits with the scale max|row|/127, so a text's
vector never depends on the other texts in its batch (a scale over the whole input would: up to
0.03 apart). Mean cosine to the float products is about 0.998 on benchmark texts; the offline
judge's constants are fitted on such vectors (benchmarks/README.md, "Integer products").
onnxruntime's quantization tools offer only a scale per whole input, hence this small rewrite.
One blocked QuantizeLinear (opset 21, a block per token) scales, rounds and shifts each input:
3-6% less CPU per text than the Mul, Add and Cast it replaced (benchmarks/README.md,
"Blocked QuantizeLinear and one attention node per layer").
"""

from __future__ import annotations

import platform
from pathlib import Path

import numpy as np
import onnx
from onnx import helper, numpy_helper

from convoeval.judges.offline.attention import fused_attention, keep_used

#: Names this arithmetic in the benchmarks' embedding caches (vectors from another differ; runs
#: tell them apart by the calibration version, which changes with it).
ARITHMETIC = "int8-rows-mha"

#: The opset the rewritten model declares: 21 brought QuantizeLinear's blocked form.
QUANTIZE_OPSET = 21


def signed_weights_exact() -> bool:
    """Whether onnxruntime multiplies uint8 inputs by int8 weights exactly on this CPU.

    Its x86 kernels without VNNI add pairs of u8*s8 products in 16 bits, which can saturate; with
    VNNI (avx512_vnni or avx_vnni) they do not. Elsewhere we do not know, so we say no.
    """
    if platform.machine().lower() not in ("x86_64", "amd64"):
        return False
    try:
        flags = Path("/proc/cpuinfo").read_text(encoding="ascii", errors="replace")
    except OSError:
        return False
    return " avx512_vnni" in flags or " avx_vnni" in flags


def integer_model(path: Path, *, signed: bool) -> bytes:
    """The model file at `path` with `integer_products` and `attention.fused_attention` applied,
    serialised for onnxruntime (the parsed model is dropped on return, so only the bytes outlive
    this call)."""
    model = onnx.load(str(path))
    integer_products(model, signed=signed)
    fused_attention(model)
    data: bytes = model.SerializeToString()
    return data


def integer_products(model: onnx.ModelProto, *, signed: bool) -> int:
    """Rewrite `model` in place so its int8-weight MatMuls multiply in integers; return how many.

    Per MatMul(x, W): the rows of x (tokens) are scaled by 127/max|row|, rounded (half to even)
    and shifted by 128 into uint8, multiplied by W in integers (com.microsoft
    MatMulIntegerToFloat, which also applies W's column scales), then scaled back by
    max|row|/127. With `signed` W goes as stored (int8); without, as uint8 with zero point 128:
    the same integers shifted, for the kernels that could saturate on u8*s8 (see
    `signed_weights_exact`). Both give the same products.
    """
    graph = model.graph
    weights = {t.name: t for t in graph.initializer}
    producer = {out: node for node in graph.node for out in node.output}
    for opset_id in model.opset_import:  # blocked QuantizeLinear (one scale per token)
        if opset_id.domain in ("", "ai.onnx"):
            opset_id.version = max(opset_id.version, QUANTIZE_OPSET)
    added = [
        _constant("int8.eps", np.array([1e-12], np.float32)),
        _constant("int8.levels", np.array([127.0], np.float32)),
        _constant("int8.one", np.array(1.0, np.float32)),
        _constant("int8.zero", np.array(128, np.uint8)),
        _constant("int8.last", np.array([-1], np.int64)),
    ]
    nodes: list[onnx.NodeProto] = []
    quantized: dict[str, str] = {}  # input -> prefix of its quantized form (Q, K, V share one)
    rewritten = 0
    for node in graph.node:
        found = _dequantized_weight(node, producer, weights)
        if found is None:
            nodes.append(node)
            continue
        stored, scale = found
        rewritten += 1
        p = f"int8.{rewritten}."
        values = numpy_helper.to_array(stored)
        if not signed:
            values = (values.astype(np.int16) + 128).astype(np.uint8)
        added += [
            _constant(p + "w", values),
            _constant(p + "scales", numpy_helper.to_array(scale).reshape(-1).astype(np.float32)),
        ]
        x = quantized.get(node.input[0])
        if x is None:
            x = quantized[node.input[0]] = p
            nodes += _quantize_rows(node.input[0], p, width=stored.dims[0], first=rewritten == 1)
        integer_inputs = [x + "q", p + "w", "int8.one", p + "scales", "int8.zero"]
        if not signed:
            integer_inputs.append("int8.zero")
        nodes += [
            helper.make_node(
                "MatMulIntegerToFloat", integer_inputs, [p + "y"], domain="com.microsoft"
            ),
            helper.make_node("Mul", [p + "y", x + "down"], list(node.output)),
        ]
    graph.initializer.extend(added)
    keep_used(graph, nodes)  # the float copies of the weights (Cast, Mul) are no longer read
    if not any(o.domain == "com.microsoft" for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    return rewritten


def _quantize_rows(x: str, p: str, width: int, first: bool) -> list[onnx.NodeProto]:
    """Nodes turning `x` (..., width) into `p`q: uint8 of the same shape, each token (last axis)
    divided by its scale max|token|/127 (`p`down, shape (..., 1)), rounded and shifted by 128,
    in one blocked QuantizeLinear (a block is a whole token). The products take `x`'s shape as
    it is (MatMulIntegerToFloat multiplies like numpy.matmul): flattening the tokens and shaping
    them back cost five nodes per product, about a fifth of the model's node runs. The zero
    point (128 per token) is made once, with the `first` input quantized: every product's input
    in this model has the same tokens (batch, sequence), so one shape serves all."""
    zero_point = [
        helper.make_node("Shape", [p + "down"], ["int8.tokens"]),
        helper.make_node("Expand", ["int8.zero", "int8.tokens"], ["int8.zp"]),
    ]
    return [
        helper.make_node("Abs", [x], [p + "abs"]),
        helper.make_node("ReduceMax", [p + "abs", "int8.last"], [p + "max"]),  # (..., 1)
        helper.make_node("Max", [p + "max", "int8.eps"], [p + "range"]),
        helper.make_node("Div", [p + "range", "int8.levels"], [p + "down"]),
        *(zero_point if first else []),
        helper.make_node(
            "QuantizeLinear", [x, p + "down", "int8.zp"], [p + "q"], axis=-1, block_size=width
        ),
    ]


def _constant(name: str, value: np.ndarray) -> onnx.TensorProto:
    return numpy_helper.from_array(value, name)


def _dequantized_weight(
    node: onnx.NodeProto,
    producer: dict[str, onnx.NodeProto],
    weights: dict[str, onnx.TensorProto],
) -> tuple[onnx.TensorProto, onnx.TensorProto] | None:
    """(int8 weights, column scales) if `node` is MatMul(x, Cast(int8 W) * scales)."""
    if node.op_type != "MatMul" or len(node.input) != 2:
        return None
    mul = producer.get(node.input[1])
    if mul is None or mul.op_type != "Mul" or len(mul.input) != 2:
        return None
    cast = producer.get(mul.input[0])
    if cast is None or cast.op_type != "Cast" or cast.input[0] not in weights:
        return None
    stored, scale = weights[cast.input[0]], weights.get(mul.input[1])
    if stored.data_type != onnx.TensorProto.INT8 or len(stored.dims) != 2 or scale is None:
        return None
    if int(np.prod(scale.dims)) != stored.dims[1]:  # one scale per output column only
        return None
    return stored, scale
