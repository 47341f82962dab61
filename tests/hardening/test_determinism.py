"""SessionOptions.use_deterministic_compute (issue 23): every kernel takes one path whatever the load, so a
run gives the same bits alone and among concurrent runs. Without it, results stay within float32
tolerance of the run alone.

How: during a deterministic session's run BLAS runs on one thread (MKL picks its thread count per call
under load, MKL_DYNAMIC, and its results depend on it), and the big products are split over onyx's own
threads in pieces fixed by the shape and the session's thread count (kernels/blas_threads.for_run).
"""

from __future__ import annotations

import threading

import numpy as np
import pytest
from onnx import TensorProto, helper

import onyx
from bench.soak import lstm_model, transformer_model
from onyx.kernels import blas_threads
from tests.runtime._util import make_model, tensor

DOMAIN = "test.hardening.determinism"
_SEEN: list = []


@onyx.custom_op("BlasProbe", domain=DOMAIN, pure=False)
def _blas_probe(x):
    _SEEN.append((blas_threads.blas_threads(), blas_threads.single_threaded()))
    return x


def _feeds_transformer(rng, shapes, d=64):
    out = []
    for b, s in shapes:
        mask = np.ones((b, s), np.float32)
        mask[:, s // 2 :] = rng.random((b, s - s // 2)) < 0.5
        out.append({"x": rng.standard_normal((b, s, d)).astype(np.float32), "mask": mask})
    return out


def _feeds_lstm(rng, shapes, inputs=64):
    return [{"x": rng.standard_normal((s, b, inputs)).astype(np.float32)} for b, s in shapes]


SHAPES = [(1, 7), (3, 16), (8, 5), (12, 20), (2, 33)]  # batches on both sides of the LSTM's C loop (8 rows)


def _session(model: bytes, deterministic: bool) -> onyx.InferenceSession:
    so = onyx.SessionOptions()
    so.use_deterministic_compute = deterministic
    return onyx.InferenceSession(model, so)


def _concurrent(session, feeds, threads=4, rounds=3) -> list[list[list[np.ndarray]]]:
    """Every feed run ``rounds`` times on each of ``threads`` threads, all at once (a barrier starts them
    together); results[thread][i] is the outputs of one run of feeds[i % len(feeds)]."""
    barrier = threading.Barrier(threads)
    results: list = [None] * threads
    errors: list = []

    def work(t: int) -> None:
        try:
            barrier.wait(30)
            order = [(t + i) % len(feeds) for i in range(len(feeds) * rounds)]  # each thread its own order
            results[t] = [(k, session.run(None, feeds[k])) for k in order]
        except BaseException as e:  # noqa: BLE001 - re-raised below
            errors.append(e)

    ts = [threading.Thread(target=work, args=(t,)) for t in range(threads)]
    for t in ts:
        t.start()
    for t in ts:
        t.join(120)
    if errors:
        raise errors[0]
    return results


MODELS = {
    "lstm": (lambda: lstm_model(hidden=48, inputs=64), _feeds_lstm),
    "transformer": (lambda: transformer_model(layers=1, d=64, heads=4, ff=256), _feeds_transformer),
}


@pytest.mark.parametrize("name", sorted(MODELS))
def test_deterministic_runs_give_the_same_bits_alone_and_under_four_threads(name):
    build, feeds_of = MODELS[name]
    s = _session(build(), True)
    feeds = feeds_of(np.random.default_rng(0), SHAPES)
    alone = [s.run(None, f) for f in feeds]
    for per_thread in _concurrent(s, feeds):
        for k, outs in per_thread:
            for got, want in zip(outs, alone[k]):
                assert np.array_equal(got, want), f"{name} feed {k}: differs from the run alone"


@pytest.mark.parametrize("name", sorted(MODELS))
def test_deterministic_bits_hold_beside_a_session_that_changes_blas_threads(name):
    # another session with its own thread count runs big products at the same time: it sets BLAS's
    # (process-wide, for OpenBLAS) thread count while our runs are in flight
    build, feeds_of = MODELS[name]
    s = _session(build(), True)
    feeds = feeds_of(np.random.default_rng(1), SHAPES)
    alone = [s.run(None, f) for f in feeds]
    so = onyx.SessionOptions()
    so.intra_op_num_threads = 2
    other = onyx.InferenceSession(transformer_model(layers=1, d=128, heads=4, ff=512), so)
    other_feed = _feeds_transformer(np.random.default_rng(2), [(8, 64)], d=128)[0]
    done = threading.Event()

    def noise() -> None:
        while not done.is_set():
            other.run(None, other_feed)

    t = threading.Thread(target=noise)
    t.start()
    try:
        results = _concurrent(s, feeds, threads=3, rounds=2)
    finally:
        done.set()
        t.join(60)
    for per_thread in results:
        for k, outs in per_thread:
            assert all(np.array_equal(g, w) for g, w in zip(outs, alone[k])), f"{name} feed {k}"


@pytest.mark.parametrize("name", sorted(MODELS))
def test_without_determinism_concurrent_runs_agree_within_float32_tolerance(name):
    build, feeds_of = MODELS[name]
    s = _session(build(), False)
    feeds = feeds_of(np.random.default_rng(3), SHAPES)
    alone = [s.run(None, f) for f in feeds]
    for per_thread in _concurrent(s, feeds, rounds=2):
        for k, outs in per_thread:
            for got, want in zip(outs, alone[k]):
                # products of depth <= 256 in another order: ~depth * eps relative to the sum of |terms|
                np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


def test_a_deterministic_run_has_blas_on_one_thread_and_restores_it():
    model = make_model(
        [helper.make_node("BlasProbe", ["x"], ["y"], domain=DOMAIN)],
        [tensor("x", TensorProto.FLOAT, [2])],
        [tensor("y", TensorProto.FLOAT, [2])],
        extra_opsets={DOMAIN: 1},
    ).SerializeToString()
    before = blas_threads.blas_threads()
    _SEEN.clear()
    _session(model, True).run(None, {"x": np.ones(2, np.float32)})
    assert _SEEN == [(1, True)]
    assert blas_threads.blas_threads() == before
    _SEEN.clear()
    _session(model, False).run(None, {"x": np.ones(2, np.float32)})
    assert _SEEN and _SEEN[0][0] == before  # a default session leaves BLAS's count alone
