"""One attention node per layer for the pinned model: 1-2% less CPU per text.

The model file spells each layer's attention out in the exporter's small steps: the query, key and
value split into heads (Reshape, Transpose), the key transposed again, both scaled, multiplied,
the padding masked (Where), a softmax, NaNs of fully masked rows zeroed, the product with the
values, and the heads merged back (Transpose, Reshape); about 25 node runs per layer.
`fused_attention` replaces each layer's steps by one com.microsoft MultiHeadAttention over the same
query, key and value, with the attention mask as its key padding mask (every text keeps at least
its two special tokens, so no row is fully masked). The arithmetic is the same up to float
rounding; the figures are in benchmarks/README.md ("Blocked QuantizeLinear and one attention node
per layer").
"""

from __future__ import annotations

import numpy as np
import onnx
from onnx import helper, numpy_helper

#: The key padding mask MultiHeadAttention takes: the model's attention mask as int32.
MASK = "attention.mask"
#: How the bias initializers of a layer's query, key and value projections are named.
_BIASES = tuple(f"attention.self.{part}.bias" for part in ("query", "key", "value"))


def fused_attention(model: onnx.ModelProto, mask_input: str = "attention_mask") -> int:
    """Rewrite `model` in place: each layer's exported attention becomes one MultiHeadAttention
    node; return how many. A layer is found from its value projection's bias Add, along the
    value path (Reshape into heads, Transpose, MatMul with the attention weights, Transpose,
    Reshape back), whose end is the attention's output; the query and key are the Adds of the
    same layer's query and key biases. Nodes left unused are dropped."""
    graph = model.graph
    consumers: dict[str, list[onnx.NodeProto]] = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)
    initializers = {t.name: t for t in graph.initializer}  # read as arrays only where needed
    biases = {
        name: node
        for node in graph.node
        if node.op_type == "Add"
        for name in node.input
        if name.endswith(_BIASES)
    }
    fused: dict[int, onnx.NodeProto] = {}
    for name, value_add in biases.items():
        if not name.endswith("value.bias"):
            continue
        layer = name[: -len("value.bias")]
        query, key = biases[layer + "query.bias"], biases[layer + "key.bias"]
        path = _value_path(value_add, consumers)
        width = int(np.prod(initializers[name].dims))
        heads = width // _head_size(path[0], graph, initializers)
        fused[id(path[-1])] = helper.make_node(
            "MultiHeadAttention",
            [query.output[0], key.output[0], value_add.output[0], "", MASK],
            [path[-1].output[0]],
            domain="com.microsoft",
            num_heads=heads,
        )
    if not fused:
        return 0
    mask = helper.make_node("Cast", [mask_input], [MASK], to=onnx.TensorProto.INT32)
    nodes = [mask, *(fused.get(id(node), node) for node in graph.node)]
    keep_used(graph, nodes)
    if not any(o.domain == "com.microsoft" for o in model.opset_import):
        model.opset_import.append(helper.make_opsetid("com.microsoft", 1))
    return len(fused)


def _value_path(
    value_add: onnx.NodeProto, consumers: dict[str, list[onnx.NodeProto]]
) -> list[onnx.NodeProto]:
    """Reshape, Transpose, MatMul, Transpose, Reshape: the value's way to the layer's output."""
    path, node = [], value_add
    for op in ("Reshape", "Transpose", "MatMul", "Transpose", "Reshape"):
        following = consumers.get(node.output[0], [])
        if len(following) != 1 or following[0].op_type != op:
            raise ValueError(f"unexpected attention graph after {node.name or node.op_type}")
        node = following[0]
        path.append(node)
    return path


def _head_size(
    reshape: onnx.NodeProto, graph: onnx.GraphProto, initializers: dict[str, onnx.TensorProto]
) -> int:
    """The last dimension the value is reshaped to (a constant input of its shape's Concat)."""
    shape = next(n for n in graph.node if reshape.input[1] in n.output)
    stored = initializers.get(shape.input[-1]) if shape.op_type == "Concat" else None
    size = numpy_helper.to_array(stored).reshape(-1) if stored is not None else None
    if size is None or size.size != 1:
        raise ValueError("cannot read the attention head size from the model")
    return int(size[0])


def keep_used(graph: onnx.GraphProto, nodes: list[onnx.NodeProto]) -> None:
    """Set `graph`'s nodes to those of `nodes` (in order) that the outputs need, and its
    initializers to those still read (after a rewrite left some unread)."""
    needed = {o.name for o in graph.output}
    kept: list[onnx.NodeProto] = []
    for node in reversed(nodes):
        if any(out in needed for out in node.output):
            kept.append(node)
            needed.update(name for name in node.input if name)
    kept.reverse()
    initializers = [t for t in graph.initializer if t.name in needed]
    del graph.node[:]
    graph.node.extend(kept)
    del graph.initializer[:]
    graph.initializer.extend(initializers)
