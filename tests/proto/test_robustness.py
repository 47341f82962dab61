"""Corrupt input never escapes as anything but an OnyxError, never hangs and never allocates memory in
proportion to a length the file lies about.

Hypothesis mutates real model files (truncation, bit flips, overwritten bytes, spliced garbage) and
feeds random bytes; every example loads the model and then converts every tensor (Tensor data is lazy,
so .numpy() is where raw_data, dims and typed fields meet) and runs the checker."""

from __future__ import annotations

import contextlib
import functools
import os
import signal
import time
import tracemalloc

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from onnx import TensorProto, helper

import onyx
from onyx.ir.model import AttrType
from onyx.proto.wire import LEN, VARINT, tag, varint
from tests.proto._corpus import ONNX_DATA, node_cases

FUZZ = settings(
    max_examples=int(os.environ.get("ONYX_FUZZ_EXAMPLES", "400")),
    deadline=1000,  # milliseconds: each example must finish within a second
    derandomize=True,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@functools.lru_cache(maxsize=1)
def corpus() -> tuple[bytes, ...]:
    """Small real models: shipped files with weights, and node-suite models with subgraphs, functions,
    sparse tensors, strings, sequences and typed tensor attributes."""
    files = [
        "simple/test_gradient_of_add_and_mul/model.onnx",
        "simple/test_sequence_model5/model.onnx",
        "simple/test_strnorm_model_monday_casesensintive_nochangecase/model.onnx",
        "pytorch-converted/test_Conv2d_groups/model.onnx",
        "pytorch-converted/test_BatchNorm1d_3d_input_eval/model.onnx",
        "pytorch-converted/test_Embedding/model.onnx",
        "pytorch-operator/test_operator_lstm/model.onnx",
    ]
    out = []
    for f in files:
        path = os.path.join(ONNX_DATA, f)
        if os.path.exists(path):
            with open(path, "rb") as fh:
                out.append(fh.read())
    wanted = (
        "test_loop11",
        "test_scan9_sum",
        "test_if_seq",
        "test_constant",
        "test_sparse",
        "test_range_float_type_positive_delta_expanded",
        "test_affine_grid_2d_expanded",
        "test_string_split",
        "test_optional_has_element",
        "test_ai_onnx_ml_tree_ensemble_set_membership",
        "test_cast_FLOAT_to_FLOAT4E2M1",
        "test_dequantizelinear_int4",
    )
    for name, data in node_cases():
        if name in wanted or name.endswith("_expanded_ver18") and "layer_normalization_2d" in name:
            out.append(data)
    assert len(out) >= 15
    return tuple(out)


@pytest.fixture(autouse=True, scope="module")
def _build_corpus_before_timing():
    # the node suite takes seconds to generate, and first calls import lazily: not inside a timed example
    load_everything(corpus()[0])


class Hang(Exception):
    pass


@contextlib.contextmanager
def time_limit(seconds: float):
    """Turn a hang into a test failure (SIGALRM; the tests run in the main thread)."""

    def fire(signum, frame):
        raise Hang(f"still running after {seconds} s")

    old = signal.signal(signal.SIGALRM, fire)
    signal.setitimer(signal.ITIMER_REAL, seconds)
    try:
        yield
    finally:
        signal.setitimer(signal.ITIMER_REAL, 0)
        signal.signal(signal.SIGALRM, old)


def _tensors(g):
    for v in g.initializers.values():
        yield v.const
    for node in g.nodes:
        for a in node.attributes.values():
            values = a.value if a.type in (AttrType.TENSORS, AttrType.SPARSE_TENSORS) else [a.value]
            if a.type in (AttrType.TENSOR, AttrType.SPARSE_TENSOR, AttrType.TENSORS, AttrType.SPARSE_TENSORS):
                yield from (x for x in values if x is not None)
        for sub in node.subgraphs():
            yield from _tensors(sub)


def load_everything(data: bytes) -> None:
    """Load, convert every tensor, check. Only OnyxError may come out."""
    m = onyx.load(data)
    for t in _tensors(m.graph):
        t.numpy()
    for f in m.functions:
        for node in f.nodes:
            for a in node.attributes.values():
                if a.type == AttrType.TENSOR and a.value is not None:
                    a.value.numpy()
    onyx.check(m)


def must_fail_cleanly_or_load(data: bytes) -> None:
    start = time.perf_counter()
    with time_limit(2.0):
        try:
            load_everything(bytes(data))
        except onyx.OnyxError:
            pass
    assert time.perf_counter() - start < 1.0


def test_corpus_loads_cleanly():
    for data in corpus():
        load_everything(data)


@FUZZ
@given(st.data())
def test_truncated_prefixes(data):
    model = data.draw(st.sampled_from(corpus()))
    cut = data.draw(st.integers(0, len(model) - 1))
    must_fail_cleanly_or_load(model[:cut])


@FUZZ
@given(st.data())
def test_bit_flips(data):
    model = bytearray(data.draw(st.sampled_from(corpus())))
    for _ in range(data.draw(st.integers(1, 8))):
        i = data.draw(st.integers(0, len(model) - 1))
        model[i] ^= 1 << data.draw(st.integers(0, 7))
    must_fail_cleanly_or_load(model)


@FUZZ
@given(st.data())
def test_overwritten_and_spliced_bytes(data):
    model = bytearray(data.draw(st.sampled_from(corpus())))
    i = data.draw(st.integers(0, len(model) - 1))
    junk = data.draw(st.binary(min_size=1, max_size=16))
    if data.draw(st.booleans()):
        model[i : i + len(junk)] = junk
    else:
        model[i:i] = junk
    must_fail_cleanly_or_load(model)


@FUZZ
@given(st.binary(min_size=1, max_size=4096))
def test_random_bytes(data):
    must_fail_cleanly_or_load(data)


# ---------------------------------------------------------------------------------------------
# Lying lengths: a clean error, and memory that does not grow with the lie


@contextlib.contextmanager
def small_peak(limit: int = 8 << 20):
    tracemalloc.start()
    try:
        yield
        _, peak = tracemalloc.get_traced_memory()
    finally:
        tracemalloc.stop()
    assert peak < limit, f"peak traced memory {peak} bytes"


def _field(fn: int, payload: bytes) -> bytes:
    return tag(fn, LEN) + varint(len(payload)) + payload


def _model_with_initializer(tensor: bytes) -> bytes:
    """ModelProto bytes: ir_version 8, opset 17, a graph with one initializer (TensorProto bytes)."""
    graph = _field(2, b"g") + _field(5, tensor)
    opset = _field(8, tag(2, VARINT) + varint(17))
    return tag(1, VARINT) + varint(8) + _field(7, graph) + opset


def _dims(*dims: int) -> bytes:
    return b"".join(tag(1, VARINT) + varint(d) for d in dims)


def test_lying_raw_data_length():
    tensor = (
        _dims(4) + tag(2, VARINT) + varint(1) + _field(8, b"W") + tag(9, LEN) + varint(2**40) + b"\0" * 16
    )
    with small_peak(), pytest.raises(onyx.InvalidProtobuf, match="past the end"):
        onyx.load(_model_with_initializer(tensor))


@pytest.mark.parametrize(
    "dims", [(2**40,), (2**20, 2**20, 2**20), (2**62, 2**62), (2**63 - 1,), (1 << 64) - 1], ids=str
)
@pytest.mark.parametrize("storage", ["raw", "float_data", "int64_data", "string_data"])
def test_lying_dims_with_tiny_data(dims, storage):
    dims = dims if isinstance(dims, tuple) else (dims,)
    code, data = {
        "raw": (TensorProto.FLOAT, _field(9, b"\0" * 8)),
        "float_data": (TensorProto.FLOAT, _field(4, b"\0" * 8)),
        "int64_data": (TensorProto.INT64, _field(7, b"\1\2")),
        "string_data": (TensorProto.STRING, _field(6, b"ab")),
    }[storage]
    tensor = _dims(*dims) + tag(2, VARINT) + varint(code) + _field(8, b"W") + data
    model_bytes = _model_with_initializer(tensor)
    with small_peak():
        with pytest.raises((onyx.InvalidProtobuf, onyx.InvalidGraph), match="'W'"):
            load_everything(model_bytes)
        m = onyx.load(model_bytes)
        with pytest.raises(onyx.InvalidGraph, match="'W'"):
            onyx.check(m)


def test_lying_sparse_dims():
    values = _dims(1) + tag(2, VARINT) + varint(TensorProto.FLOAT) + _field(8, b"S") + _field(9, b"\0" * 4)
    indices = _dims(1) + tag(2, VARINT) + varint(TensorProto.INT64) + _field(9, b"\0" * 8)
    sparse = _field(1, values) + _field(2, indices) + tag(3, VARINT) + varint(2**40)
    graph = _field(2, b"g") + _field(15, sparse)
    model_bytes = tag(1, VARINT) + varint(8) + _field(7, graph) + _field(8, tag(2, VARINT) + varint(17))
    with small_peak(), pytest.raises((onyx.InvalidProtobuf, onyx.InvalidGraph), match="'S'"):
        load_everything(model_bytes)


@pytest.mark.parametrize("where", ["ir_version", "dims", "packed_dims", "field_key", "length"])
def test_eleven_byte_varints(where):
    eleven = b"\xff" * 10 + b"\x01"
    if where == "ir_version":
        data = tag(1, VARINT) + eleven
    elif where == "dims":
        data = _model_with_initializer(tag(1, VARINT) + eleven)
    elif where == "packed_dims":
        data = _model_with_initializer(_field(1, eleven) + tag(2, VARINT) + varint(1))
    elif where == "field_key":
        data = eleven + b"\0"
    else:
        data = tag(7, LEN) + eleven
    with small_peak(), pytest.raises(onyx.InvalidProtobuf, match="varint"):
        load_everything(data)


def _nested_graphs(depth: int) -> bytes:
    """A model whose graph's If node holds a graph whose If node holds a graph... ``depth`` times."""
    inner = _field(2, b"g")
    for _ in range(depth):
        attr = _field(1, b"then_branch") + tag(20, VARINT) + varint(5) + _field(6, inner)
        node = _field(1, b"c") + _field(2, b"y") + _field(4, b"If") + _field(5, attr)
        inner = _field(1, node) + _field(2, b"g")
    return tag(1, VARINT) + varint(8) + _field(7, inner) + _field(8, tag(2, VARINT) + varint(17))


def test_deeply_nested_graph_attributes():
    data = _nested_graphs(10000)
    with small_peak(4 * len(data) + (8 << 20)), time_limit(5):
        with pytest.raises(onyx.InvalidProtobuf, match="nested"):
            onyx.load(data)


def test_nesting_within_the_limit_loads():
    onyx.load(_nested_graphs(20))


def test_deeply_nested_types():
    t = _field(1, tag(1, VARINT) + varint(1))  # tensor_type float
    for _ in range(10000):
        t = _field(4, _field(1, t))  # sequence_type { elem_type: t }
    vi = _field(1, b"x") + _field(2, t)
    graph = _field(2, b"g") + _field(11, vi)
    data = tag(1, VARINT) + varint(8) + _field(7, graph) + _field(8, tag(2, VARINT) + varint(17))
    with small_peak(4 * len(data) + (8 << 20)), time_limit(5):
        with pytest.raises(onyx.InvalidProtobuf, match="nested"):
            onyx.load(data)


def test_many_attributes_in_one_node_are_linear():
    attrs = b"".join(
        _field(5, _field(1, b"a%d" % i) + tag(20, VARINT) + varint(2) + tag(3, VARINT) + varint(i))
        for i in range(20000)
    )
    node = _field(1, b"x") + _field(2, b"y") + _field(4, b"Identity") + attrs
    graph = _field(1, node) + _field(2, b"g")
    data = tag(1, VARINT) + varint(8) + _field(7, graph) + _field(8, tag(2, VARINT) + varint(17))
    start = time.perf_counter()
    m = onyx.load(data)
    assert len(m.graph.nodes[0].attributes) == 20000
    assert time.perf_counter() - start < 2


def test_wrong_wire_types_are_kept_or_refused_never_crash():
    bad_ir = tag(1, LEN) + varint(1) + b"\x08"
    with pytest.raises(onyx.InvalidProtobuf):
        load_everything(bad_ir)
    proto = helper.make_model(helper.make_graph([], "g", [], []), opset_imports=[helper.make_opsetid("", 17)])
    data = proto.SerializeToString() + tag(99, 3) + tag(99, 4)  # a (legacy) group field after the model
    with pytest.raises(onyx.InvalidProtobuf):
        onyx.serialize(onyx.load(data))
