"""Long runs of unpacked repeated attribute values (ints, floats, strings: what tree ensembles hold,
tens of thousands at a time) are decoded in bulk; the result must be what the field-by-field parse
gives: the same values as onnx's decoder, runs interrupted by other fields, values of the wrong wire
type kept verbatim as unknown fields, negative ints (10-byte varints), and a byte-identical re-encode."""

from __future__ import annotations

import numpy as np
import onnx
import pytest
from onnx import AttributeProto, helper

import onyx
from onyx.errors import InvalidProtobuf
from onyx.proto.wire import VARINT, tag, varint


def _model_with(attrs: list[AttributeProto]) -> bytes:
    node = helper.make_node("Identity", ["x"], ["y"])
    node.attribute.extend(attrs)
    g = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", 1, [2])],
        [helper.make_tensor_value_info("y", 1, [2])],
    )
    return helper.make_model(g, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString()


def _onyx_attrs(data: bytes) -> dict:
    return {k: a.value for k, a in onyx.load(data).graph.nodes[0].attributes.items()}


def _onnx_attrs(data: bytes) -> dict:
    m = onnx.load_from_string(data)
    return {a.name: helper.get_attribute_value(a) for a in m.graph.node[0].attribute}


def test_long_runs_match_onnx_and_reencode_identically():
    rng = np.random.default_rng(0)
    ints = rng.integers(-(2**62), 2**62, size=5000).tolist() + [-1, 0, 1, 2**63 - 1, -(2**63)]
    small = rng.integers(0, 100, size=3000).tolist()
    floats = rng.normal(size=4000).astype(np.float32).tolist() + [float("inf"), -0.0]
    strings = [s.encode() for s in rng.choice(["BRANCH_LEQ", "LEAF", "BRANCH_GT", ""], size=3000)]
    strings.append(b"x" * 300)  # a two-byte length ends the fast run; the rest is parsed one by one
    strings += [b"after"] * 5
    attrs = [
        helper.make_attribute("ints", ints),
        helper.make_attribute("small", small),
        helper.make_attribute("floats", floats),
        helper.make_attribute("strings", strings),
        helper.make_attribute("one", [7]),
    ]
    data = _model_with(attrs)
    got, want = _onyx_attrs(data), _onnx_attrs(data)
    assert list(got["ints"]) == want["ints"] == ints
    assert list(got["small"]) == want["small"]
    np.testing.assert_array_equal(np.float32(got["floats"]), np.float32(want["floats"]))
    assert np.signbit(np.float32(got["floats"][-1]))
    assert list(got["strings"]) == want["strings"] == strings
    assert list(got["one"]) == [7]
    assert onyx.serialize(onyx.load(data)) == data


def test_run_interrupted_by_other_fields():
    """ints, then the name, then more ints: one attribute, values in order (the parser resumes)."""
    a = helper.make_attribute("v", list(range(200)))
    raw = bytearray(a.SerializeToString())
    tail = b"".join(tag(8, VARINT) + varint(i) for i in range(200, 300))
    attr_bytes = bytes(raw) + tail  # AttributeProto fields may come in any order
    parsed = AttributeProto()
    parsed.ParseFromString(attr_bytes)
    data = _model_with([parsed])
    assert list(_onyx_attrs(data)["v"]) == list(range(300))


def test_wrong_field_for_the_type_is_kept_verbatim():
    """A FLOATS attribute that also carries a long run of ints: the ints are an unknown field, written
    back as they came."""
    a = helper.make_attribute("f", [0.5] * 100)
    a.ints.extend(range(500))
    data = _model_with([a])
    m = onyx.load(data)
    assert list(m.graph.nodes[0].attributes["f"].value) == [0.5] * 100
    back = onnx.load_from_string(onyx.serialize(m))
    assert list(back.graph.node[0].attribute[0].ints) == list(range(500))


@pytest.mark.parametrize("cut", [0, 1, 3, 7])
def test_broken_run_is_an_error(cut):
    """The run's last varint loses its end (continuation bit set), the message then cut short by
    ``cut`` bytes: an InvalidProtobuf, as from the field-by-field parser."""
    data = _model_with([helper.make_attribute("ints", [2**40] * 400)])
    last = data.rindex(varint(2**40)) + len(varint(2**40)) - 1
    bad = bytearray(data)
    bad[last] |= 0x80
    with pytest.raises(InvalidProtobuf):
        onyx.load(bytes(bad[: len(bad) - cut]))
