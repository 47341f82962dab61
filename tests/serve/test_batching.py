"""Dynamic batching: stacked along axis 0 up to max_batch_size, split back, shapes never mixed.

The configurations use queue delays far longer than any test, so batches form by size alone and the
assertions hold whatever the thread scheduling."""

from __future__ import annotations

import threading

import numpy as np
import pytest

from onyx.serve.batcher import Scheduler
from onyx.serve.errors import ModelFailure, Unavailable

from .clients import same

LONG = 60_000_000  # microseconds: a queue delay that never expires in a test


class Recorder:
    """A runner that records the shapes it was given and doubles its input."""

    def __init__(self):
        self.calls: list[tuple] = []
        self.lock = threading.Lock()

    def __call__(self, feed):
        with self.lock:
            self.calls.append(feed["x"].shape)
        return {"y": feed["x"] * 2}


def test_batches_fill_to_max_and_split_back():
    rec = Recorder()
    s = Scheduler("m", [rec], max_batch_size=4, queue_delay_us=LONG)
    xs = [np.full((1, 2), i, np.float32) for i in range(8)]
    futures = [s.submit({"x": x}, 1) for x in xs]
    results = [f.result(timeout=60)[0]["y"] for f in futures]
    s.close()
    assert rec.calls == [(4, 2), (4, 2)]
    for x, y in zip(xs, results):
        assert same(y, x * 2)


def test_requests_of_different_shapes_never_mix():
    rec = Recorder()
    s = Scheduler("m", [rec], max_batch_size=4, queue_delay_us=LONG)
    futures = []
    for i in range(8):  # interleaved: [1, 2] and [1, 3] rows
        x = np.full((1, 2 + i % 2), i, np.float32)
        futures.append((x, s.submit({"x": x}, 1)))
    for x, f in futures:
        assert same(f.result(timeout=60)[0]["y"], x * 2)
    s.close()
    assert sorted(rec.calls) == [(4, 2), (4, 3)]


def test_requests_with_several_rows_and_preferred_sizes():
    rec = Recorder()
    s = Scheduler("m", [rec], max_batch_size=8, queue_delay_us=LONG, preferred_batch_sizes=[6])
    sizes = [2, 3, 1, 4, 2]
    futures = [s.submit({"x": np.ones((n, 2), np.float32) * n}, n) for n in sizes]
    out = [f.result(timeout=60)[0]["y"] for f in futures]
    s.close()
    assert [o.shape[0] for o in out] == sizes
    assert rec.calls == [(6, 2), (6, 2)]  # 2+3+1 reach the preferred 6; then 4+2
    for n, o in zip(sizes, out):
        assert (o == 2 * n).all()


def test_close_runs_what_is_queued_then_refuses():
    rec = Recorder()
    s = Scheduler("m", [rec], max_batch_size=8, queue_delay_us=LONG)
    f = s.submit({"x": np.ones((1, 2), np.float32)}, 1)
    s.close()  # does not wait for the batch to fill
    assert same(f.result(timeout=60)[0]["y"], np.full((1, 2), 2, np.float32))
    with pytest.raises(Unavailable):
        s.submit({"x": np.ones((1, 2), np.float32)}, 1)


def test_a_model_error_fails_its_batch_and_the_worker_lives_on():
    calls = []

    def runner(feed):
        calls.append(1)
        if len(calls) == 1:
            raise ValueError("boom")
        return {"y": feed["x"]}

    s = Scheduler("m", [runner], max_batch_size=2, queue_delay_us=LONG)
    bad = [s.submit({"x": np.ones((1, 2), np.float32)}, 1) for _ in range(2)]
    for f in bad:
        with pytest.raises(ModelFailure, match="boom"):
            f.result(timeout=60)
    good = [s.submit({"x": np.ones((1, 2), np.float32)}, 1) for _ in range(2)]
    assert all(f.result(timeout=60)[0]["y"].shape == (1, 2) for f in good)
    s.close()


def test_outputs_without_the_batch_axis_are_a_model_failure():
    s = Scheduler("m", [lambda feed: {"y": np.zeros(3)}], max_batch_size=2, queue_delay_us=LONG)
    futures = [s.submit({"x": np.ones((1, 2), np.float32)}, 1) for _ in range(2)]
    for f in futures:
        with pytest.raises(ModelFailure, match="batch"):
            f.result(timeout=60)
    s.close()


def test_concurrent_clients_are_batched(server, http_client):
    """32 concurrent tritonclient requests: 4 executions of 8 rows, every result correct, no failure."""
    import tritonclient.http as httpclient

    metrics = server.core.metrics
    before = {
        k: metrics.value(k, "batched", "1")
        for k in (
            "nv_inference_request_success",
            "nv_inference_exec_count",
            "nv_inference_count",
            "nv_inference_request_failure",
        )
    }
    results: dict[int, np.ndarray] = {}
    errors: list[BaseException] = []

    def one(k: int) -> None:
        try:
            client = httpclient.InferenceServerClient(f"127.0.0.1:{server.http_port}", network_timeout=120)
            i = httpclient.InferInput("x", [1, 4], "FP32")
            i.set_data_from_numpy(np.full((1, 4), k, np.float32), binary_data=k % 2 == 0)
            results[k] = client.infer("batched", [i]).as_numpy("y")
            client.close()
        except BaseException as e:  # noqa: BLE001 - reported below
            errors.append(e)

    threads = [threading.Thread(target=one, args=(k,)) for k in range(32)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(180)
    assert not errors, errors
    for k in range(32):
        assert same(results[k], np.full((1, 4), 2 * k, np.float32))
    after = {k: metrics.value(k, "batched", "1") for k in before}
    assert after["nv_inference_request_success"] - before["nv_inference_request_success"] == 32
    assert after["nv_inference_count"] - before["nv_inference_count"] == 32
    assert after["nv_inference_exec_count"] - before["nv_inference_exec_count"] == 4
    assert after["nv_inference_request_failure"] == before["nv_inference_request_failure"]
