"""tritonclient (REST JSON, REST binary, gRPC) against onyx serve: results identical to the session's."""

from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from .clients import PROTOCOLS, infer, same


@pytest.fixture
def client(request, http_client, grpc_client):
    return grpc_client if request.param == "grpc" else http_client


def _reference(sessions, model, version, feeds):
    sess = sessions[(model, version)]
    names = [o.name for o in sess.get_outputs()]
    values = sess.run(
        None, {k: (v.astype(object) if v.dtype == object else v) for k, (v, _) in feeds.items()}
    )
    return dict(zip(names, values))


def _check(got, want):
    assert set(got) == set(want)
    for name in want:
        w = want[name]
        if w.dtype == object:
            w = np.array(
                [s.encode() if isinstance(s, str) else s for s in w.reshape(-1)], dtype=object
            ).reshape(w.shape)
        assert same(got[name], w), (name, got[name], w)


rng = np.random.default_rng(0)


@pytest.mark.parametrize("client,protocol", [(p, p) for p in PROTOCOLS], indirect=["client"])
class TestModels:
    def test_float_two_inputs_two_outputs(self, client, protocol, sessions):
        feeds = {
            "INPUT0": (rng.standard_normal((3, 4)).astype(np.float32), "FP32"),
            "INPUT1": (rng.standard_normal((3, 4)).astype(np.float32), "FP32"),
        }
        got, _ = infer(protocol, client, "simple", feeds, version="1")
        _check(got, _reference(sessions, "simple", 1, feeds))

    def test_versions(self, client, protocol, sessions):
        feeds = {
            "INPUT0": (np.ones((1, 4), np.float32), "FP32"),
            "INPUT1": (np.ones((1, 4), np.float32), "FP32"),
        }
        v1, _ = infer(protocol, client, "simple", feeds, version="1")
        v2, _ = infer(protocol, client, "simple", feeds, version="2")
        latest, _ = infer(protocol, client, "simple", feeds)
        assert same(v1["OUTPUT0"], np.full((1, 4), 2, np.float32))
        assert same(v2["OUTPUT0"], np.full((1, 4), 102, np.float32))
        assert same(latest["OUTPUT0"], v2["OUTPUT0"])  # no version: the highest served

    def test_requested_output_and_id(self, client, protocol):
        feeds = {
            "INPUT0": (np.ones((2, 4), np.float32), "FP32"),
            "INPUT1": (np.ones((2, 4), np.float32), "FP32"),
        }
        got, response = infer(
            protocol, client, "simple", feeds, version="1", outputs=["OUTPUT1"], request_id="r-7"
        )
        assert list(got) == ["OUTPUT1"]
        assert same(got["OUTPUT1"], np.zeros((2, 4), np.float32))
        rid = response["id"] if isinstance(response, dict) else response.id
        assert rid == "r-7"

    def test_integers(self, client, protocol, sessions):
        feeds = {"x": (rng.integers(-1000, 1000, (4, 3)).astype(np.int32), "INT32")}
        got, _ = infer(protocol, client, "integers", feeds)
        _check(got, _reference(sessions, "integers", 1, feeds))
        assert got["y"].dtype == np.int64

    def test_strings(self, client, protocol, sessions):
        words = np.array(["hello", "wörld", "", "MiXeD case"], dtype=object)
        feeds = {"text": (np.array([w.encode() for w in words], dtype=object), "BYTES")}
        got, _ = infer(protocol, client, "strings", feeds)
        want = _reference(sessions, "strings", 1, {"text": (words, "BYTES")})
        _check(got, want)

    def test_static_shape_no_batching(self, client, protocol, sessions):
        feeds = {"x": (rng.standard_normal((2, 3)), "FP64")}
        got, _ = infer(protocol, client, "fixed", feeds)
        _check(got, _reference(sessions, "fixed", 1, feeds))

    def test_dynamic_batch_sizes(self, client, protocol, sessions):
        for n in (1, 2, 7):
            feeds = {"x": (rng.integers(0, 9, (n, 3)).astype(np.int32), "INT32")}
            if n > 4:  # over the inferred max_batch_size (4): refused, see test_errors
                continue
            got, _ = infer(protocol, client, "integers", feeds)
            _check(got, _reference(sessions, "integers", 1, feeds))

    def test_fp16_bool_uint8_bf16(self, client, protocol, sessions):
        if protocol == "http-json":
            pytest.skip("tritonclient sends BF16 in binary form only")
        feeds = {
            "h": (rng.standard_normal((2, 2)).astype(np.float16), "FP16"),
            "flag": (np.array([[True, False], [False, True]]), "BOOL"),
            "u": (np.array([[0, 7], [254, 3]], np.uint8), "UINT8"),
            "bf": (rng.standard_normal((2, 2)).astype(ml_dtypes.bfloat16), "BF16"),
        }
        got, _ = infer(protocol, client, "mixed", feeds)
        want = _reference(sessions, "mixed", 1, feeds)
        for name in ("h2", "not_flag", "u1"):
            assert same(got[name], want[name]), name
        # tritonclient hands BF16 back as float32 (numpy has no bfloat16): compare values
        assert np.array_equal(got["bf_out"].astype(np.float32), want["bf_out"].astype(np.float32))


def test_fp16_bool_uint8_in_json(http_client, sessions):
    feeds = {
        "h": (np.array([[0.5, -2.0], [1.25, 3.0]], np.float16), "FP16"),
        "flag": (np.array([[True, False], [False, True]]), "BOOL"),
        "u": (np.array([[0, 7], [254, 3]], np.uint8), "UINT8"),
        "bf": (np.zeros((2, 2), ml_dtypes.bfloat16), "BF16"),
    }
    import tritonclient.http as httpclient

    inputs = []
    for name, (array, datatype) in feeds.items():
        i = httpclient.InferInput(name, list(array.shape), datatype)
        i.set_data_from_numpy(array, binary_data=(datatype == "BF16"))
        inputs.append(i)
    outs = [httpclient.InferRequestedOutput(n, binary_data=False) for n in ("h2", "not_flag", "u1")]
    result = http_client.infer("mixed", inputs, outputs=outs)
    want = _reference(sessions, "mixed", 1, feeds)
    for name in ("h2", "not_flag", "u1"):
        assert same(result.as_numpy(name), want[name]), name


def test_metadata_and_config(http_client, grpc_client):
    meta = http_client.get_model_metadata("simple")
    assert meta["platform"] == "onnxruntime_onnx"
    assert meta["versions"] == ["1", "2"]
    assert meta["inputs"][0] == {"name": "INPUT0", "datatype": "FP32", "shape": [-1, 4]}
    gmeta = grpc_client.get_model_metadata("simple", as_json=True)
    assert gmeta["inputs"][0]["shape"] == ["-1", "4"]  # the JSON form of int64 fields
    cfg = http_client.get_model_config("simple")
    assert cfg["max_batch_size"] == 8
    assert cfg["dynamic_batching"]["preferred_batch_size"] == [4, 8]
    assert cfg["instance_group"][0]["count"] == 2
    gcfg = grpc_client.get_model_config("simple", as_json=True)["config"]
    assert gcfg["max_batch_size"] == 8 and gcfg["input"][0]["data_type"] == "TYPE_FP32"
    assert gcfg["dynamic_batching"]["max_queue_delay_microseconds"] == "100"
    assert gcfg["version_policy"] == {"all": {}}
    inferred = http_client.get_model_config("integers")
    assert inferred["max_batch_size"] == 4 and inferred["input"][0]["dims"] == [3]
    assert http_client.get_model_config("fixed")["max_batch_size"] == 0


def test_server_metadata_and_health(http_client, grpc_client):
    assert http_client.is_server_live() and http_client.is_server_ready()
    assert grpc_client.is_server_live() and grpc_client.is_server_ready()
    assert http_client.is_model_ready("simple") and http_client.is_model_ready("simple", "1")
    assert not http_client.is_model_ready("simple", "9") and not http_client.is_model_ready("nope")
    assert grpc_client.is_model_ready("simple", "2") and not grpc_client.is_model_ready("nope")
    meta = http_client.get_server_metadata()
    assert meta["name"] == "onyx" and "binary_tensor_data" in meta["extensions"]
    assert "model_repository" in grpc_client.get_server_metadata(as_json=True)["extensions"]


def test_compressed_request_and_response(http_client, sessions):
    import tritonclient.http as httpclient

    x = rng.standard_normal((2, 4)).astype(np.float32)
    inputs = []
    for name in ("INPUT0", "INPUT1"):
        i = httpclient.InferInput(name, [2, 4], "FP32")
        i.set_data_from_numpy(x)
        inputs.append(i)
    for algorithm in ("gzip", "deflate"):
        result = http_client.infer(
            "simple",
            inputs,
            model_version="1",
            request_compression_algorithm=algorithm,
            response_compression_algorithm=algorithm,
        )
        assert same(result.as_numpy("OUTPUT0"), x + x)


def test_stream_infer(grpc_client):
    import queue

    import tritonclient.grpc as grpcclient

    results: queue.Queue = queue.Queue()
    grpc_client.start_stream(callback=lambda result, error: results.put((result, error)))
    try:
        for k in range(3):
            i = grpcclient.InferInput("x", [1, 3], "INT32")
            i.set_data_from_numpy(np.full((1, 3), k, np.int32))
            grpc_client.async_stream_infer("integers", [i], request_id=str(k))
        got = [results.get(timeout=30) for _ in range(3)]
    finally:
        grpc_client.stop_stream()
    by_id = {r.get_response().id: r for r, e in got if e is None}
    assert sorted(by_id) == ["0", "1", "2"]
    for k in range(3):
        assert same(by_id[str(k)].as_numpy("y"), np.full((1, 3), 2 * k + 1, np.int64))
