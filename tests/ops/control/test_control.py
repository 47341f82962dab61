"""If, Loop, Scan (8 and 9+) and SequenceMap, with subgraphs given as plain Python callables."""

from __future__ import annotations

import numpy as np
import pytest

from onyx.errors import InvalidArgument
from onyx.ops import registry


def kernel(op_type, opset):
    return registry.lookup(op_type, "", opset).fn


class Body:
    """A subgraph stand-in: a Python function with the attributes kernels read."""

    def __init__(self, fn, num_inputs, num_outputs):
        self.fn = fn
        self.num_inputs = num_inputs
        self.num_outputs = num_outputs
        self.input_names = [f"i{k}" for k in range(num_inputs)]
        self.output_names = [f"o{k}" for k in range(num_outputs)]
        self.calls = 0

    def __call__(self, *args):
        self.calls += 1
        assert len(args) == self.num_inputs
        return list(self.fn(*args))


# ---------------------------------------------------------------- If


@pytest.mark.parametrize("opset", [1, 11, 13, 16, 19, 21, 23, 24, 25])
def test_if_picks_branch_every_version(opset):
    then_b = Body(lambda: [np.array([1.0], np.float32), np.array(2, np.int64)], 0, 2)
    else_b = Body(lambda: [np.array([3.0], np.float32), np.array(4, np.int64)], 0, 2)
    f = kernel("If", opset)
    a, b = f(np.array(True), then_branch=then_b, else_branch=else_b)
    assert a.tolist() == [1.0] and b == 2
    a, b = f(np.array([False]), then_branch=then_b, else_branch=else_b)
    assert a.tolist() == [3.0] and b == 4
    assert then_b.calls == 1 and else_b.calls == 1


def test_if_single_sequence_and_optional_outputs():
    seq = [np.zeros(2, np.float32), np.ones(3, np.float32)]
    f = kernel("If", 16)
    out = f(np.array(True), then_branch=Body(lambda: [seq], 0, 1), else_branch=Body(lambda: [None], 0, 1))
    assert out is seq
    assert (
        f(np.array(False), then_branch=Body(lambda: [seq], 0, 1), else_branch=Body(lambda: [None], 0, 1))
        is None
    )


def test_if_condition_must_be_one_element():
    b = Body(lambda: [np.zeros(1)], 0, 1)
    with pytest.raises(InvalidArgument, match="cond"):
        kernel("If", 13)(np.array([True, False]), then_branch=b, else_branch=b)


# ---------------------------------------------------------------- Loop


def _count_body(limit=None):
    """carried x += i; scan output x * 2; cond = x < limit (or True)."""

    def fn(i, cond, x):
        nx = x + i.astype(x.dtype)
        keep = np.array(True) if limit is None else np.array(nx.sum() < limit)
        return [keep, nx, nx * 2]

    return Body(fn, 3, 3)


@pytest.mark.parametrize("opset", [1, 11, 13, 16, 19, 21, 23, 24, 25])
def test_loop_trip_count_every_version(opset):
    final, scans = kernel("Loop", opset)(
        np.array(4, np.int64), None, np.array([0.0], np.float32), body=_count_body()
    )
    assert final.dtype == np.float32 and final.tolist() == [6.0]
    assert scans.shape == (4, 1) and scans[:, 0].tolist() == [0.0, 2.0, 6.0, 12.0]


def test_loop_while_condition_and_both():
    final, scans = kernel("Loop", 13)(
        None, np.array(True), np.array([0], np.int64), body=_count_body(limit=5)
    )
    # x: 0, 1, 3, 6 -> stops once x >= 5
    assert final.tolist() == [6] and scans.shape == (4, 1)
    final, _ = kernel("Loop", 13)(
        np.array(2), np.array(True), np.array([0], np.int64), body=_count_body(limit=5)
    )
    assert final.tolist() == [1]
    # cond false from the start: no iteration
    body = _count_body(limit=5)
    final, scans = kernel("Loop", 13)(np.array(9), np.array(False), np.array([7], np.int64), body=body)
    assert final.tolist() == [7] and scans.shape[0] == 0 and body.calls == 0


def test_loop_zero_trip_count_keeps_initial_values():
    final, scans = kernel("Loop", 16)(np.array(0), None, np.array([1.5], np.float32), body=_count_body())
    assert final.tolist() == [1.5] and scans.shape == (0,)


def test_loop_iteration_number_and_cond_types():
    seen = []

    def fn(i, cond, x):
        seen.append((i.dtype, i.shape, cond.dtype, cond.shape))
        return [cond, x]

    kernel("Loop", 11)(np.array(2), np.array(True), np.zeros(1), body=Body(fn, 3, 2))
    assert seen == [(np.dtype(np.int64), (), np.dtype(bool), ())] * 2


def test_loop_carries_sequences_and_empty_optionals():
    def fn(i, cond, seq, opt):
        return [cond, seq + [i.astype(np.float32)], opt]

    body = Body(fn, 4, 3)
    start = [np.array(-1.0, np.float32)]
    seq, opt = kernel("Loop", 16)(np.array(3), None, start, None, body=body)
    assert [float(s) for s in seq] == [-1.0, 0.0, 1.0, 2.0] and opt is None
    assert len(start) == 1  # the input list is not mutated
    # a trailing empty optional may arrive as a missing input
    seq, opt = kernel("Loop", 16)(np.array(1), None, start, body=body)
    assert len(seq) == 2 and opt is None


def test_loop_scan_output_shape_change_raises():
    def fn(i, cond, x):
        return [cond, x, np.zeros(int(i) + 1)]

    with pytest.raises(InvalidArgument, match="scan output"):
        kernel("Loop", 13)(np.array(3), None, np.zeros(1), body=Body(fn, 3, 3))


def test_loop_body_arity_checked():
    with pytest.raises(InvalidArgument):
        kernel("Loop", 13)(np.array(1), None, np.zeros(1), np.zeros(1), body=Body(lambda *a: [], 3, 2))


# ---------------------------------------------------------------- Scan 9+


def _sum_body():
    """state += x; scan output = state."""

    def fn(state, x):
        s = state + x
        return [s, s.copy()]

    return Body(fn, 2, 2)


@pytest.mark.parametrize("opset", [9, 11, 16, 19, 21, 23, 24, 25])
def test_scan_every_version_cumsum(opset):
    x = np.arange(12, dtype=np.float32).reshape(4, 3)
    final, ys = kernel("Scan", opset)(np.zeros(3, np.float32), x, body=_sum_body(), num_scan_inputs=1)
    np.testing.assert_array_equal(final, x.sum(0))
    np.testing.assert_array_equal(ys, np.cumsum(x, 0))


def test_scan_axes_and_directions():
    x = np.arange(24, dtype=np.float64).reshape(2, 4, 3)
    f = kernel("Scan", 16)
    # scan axis 1 backwards, accumulate along output axis 1 (of [2, 4, 3]) prepending
    final, ys = f(
        np.zeros((2, 3)),
        x,
        body=_sum_body(),
        num_scan_inputs=1,
        scan_input_axes=[1],
        scan_input_directions=[1],
        scan_output_axes=[-2],
        scan_output_directions=[1],
    )
    rev = np.cumsum(x[:, ::-1], axis=1)  # states in iteration order, along axis 1
    np.testing.assert_allclose(final, x.sum(1))
    np.testing.assert_allclose(ys, rev[:, ::-1])


def test_scan_two_inputs_zip_and_multi_state():
    def fn(a, b, x, y):
        return [a + x, b * y, x - y]

    x = np.arange(1, 7, dtype=np.int64).reshape(3, 2)
    y = np.full((2, 3), 2, dtype=np.int64)
    a, b, d = kernel("Scan", 11)(
        np.zeros(2, np.int64),
        np.ones(2, np.int64),
        x,
        y,
        body=Body(fn, 4, 3),
        num_scan_inputs=2,
        scan_input_axes=[0, 1],
    )
    assert a.tolist() == [9, 12] and b.tolist() == [8, 8]
    np.testing.assert_array_equal(d, x - y.T)


def test_scan_length_mismatch_raises():
    with pytest.raises(InvalidArgument, match="steps"):
        kernel("Scan", 9)(
            np.zeros(2), np.zeros((3, 2)), np.zeros((4, 2)), body=Body(None, 3, 1), num_scan_inputs=2
        )
    with pytest.raises(InvalidArgument, match="scan_input_axes"):
        kernel("Scan", 9)(
            np.zeros(2), np.zeros((3, 2)), body=_sum_body(), num_scan_inputs=1, scan_input_axes=[2]
        )


# ---------------------------------------------------------------- Scan 8


def test_scan8_batch_and_sequence_lens():
    x = np.arange(1, 13, dtype=np.float32).reshape(2, 3, 2)  # [batch, seq, 2]
    init = np.zeros((2, 2), np.float32)
    final, ys = kernel("Scan", 8)(np.array([3, 2], np.int64), init, x, body=_sum_body(), num_scan_inputs=1)
    np.testing.assert_array_equal(final[0], x[0].sum(0))
    np.testing.assert_array_equal(final[1], x[1, :2].sum(0))
    assert ys.shape == (2, 3, 2)
    np.testing.assert_array_equal(ys[0], np.cumsum(x[0], 0))
    np.testing.assert_array_equal(ys[1, :2], np.cumsum(x[1, :2], 0))
    np.testing.assert_array_equal(ys[1, 2], 0)  # padding


def test_scan8_reverse_and_no_lens():
    x = np.arange(6, dtype=np.float32).reshape(1, 3, 2)
    final, ys = kernel("Scan", 8)(
        None, np.zeros((1, 2), np.float32), x, body=_sum_body(), num_scan_inputs=1, directions=[1]
    )
    np.testing.assert_array_equal(ys[0], np.cumsum(x[0, ::-1], 0))
    np.testing.assert_array_equal(final[0], x[0].sum(0))
    # with lens 2 the reverse scan starts at step 1
    final, ys = kernel("Scan", 8)(
        np.array([2]), np.zeros((1, 2), np.float32), x, body=_sum_body(), num_scan_inputs=1, directions=[1]
    )
    np.testing.assert_array_equal(ys[0, :2], np.cumsum(x[0, 1::-1], 0))


def test_scan8_bad_sequence_lens():
    with pytest.raises(InvalidArgument, match="sequence_lens"):
        kernel("Scan", 8)(
            np.array([5]), np.zeros((1, 2)), np.zeros((1, 3, 2)), body=_sum_body(), num_scan_inputs=1
        )


def test_scan_matches_onnxruntime():
    import onnxruntime as ort
    from onnx import TensorProto, helper

    from tests.conformance.harness import run_model

    body = helper.make_graph(
        [helper.make_node("Add", ["s", "x"], ["s2"]), helper.make_node("Mul", ["s2", "x"], ["y"])],
        "body",
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [3]) for n in ("s", "x")],
        [helper.make_tensor_value_info(n, TensorProto.FLOAT, [3]) for n in ("s2", "y")],
    )
    node = helper.make_node(
        "Scan",
        ["s0", "X"],
        ["S", "Y"],
        body=body,
        num_scan_inputs=1,
        scan_input_axes=[1],
        scan_input_directions=[1],
        scan_output_axes=[1],
    )
    graph = helper.make_graph(
        [node],
        "g",
        [
            helper.make_tensor_value_info("s0", TensorProto.FLOAT, [3]),
            helper.make_tensor_value_info("X", TensorProto.FLOAT, [3, 5]),
        ],
        [
            helper.make_tensor_value_info("S", TensorProto.FLOAT, None),
            helper.make_tensor_value_info("Y", TensorProto.FLOAT, None),
        ],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    rng = np.random.default_rng(0)
    s0 = rng.standard_normal(3).astype(np.float32)
    x = rng.standard_normal((3, 5)).astype(np.float32)
    expected = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"]).run(
        None, {"s0": s0, "X": x}
    )
    got = run_model(model, [s0, x])
    for g, e in zip(got, expected):
        np.testing.assert_allclose(g, e, rtol=1e-5)


# ---------------------------------------------------------------- SequenceMap


def test_sequence_map_mixed_inputs_and_several_outputs():
    seq = [np.arange(n, dtype=np.float32) for n in (1, 2, 3)]
    other = [np.full(n, 10, np.float32) for n in (1, 2, 3)]

    def fn(a, b, c):
        return [a + b + c, np.array(a.shape, np.int64)]

    sums, shapes = kernel("SequenceMap", 17)(seq, other, np.float32(1), body=Body(fn, 3, 2))
    assert [s.tolist() for s in sums] == [[11.0], [11.0, 12.0], [11.0, 12.0, 13.0]]
    assert [s.tolist() for s in shapes] == [[1], [2], [3]]


def test_sequence_map_single_output_is_a_sequence():
    out = kernel("SequenceMap", 17)([np.zeros(1), np.ones(2)], body=Body(lambda a: [a * 2], 1, 1))
    assert isinstance(out, list) and len(out) == 2
    assert kernel("SequenceMap", 17)([], body=Body(lambda a: [a], 1, 1)) == []


def test_sequence_map_length_mismatch():
    with pytest.raises(InvalidArgument, match="length"):
        kernel("SequenceMap", 17)(
            [np.zeros(1)], [np.zeros(1), np.zeros(1)], body=Body(lambda a, b: [a], 2, 1)
        )
