"""Hostile or broken files: lying sizes and deep nesting fail with onyx's errors, never a crash, a
RecursionError or a huge allocation."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto, helper

import onyx
from onyx.errors import OnyxError


def _identity_model(initializer: TensorProto) -> bytes:
    graph = helper.make_graph(
        [helper.make_node("Identity", [initializer.name], ["y"])],
        "g",
        [],
        [helper.make_tensor_value_info("y", initializer.data_type, None)],
        [initializer],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]).SerializeToString()


@pytest.mark.parametrize("dims", [[1 << 40], [1 << 20, 1 << 20], [-1], [1 << 62, 4]])
def test_initializer_declaring_more_than_its_bytes(dims):
    t = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=dims, raw_data=b"\0" * 16)
    with pytest.raises(OnyxError):
        onyx.InferenceSession(_identity_model(t)).run(None, {})


def test_initializer_declaring_more_than_its_typed_values():
    t = TensorProto(name="w", data_type=TensorProto.INT64, dims=[1 << 40])
    t.int64_data.extend([1, 2, 3])
    with pytest.raises(OnyxError):
        onyx.InferenceSession(_identity_model(t)).run(None, {})


def _varint(n: int) -> bytes:
    out = bytearray()
    while True:
        byte, n = n & 0x7F, n >> 7
        out.append(byte | (0x80 if n else 0))
        if not n:
            return bytes(out)


def _field(number: int, payload: bytes | str | int) -> bytes:
    """One protobuf field: varint for ints, length-delimited for bytes and strings."""
    if isinstance(payload, int):
        return _varint(number << 3) + _varint(payload)
    data = payload.encode() if isinstance(payload, str) else payload
    return _varint(number << 3 | 2) + _varint(len(data)) + data


def _nested_ifs(depth: int) -> bytes:
    """``depth`` If nodes each holding the next in its then-branch, written on the wire by hand
    (protobuf's own encoder stops at 100 levels; a hostile file need not)."""

    def info(name: str) -> bytes:  # ValueInfoProto: name, float tensor
        return _field(1, name) + _field(2, _field(1, _field(1, TensorProto.FLOAT)))

    value = helper.make_tensor("v", TensorProto.FLOAT, [1], [1.0]).SerializeToString()
    constant = _field(2, "leaf_y") + _field(4, "Constant")
    constant += _field(5, _field(1, "value") + _field(5, value) + _field(20, 4))
    leaf = _field(1, constant) + _field(2, "leaf") + _field(12, info("leaf_y"))
    inner = leaf
    for level in range(depth):  # the else-branch stays a leaf: the file grows linearly with depth
        then_attr = _field(1, "then_branch") + _field(6, inner) + _field(20, 5)
        else_attr = _field(1, "else_branch") + _field(6, leaf) + _field(20, 5)
        node = _field(1, "c") + _field(2, f"y{level}") + _field(3, f"if{level}") + _field(4, "If")
        node += _field(5, then_attr) + _field(5, else_attr)
        inner = _field(1, node) + _field(2, f"level{level}") + _field(12, info(f"y{level}"))
    c_info = _field(1, "c") + _field(2, _field(1, _field(1, TensorProto.BOOL)))
    graph = inner + _field(11, c_info)
    return _field(1, 8) + _field(8, _field(2, 18)) + _field(7, graph)


def test_deep_nesting_is_an_error_not_a_recursion_error():
    data = _nested_ifs(3000)
    with pytest.raises(OnyxError, match="nest"):
        onyx.InferenceSession(data)


def test_moderate_nesting_still_runs():
    sess = onyx.InferenceSession(_nested_ifs(20))
    assert sess.run(None, {"c": np.array(True)})[0].tolist() == [1.0]


def test_long_chain_runs():
    n = 20000
    nodes = [helper.make_node("Neg", [f"v{i}"], [f"v{i + 1}"]) for i in range(n)]
    graph = helper.make_graph(
        nodes,
        "chain",
        [helper.make_tensor_value_info("v0", TensorProto.FLOAT, [2])],
        [helper.make_tensor_value_info(f"v{n}", TensorProto.FLOAT, [2])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    sess = onyx.InferenceSession(model.SerializeToString())
    assert sess.run(None, {"v0": np.array([1, -2], np.float32)})[0].tolist() == [1, -2]


def test_truncated_files_are_clean_errors():
    """Every cut of a valid file either loads or raises onyx's error (anything else escapes and fails)."""
    data = _nested_ifs(2)
    refused = 0
    for cut in range(1, len(data), max(1, len(data) // 60)):
        try:
            onyx.InferenceSession(data[:cut])
        except OnyxError:
            refused += 1
    assert refused > 0
    assert onyx.InferenceSession(data).run(None, {"c": np.array(False)})[0].tolist() == [1.0]
