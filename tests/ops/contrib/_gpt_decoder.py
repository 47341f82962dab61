"""A tiny GPT-2-shaped decoder subgraph (input_ids, position_ids, attention_mask, past_0 -> logits,
present_0) for the generation ops' tests: its logits depend on the token, its position and the masked
sum of the past states, so that every feed the search builds matters."""

from __future__ import annotations

import numpy as np
from onnx import TensorProto, helper, numpy_helper

HEADS, HEAD = 2, 4
HIDDEN = HEADS * HEAD


def decoder_graph(vocab: int, seed: int = 0, max_pos: int = 64) -> helper.GraphProto:
    r = np.random.default_rng(seed)
    inits = [
        numpy_helper.from_array((r.standard_normal((vocab, HIDDEN)) * 2).astype(np.float32), "E"),
        numpy_helper.from_array(r.standard_normal((max_pos, HIDDEN)).astype(np.float32), "P"),
        numpy_helper.from_array(r.standard_normal((HIDDEN, vocab)).astype(np.float32), "W1"),
        numpy_helper.from_array((r.standard_normal((HEAD, vocab)) * 0.3).astype(np.float32), "W2"),
        numpy_helper.from_array(np.array([0, 0, HEADS, HEAD], np.int64), "kv_shape"),
        numpy_helper.from_array(np.array([0, 2, 3], np.int64), "sum_axes"),
        numpy_helper.from_array(np.array([1], np.int64), "axis1"),
        numpy_helper.from_array(np.array(0.5, np.float32), "half"),
    ]
    n = helper.make_node
    nodes = [
        n("Gather", ["E", "input_ids"], ["emb"]),
        n("Gather", ["P", "position_ids"], ["pos"]),
        n("Add", ["emb", "pos"], ["h"]),  # (B, S, HIDDEN)
        n("Reshape", ["h", "kv_shape"], ["h4"]),  # (B, S, HEADS, HEAD)
        n("Transpose", ["h4"], ["k"], perm=[0, 2, 1, 3]),  # (B, HEADS, S, HEAD)
        n("Mul", ["k", "half"], ["v"]),
        n("Unsqueeze", ["k", "axis0"], ["k5"]),
        n("Unsqueeze", ["v", "axis0"], ["v5"]),
        n("Concat", ["k5", "v5"], ["new"], axis=0),  # (2, B, HEADS, S, HEAD)
        n("Concat", ["past_0", "new"], ["present_0"], axis=3),
        n("Cast", ["attention_mask"], ["maskf"], to=TensorProto.FLOAT),  # (B, T)
        n("Unsqueeze", ["maskf", "mask_axes"], ["mask5"]),  # (1, B, 1, T, 1)
        n("Mul", ["present_0", "mask5"], ["masked"]),
        n("ReduceSum", ["masked", "sum_axes"], ["ctx"], keepdims=0),  # (B, HEAD)
        n("MatMul", ["h", "W1"], ["l1"]),  # (B, S, V)
        n("MatMul", ["ctx", "W2"], ["l2"]),  # (B, V)
        n("Unsqueeze", ["l2", "axis1"], ["l2u"]),
        n("Add", ["l1", "l2u"], ["logits"]),
    ]
    inits += [
        numpy_helper.from_array(np.array([0], np.int64), "axis0"),
        numpy_helper.from_array(np.array([0, 2, 4], np.int64), "mask_axes"),
    ]
    inputs = [
        helper.make_tensor_value_info("input_ids", TensorProto.INT32, ["B", "S"]),
        helper.make_tensor_value_info("position_ids", TensorProto.INT32, ["B", "S"]),
        helper.make_tensor_value_info("attention_mask", TensorProto.INT32, ["B", "T"]),
        helper.make_tensor_value_info("past_0", TensorProto.FLOAT, [2, "B", HEADS, "P", HEAD]),
    ]
    outputs = [
        helper.make_tensor_value_info("logits", TensorProto.FLOAT, ["B", "S", vocab]),
        helper.make_tensor_value_info("present_0", TensorProto.FLOAT, [2, "B", HEADS, "T", HEAD]),
    ]
    return helper.make_graph(nodes, "decoder", inputs, outputs, initializer=inits)


def greedy_model(vocab: int, *, with_optional: bool = True, init_seed: int | None = None, **attrs) -> bytes:
    names = [
        "input_ids",
        "max_length",
        "min_length",
        "repetition_penalty",
        "vocab_mask",
        "prefix_vocab_mask",
        "attention_mask",
    ]
    node = helper.make_node(
        "GreedySearch",
        names if with_optional else names[:2],
        ["sequences"],
        domain="com.microsoft",
        decoder=decoder_graph(vocab),
        **attrs,
    )
    if init_seed is not None:
        node.attribute.append(helper.make_attribute("init_decoder", decoder_graph(vocab, seed=init_seed)))
    types = [
        TensorProto.INT32,
        TensorProto.INT32,
        TensorProto.INT32,
        TensorProto.FLOAT,
        TensorProto.INT32,
        TensorProto.INT32,
        TensorProto.INT32,
    ]
    shapes = [["B", "S"], [1], [1], [1], [vocab], ["B", vocab], ["B", "S"]]
    used = names if with_optional else names[:2]
    g_in = [helper.make_tensor_value_info(nm, t, s) for nm, t, s in zip(used, types, shapes)]
    g_out = [helper.make_tensor_value_info("sequences", TensorProto.INT32, ["B", "L"])]
    graph = helper.make_graph([node], "g", g_in, g_out)
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    return helper.make_model(graph, opset_imports=opsets, ir_version=8).SerializeToString()


BEAM_INPUTS = [
    ("input_ids", TensorProto.INT32, ["B", "S"]),
    ("max_length", TensorProto.INT32, [1]),
    ("min_length", TensorProto.INT32, [1]),
    ("num_beams", TensorProto.INT32, [1]),
    ("num_return_sequences", TensorProto.INT32, [1]),
    ("length_penalty", TensorProto.FLOAT, [1]),
    ("repetition_penalty", TensorProto.FLOAT, [1]),
    ("vocab_mask", TensorProto.INT32, None),
    ("prefix_vocab_mask", TensorProto.INT32, None),
    ("attention_mask", TensorProto.INT32, ["B", "S"]),
]


def beam_model(vocab: int, feeds: dict, n_out: int = 2, **attrs) -> bytes:
    """A BeamSearch model over the decoder, with the inputs present in ``feeds``."""
    used = [(nm, t, s) for nm, t, s in BEAM_INPUTS if nm in feeds]
    names = [nm if nm in feeds else "" for nm, _, _ in BEAM_INPUTS]
    while names[-1] == "":
        names.pop()
    outs = ["sequences", "sequences_scores", "scores"][:n_out]
    node = helper.make_node(
        "BeamSearch", names, outs, domain="com.microsoft", decoder=decoder_graph(vocab), **attrs
    )
    g_in = [helper.make_tensor_value_info(nm, t, s) for nm, t, s in used]
    g_out = [helper.make_tensor_value_info("sequences", TensorProto.INT32, None)]
    g_out += [helper.make_tensor_value_info(o, TensorProto.FLOAT, None) for o in outs[1:]]
    graph = helper.make_graph([node], "g", g_in, g_out)
    opsets = [helper.make_opsetid("", 17), helper.make_opsetid("com.microsoft", 1)]
    return helper.make_model(graph, opset_imports=opsets, ir_version=8).SerializeToString()
