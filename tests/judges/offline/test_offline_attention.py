"""One attention node per layer: every layer of the pinned model is found and fused, nothing of
the exported steps is left, and the vectors stay those of the unfused graph up to rounding."""

from __future__ import annotations

import numpy as np
import onnx
import pytest

from convoeval.judges.offline import attention
from convoeval.judges.offline.embedder import Embedder, default_model_path, model_session
from convoeval.judges.offline.quantize import (
    integer_model,
    integer_products,
    signed_weights_exact,
)

TEXTS = [
    "How do I raise the limit on my credit card?",
    "I'm sorry, but I can't help with that request.",
    "ok",
    "What will the weather be like in Oslo on Friday, and should I bring an umbrella or not?",
]


def test_every_layer_of_the_pinned_model_becomes_one_node() -> None:
    model = onnx.load(str(default_model_path()))
    before = [n.op_type for n in model.graph.node]
    assert attention.fused_attention(model) == 6
    ops = [n.op_type for n in model.graph.node]
    assert ops.count("MultiHeadAttention") == 6
    assert {n.attribute[0].i for n in model.graph.node if n.op_type == "MultiHeadAttention"} == {
        12
    }  # 384 / 32
    # the exported steps are gone: heads split and merged, the softmax, the masking
    for op in ("Softmax", "Transpose", "Where", "IsNaN", "Reshape"):
        assert before.count(op) > 0 and ops.count(op) == 0, op
    assert len(ops) < len(before) - 100


def test_the_shipped_graph_is_fused_and_a_model_without_attention_is_left_alone() -> None:
    shipped = onnx.load_from_string(integer_model(default_model_path(), signed=True))
    assert [n.op_type for n in shipped.graph.node].count("MultiHeadAttention") == 6
    graph = onnx.helper.make_graph(
        [onnx.helper.make_node("MatMul", ["x", "w"], ["y"])],
        "plain",
        [onnx.helper.make_tensor_value_info("x", onnx.TensorProto.FLOAT, [None, 4])],
        [onnx.helper.make_tensor_value_info("y", onnx.TensorProto.FLOAT, [None, 2])],
        [onnx.numpy_helper.from_array(np.ones((4, 2), np.float32), "w")],
    )
    plain = onnx.helper.make_model(graph)
    assert attention.fused_attention(plain) == 0
    assert [n.op_type for n in plain.graph.node] == ["MatMul"]


def test_an_unexpected_attention_graph_is_refused() -> None:
    model = onnx.load(str(default_model_path()))
    value = next(n for n in model.graph.node if any(i.endswith("self.value.bias") for i in n.input))
    model.graph.node.append(onnx.helper.make_node("Identity", [value.output[0]], ["extra"]))
    with pytest.raises(ValueError, match="unexpected attention graph"):
        attention.fused_attention(model)


def test_fused_vectors_equal_the_unfused_ones_up_to_rounding() -> None:
    unfused = onnx.load(str(default_model_path()))
    integer_products(unfused, signed=signed_weights_exact())
    reference = Embedder(cache_size=0)
    reference.load()
    reference._session = model_session(unfused.SerializeToString(), integer=True)
    fused, plain = Embedder(cache_size=0).embed(TEXTS), reference.embed(TEXTS)
    assert (fused * plain).sum(axis=1).min() > 0.99
    assert not np.array_equal(fused, plain)  # the fused graph is really the one in use
