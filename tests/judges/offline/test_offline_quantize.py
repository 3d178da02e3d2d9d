"""Integer products: the rewrite computes per-token int8 products exactly, and the real model's
vectors stay close to its float ones, independent of batching and of the weights' sign form."""

from __future__ import annotations

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto, helper, numpy_helper

from convoeval.judges.offline import quantize
from convoeval.judges.offline.embedder import Embedder, default_model_path

TEXTS = [
    "How do I raise the limit on my credit card?",
    "Can you write me a poem about cats?",
    "I'm sorry, but I can't help with that request.",
    "Payment 4471 was declined because the daily limit of 300 euros was reached.",
    "ok",
    "What will the weather be like in Oslo on Friday, and should I bring an umbrella or not?",
]


def _tiny_model(weights: np.ndarray, scales: np.ndarray, opset: int = 17) -> onnx.ModelProto:
    """y = x @ (float(weights) * scales), written the way the pinned model writes its layers."""
    rows, columns = weights.shape
    graph = helper.make_graph(
        [
            helper.make_node("Cast", ["w_q"], ["w_f"], to=TensorProto.FLOAT),
            helper.make_node("Mul", ["w_f", "w_scale"], ["w"]),
            helper.make_node("MatMul", ["x", "w"], ["y"]),
        ],
        "tiny",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, None, rows])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, None, columns])],
        [
            numpy_helper.from_array(weights, "w_q"),
            numpy_helper.from_array(scales.reshape(1, columns), "w_scale"),
        ],
    )
    # IR 10, as the pinned model's (the oldest onnxruntime we allow reads no newer)
    opsets = [helper.make_opsetid("", opset)]
    return helper.make_model(graph, opset_imports=opsets, ir_version=10)


def _run(model: onnx.ModelProto, x: np.ndarray) -> np.ndarray:
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return np.asarray(session.run(None, {"x": x})[0])


@pytest.mark.parametrize("opset", [17, 21])  # the pinned model's, and the one the rewrite needs
@pytest.mark.parametrize("signed", [True, False])
def test_each_token_is_quantized_on_its_own_and_multiplied_exactly(
    signed: bool, opset: int
) -> None:
    rng = np.random.default_rng(7)
    weights = rng.integers(-127, 128, size=(16, 5)).astype(np.int8)
    scales = rng.uniform(0.001, 0.02, size=5).astype(np.float32)
    x = rng.normal(size=(2, 3, 16)).astype(np.float32)
    x[1, 2] *= 100.0  # one loud token must not coarsen the others' steps
    model = _tiny_model(weights, scales, opset)
    assert quantize.integer_products(model, signed=signed) == 1
    ops = [n.op_type for n in model.graph.node]
    assert "Cast" not in ops and ops.count("QuantizeLinear") == 1
    assert quantize.QUANTIZE_OPSET == 21
    assert [o.version for o in model.opset_import if o.domain == ""] == [21]
    # the product takes x's shape as it is: no node flattens the tokens or shapes them back
    # (one Shape gives the zero point the scale's shape)
    assert not {"Slice", "Concat", "Reshape"} & set(ops) and ops.count("Shape") == 1, ops
    assert not {t.name for t in model.graph.initializer} & {"w_q", "w_scale"}

    got = _run(model, x)

    step = np.abs(x).max(axis=-1, keepdims=True) / np.float32(127.0)
    q = np.rint(x / step).astype(np.float64)  # each token's integers, rounded half to even
    expected = (q @ weights.astype(np.float64)) * step * scales
    np.testing.assert_allclose(got, expected, rtol=1e-5, atol=1e-6)
    exact = x @ (weights.astype(np.float32) * scales)
    assert np.abs(got - exact).max() < 0.02 * np.abs(exact).max()


def test_float_weights_are_left_alone() -> None:
    graph = helper.make_graph(
        [helper.make_node("MatMul", ["x", "w"], ["y"])],
        "float",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [None, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [None, 2])],
        [numpy_helper.from_array(np.ones((4, 2), np.float32), "w")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    assert quantize.integer_products(model, signed=True) == 0
    assert [n.op_type for n in model.graph.node] == ["MatMul"]
    assert [t.name for t in model.graph.initializer] == ["w"]


def test_every_weight_product_of_the_pinned_model_is_rewritten() -> None:
    model = onnx.load(str(default_model_path()))
    matmuls = sum(1 for n in model.graph.node if n.op_type == "MatMul")
    rewritten = quantize.integer_products(model, signed=True)
    assert rewritten == 36  # 6 layers x (query, key, value, output, two feed-forward)
    assert sum(1 for n in model.graph.node if n.op_type == "MatMul") == matmuls - rewritten
    int8 = {t.name for t in model.graph.initializer if t.data_type == TensorProto.INT8}
    casts = {n.input[0] for n in model.graph.node if n.op_type == "Cast"}
    # only the two embedding tables (looked up, not multiplied) are still turned into float
    assert {name.split(".")[-2] for name in int8 & casts} == {
        "word_embeddings",
        "position_embeddings",
    }


def test_integer_vectors_stay_close_to_the_float_ones(embedder: Embedder) -> None:
    integer = embedder.embed(TEXTS)
    floats = Embedder(integer=False, cache_size=0).embed(TEXTS)
    cosines = (integer * floats).sum(axis=1)
    assert cosines.min() > 0.98 and cosines.mean() > 0.99, cosines  # "ok" is the farthest
    assert not np.array_equal(integer, floats)  # the integer path is really in use


def test_a_vector_does_not_depend_on_the_texts_batched_with_it(embedder: Embedder) -> None:
    fresh = Embedder(cache_size=0)
    together = fresh.embed(TEXTS)
    alone = np.concatenate([fresh.embed([text]) for text in TEXTS])
    np.testing.assert_array_equal(together, alone)


def test_signed_and_unsigned_weights_give_the_same_vectors(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    if not quantize.signed_weights_exact():
        pytest.skip("this CPU's u8*s8 kernel may saturate, so the signed form is not used here")
    signed = Embedder(cache_size=0).embed(TEXTS)
    monkeypatch.setattr(quantize, "signed_weights_exact", lambda: False)
    unsigned = Embedder(cache_size=0).embed(TEXTS)
    np.testing.assert_array_equal(signed, unsigned)
