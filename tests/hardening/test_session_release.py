"""A dropped session is freed by reference counting alone (issue 23): with the garbage collector off,
``del session`` frees the session, its plan, its model (whose IR is a web of cycles) with its weights and
mapped files, whatever the session did (external data, IOBinding, profiling, cancelled runs, control
flow, intermediate values). A model the caller still holds stays whole."""

from __future__ import annotations

import contextlib
import gc
import os
import weakref

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import onyx
from onyx.model_io import load, serialize
from onyx.runtime.cancellation import Terminated
from tests.runtime._util import make_model, tensor

DOMAIN = "test.hardening.session_release"
_STOPPING: list = []  # the RunOptions the custom op below sets terminate on, from inside the run


@onyx.custom_op("StopHere", domain=DOMAIN, pure=False)
def _stop_here(x):
    _STOPPING[0].terminate = True  # the run stops before its next node
    return x


@contextlib.contextmanager
def _collector_off():
    was = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if was:
            gc.enable()


def _left_to_collector(make) -> list:
    """Drop the session ``make()`` returns first (with what came with it) with the collector off: asserts
    the session is freed by reference counting, and returns onyx's objects only a collection would free."""
    held = make()
    gc.collect()  # garbage of the session's creation (none expected, but not what is measured here)
    with _collector_off():
        ref = weakref.ref(held[0])
        held = None
        assert ref() is None, "the session is still referenced after del"
        gc.set_debug(gc.DEBUG_SAVEALL)
        try:
            gc.collect()
            return [o for o in gc.garbage if type(o).__module__.startswith("onyx.")]
        finally:
            gc.set_debug(0)
            gc.garbage.clear()


def _weights_model(rows: int = 64, cols: int = 64, seed: int = 0) -> onnx.ModelProto:
    rng = np.random.default_rng(seed)
    w1 = rng.standard_normal((cols, rows)).astype(np.float32)
    w2 = rng.standard_normal((rows, cols)).astype(np.float32)
    return make_model(
        [
            helper.make_node("MatMul", ["x", "w1"], ["h"]),
            helper.make_node("Relu", ["h"], ["r"]),
            helper.make_node("MatMul", ["r", "w2"], ["y"]),
        ],
        [tensor("x", TensorProto.FLOAT, ["N", cols])],
        [tensor("y", TensorProto.FLOAT, ["N", cols])],
        initializers=[numpy_helper.from_array(w1, "w1"), numpy_helper.from_array(w2, "w2")],
    )


def _if_model() -> onnx.ModelProto:
    w = numpy_helper.from_array(np.arange(4, dtype=np.float32), "w")
    then_g = helper.make_graph([helper.make_node("Add", ["x", "w"], ["t"])], "then", [], [tensor("t")])
    else_g = helper.make_graph([helper.make_node("Sub", ["x", "w"], ["e"])], "else", [], [tensor("e")])
    return make_model(
        [helper.make_node("If", ["c"], ["y"], then_branch=then_g, else_branch=else_g)],
        [tensor("c", TensorProto.BOOL, []), tensor("x", TensorProto.FLOAT, [4])],
        [tensor("y", TensorProto.FLOAT, [4])],
        initializers=[w],
    )


def _mapped(path: str) -> int:
    real = os.path.realpath(path)
    with open("/proc/self/maps") as fh:
        return sum(1 for line in fh if line.rstrip().endswith(real))


X = np.ones((2, 64), np.float32)


def test_plain_session_is_freed_by_refcount():
    def make():
        s = onyx.InferenceSession(_weights_model().SerializeToString())
        s.run(None, {"x": X})
        return (s,)

    assert _left_to_collector(make) == []


def test_session_with_control_flow_and_intermediate_values_is_freed_by_refcount():
    def with_if():
        s = onyx.InferenceSession(_if_model().SerializeToString())
        y = s.run(None, {"c": np.array(True), "x": np.ones(4, np.float32)})[0]
        np.testing.assert_array_equal(y, 1 + np.arange(4, dtype=np.float32))
        return (s,)

    def with_values():
        s = onyx.InferenceSession(_weights_model().SerializeToString())
        s.run(["h"], {"x": X})  # a value that is not an output: a second plan, cached by the session
        return (s,)

    assert _left_to_collector(with_if) == []
    assert _left_to_collector(with_values) == []


@pytest.mark.skipif(not os.path.exists("/proc/self/maps"), reason="needs Linux /proc")
def test_external_data_is_unmapped_at_del_and_the_file_can_be_replaced(tmp_path):
    path = str(tmp_path / "m.onnx")
    data = str(tmp_path / "m.bin")
    onnx.save_model(_weights_model(), path, save_as_external_data=True, location="m.bin", size_threshold=0)
    want = onyx.InferenceSession(_weights_model().SerializeToString()).run(None, {"x": X})[0]
    gc.collect()
    with _collector_off():
        s = onyx.InferenceSession(path)
        np.testing.assert_allclose(s.run(None, {"x": X})[0], want, rtol=1e-6)
        assert _mapped(data) >= 1
        ref = weakref.ref(s)
        del s
        assert ref() is None
        assert _mapped(data) == 0 and _mapped(path) == 0, "the model's files are still mapped after del"
        os.remove(data)  # gone: a new model saved at the same place is the one read
        onnx.save_model(
            _weights_model(seed=1), path, save_as_external_data=True, location="m.bin", size_threshold=0
        )
        other = onyx.InferenceSession(_weights_model(seed=1).SerializeToString()).run(None, {"x": X})[0]
        np.testing.assert_allclose(onyx.InferenceSession(path).run(None, {"x": X})[0], other, rtol=1e-6)


def test_session_with_iobinding_and_profiling_is_freed_by_refcount(tmp_path):
    so = onyx.SessionOptions()
    so.enable_profiling = True
    so.profile_file_prefix = str(tmp_path / "profile")

    def make():
        s = onyx.InferenceSession(_weights_model().SerializeToString(), so)
        binding = s.io_binding()
        binding.bind_cpu_input("x", X)
        binding.bind_output("y")
        s.run_with_iobinding(binding)
        assert binding.copy_outputs_to_cpu()[0].shape == (2, 64)
        s.run(None, {"x": X})  # a profiled run kept by the session (end_profiling not called)
        return s, binding

    assert _left_to_collector(make) == []


def test_session_whose_runs_were_cancelled_is_freed_by_refcount():
    model = make_model(
        [
            helper.make_node("MatMul", ["x", "w1"], ["h"]),
            helper.make_node("StopHere", ["h"], ["s"], domain=DOMAIN),
            helper.make_node("MatMul", ["s", "w2"], ["y"]),
        ],
        [tensor("x", TensorProto.FLOAT, ["N", 64])],
        [tensor("y", TensorProto.FLOAT, ["N", 64])],
        initializers=list(_weights_model().graph.initializer),
        extra_opsets={DOMAIN: 1},
    )

    def make():
        s = onyx.InferenceSession(model.SerializeToString())
        ro = onyx.RunOptions()
        _STOPPING[:] = [ro]
        with pytest.raises(Terminated):  # stopped in flight, between two nodes
            s.run(None, {"x": X}, ro)
        ro = onyx.RunOptions()
        ro.terminate = True
        with pytest.raises(Terminated):  # refused at once
            s.run(None, {"x": X}, ro)
        timed = onyx.RunOptions()
        timed.add_run_config_entry("run.timeout_ms", "60000")  # a deadline that does not run out
        _STOPPING[:] = [timed]
        with pytest.raises(Terminated):  # a run with a deadline, stopped in flight too
            s.run(None, {"x": X}, timed)
        _STOPPING.clear()
        return (s,)

    assert _left_to_collector(make) == []


def test_a_model_still_held_stays_whole():
    """What the caller holds of the session's model (the model, one node) or gave it is not touched."""
    data = _weights_model().SerializeToString()
    with _collector_off():
        s = onyx.InferenceSession(data)
        model = s.model
        node = s.model.graph.nodes[-1]
        del s
        assert [n.op_type for n in model.graph.nodes] == ["MatMul", "Relu", "MatMul"]
        assert node.graph is model.graph and node.inputs[0].producer is model.graph.nodes[1]
        assert load(serialize(model)).graph.nodes[0].op_type == "MatMul"
        given = load(data)
        s = onyx.InferenceSession(given)
        del s
        assert all(n.graph is given.graph for n in given.graph.nodes)
        assert onyx.InferenceSession(given).run(None, {"x": X})[0].shape == (2, 64)


def _rss_bytes() -> int:
    with open("/proc/self/statm") as fh:
        return int(fh.read().split()[1]) * os.sysconf("SC_PAGE_SIZE")


@pytest.mark.skipif(not os.path.exists("/proc/self/statm"), reason="needs Linux /proc")
def test_rss_does_not_grow_over_many_sessions(tmp_path):
    path = str(tmp_path / "big.onnx")
    onnx.save_model(_weights_model(rows=1024, cols=512), path)  # two 2 MiB weights, mapped from the file
    weight_bytes = 2 * 1024 * 512 * 4
    x = np.ones((8, 512), np.float32)

    def cycle() -> None:
        s = onyx.InferenceSession(path)
        s.run(None, {"x": x})  # the weights' pages are touched: they count in RSS while mapped
        del s

    gc.collect()
    with _collector_off():
        for _ in range(3):  # warm: modules, pools and caches outside any session
            cycle()
        before = _rss_bytes()
        for _ in range(30):
            cycle()
        grown = _rss_bytes() - before
    # a session left to the collector keeps its 4 MiB of weights: 30 of them would be 120 MiB; a bound of
    # twice one session's weights admits allocator noise and no more than one session's worth
    assert grown < 2 * weight_bytes, f"RSS grew {grown >> 20} MiB over 30 sessions"
