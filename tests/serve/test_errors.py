"""Every malformed request gets its 4xx (or gRPC status) with {"error": ...}, and the server keeps serving."""

from __future__ import annotations

import http.client
import json
import struct

import numpy as np
import pytest

from .models import MAX_BODY


def post(server, path: str, body: bytes, headers: dict | None = None) -> tuple[int, dict]:
    conn = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=60)
    try:
        conn.request("POST", path, body=body, headers=headers or {})
        r = conn.getresponse()
        data = r.read()
        return r.status, (json.loads(data) if data else {})
    finally:
        conn.close()


def simple_request(shape=(1, 4), datatype="FP32", data=None, name="INPUT0") -> dict:
    n = int(np.prod(shape))
    values = data if data is not None else [1.0] * n
    return {
        "inputs": [
            {"name": name, "datatype": datatype, "shape": list(shape), "data": values},
            {"name": "INPUT1", "datatype": "FP32", "shape": list(shape), "data": [1.0] * n},
        ]
    }


def assert_still_serves(server):
    status, body = post(server, "/v2/models/simple/versions/1/infer", json.dumps(simple_request()).encode())
    assert status == 200, body
    assert body["outputs"][0]["data"] == [2.0] * 4


INFER = "/v2/models/simple/versions/1/infer"

CASES = {
    "bad json": (INFER, b'{"inputs": [', {}, 400, "not valid JSON"),
    "not an object": (INFER, b"[1, 2]", {}, 400, "JSON object"),
    "no inputs": (INFER, b'{"outputs": []}', {}, 400, "inputs"),
    "unknown model": ("/v2/models/nope/infer", json.dumps(simple_request()).encode(), {}, 404, "nope"),
    "unknown version": (
        "/v2/models/simple/versions/7/infer",
        json.dumps(simple_request()).encode(),
        {},
        404,
        "version 7",
    ),
    "unknown datatype": (INFER, json.dumps(simple_request(datatype="FLOAT")).encode(), {}, 400, "datatype"),
    "wrong datatype": (INFER, json.dumps(simple_request(datatype="FP64")).encode(), {}, 400, "FP64"),
    "wrong shape": (INFER, json.dumps(simple_request(shape=(1, 5))).encode(), {}, 400, "shape [1, 5]"),
    "negative dim": (
        INFER,
        json.dumps(simple_request(shape=(1, -4), data=[1.0] * 4)).encode(),
        {},
        400,
        "shape",
    ),
    "element count": (INFER, json.dumps(simple_request(data=[1.0] * 7)).encode(), {}, 400, "7 values"),
    "string for FP32": (INFER, json.dumps(simple_request(data=["a"] * 4)).encode(), {}, 400, "numbers"),
    "batch over max": (INFER, json.dumps(simple_request(shape=(9, 4))).encode(), {}, 400, "max_batch_size"),
    "unknown input": (INFER, json.dumps(simple_request(name="INPUT9")).encode(), {}, 400, "INPUT9"),
    "unknown output": (
        INFER,
        json.dumps({**simple_request(), "outputs": [{"name": "OUT"}]}).encode(),
        {},
        400,
        "OUT",
    ),
    "missing input": (
        INFER,
        json.dumps({"inputs": simple_request()["inputs"][:1]}).encode(),
        {},
        400,
        "INPUT1",
    ),
    "int out of range": (
        "/v2/models/integers/infer",
        json.dumps(
            {"inputs": [{"name": "x", "datatype": "INT32", "shape": [1, 3], "data": [1, 2, 2**40]}]}
        ).encode(),
        {},
        400,
        "out of range",
    ),
}


@pytest.mark.parametrize("case", list(CASES))
def test_malformed_json_requests(server, case):
    path, body, headers, status, fragment = CASES[case]
    got, answer = post(server, path, body, headers)
    assert got == status, answer
    assert fragment in answer["error"]
    assert_still_serves(server)


def _binary_request(sizes: list[int], payload: bytes) -> tuple[bytes, dict]:
    head = json.dumps(
        {
            "inputs": [
                {
                    "name": "INPUT0",
                    "datatype": "FP32",
                    "shape": [1, 4],
                    "parameters": {"binary_data_size": sizes[0]},
                },
                {
                    "name": "INPUT1",
                    "datatype": "FP32",
                    "shape": [1, 4],
                    "parameters": {"binary_data_size": sizes[1]},
                },
            ]
        }
    ).encode()
    return head + payload, {"Inference-Header-Content-Length": str(len(head))}


def test_binary_request_that_adds_up(server):
    body, headers = _binary_request([16, 16], np.ones(8, np.float32).tobytes())
    status, answer = post(server, INFER, body, headers)
    assert status == 200, answer


@pytest.mark.parametrize(
    "sizes,payload_bytes,fragment",
    [
        ([16, 16], 28, "runs past"),  # the sizes need more bytes than were sent
        ([16, 16], 36, "but 36 bytes of binary"),  # bytes left over
        ([12, 20], 32, "do not hold shape"),  # sizes add up, but not to the shapes
    ],
)
def test_binary_sizes_that_do_not_add_up(server, sizes, payload_bytes, fragment):
    body, headers = _binary_request(sizes, b"\0" * payload_bytes)
    status, answer = post(server, INFER, body, headers)
    assert status == 400 and fragment in answer["error"], answer
    assert_still_serves(server)


def test_header_length_outside_the_body(server):
    body = json.dumps(simple_request()).encode()
    status, answer = post(server, INFER, body, {"Inference-Header-Content-Length": str(len(body) + 10)})
    assert status == 400 and "outside the body" in answer["error"]
    status, answer = post(server, INFER, body, {"Inference-Header-Content-Length": "-3"})
    assert status == 400


def test_bytes_elements_that_lie_about_their_length(server):
    # one BYTES element claiming 4 GiB: refused by its length, nothing that size is allocated
    payload = struct.pack("<I", 0xFFFFFFF0) + b"abc"
    head = json.dumps(
        {
            "inputs": [
                {
                    "name": "text",
                    "datatype": "BYTES",
                    "shape": [1],
                    "parameters": {"binary_data_size": len(payload)},
                }
            ]
        }
    ).encode()
    status, answer = post(
        server,
        "/v2/models/strings/infer",
        head + payload,
        {"Inference-Header-Content-Length": str(len(head))},
    )
    assert status == 400 and "claims" in answer["error"], answer
    # a huge element count with a tiny body
    head = json.dumps(
        {
            "inputs": [
                {
                    "name": "text",
                    "datatype": "BYTES",
                    "shape": [1 << 40],
                    "parameters": {"binary_data_size": 8},
                }
            ]
        }
    ).encode()
    status, answer = post(
        server,
        "/v2/models/strings/infer",
        head + b"\0" * 8,
        {"Inference-Header-Content-Length": str(len(head))},
    )
    assert status == 400, answer


def test_body_over_the_limit(server):
    body = b" " * (MAX_BODY + (1 << 20))
    status, answer = post(server, INFER, body)
    assert status == 413 and "limit" in answer["error"]
    assert_still_serves(server)


def test_model_failure_is_500_with_onyx_message(server):
    req = {"inputs": [{"name": "x", "datatype": "FP32", "shape": [4], "data": [1, 2, 3, 4]}]}
    status, answer = post(server, "/v2/models/fails/infer", json.dumps(req).encode())
    assert status == 500 and "Reshape" in answer["error"], answer
    req["inputs"][0].update(shape=[3], data=[1, 2, 3])
    status, answer = post(server, "/v2/models/fails/infer", json.dumps(req).encode())
    assert status == 200 and answer["outputs"][0]["data"] == [1, 2, 3]


def test_unknown_endpoint_and_metadata_404(server):
    conn = http.client.HTTPConnection("127.0.0.1", server.http_port, timeout=30)
    for path in ("/v2/models/nope", "/v2/models/simple/versions/3", "/v2/nothing/here"):
        conn.request("GET", path)
        r = conn.getresponse()
        assert r.status == 404 and "error" in json.loads(r.read()), path
    conn.close()


def test_tritonclient_http_raises_with_the_message(http_client):
    import tritonclient.http as httpclient
    from tritonclient.utils import InferenceServerException

    i = httpclient.InferInput("INPUT0", [1, 4], "FP64")
    i.set_data_from_numpy(np.ones((1, 4)))
    with pytest.raises(InferenceServerException, match="FP64"):
        http_client.infer("simple", [i], model_version="1")


def test_grpc_status_codes(server, grpc_client):
    import grpc
    import tritonclient.grpc as grpcclient
    from tritonclient.utils import InferenceServerException

    def call(model, name, array, datatype, version=""):
        i = grpcclient.InferInput(name, list(array.shape), datatype)
        i.set_data_from_numpy(array)
        return grpc_client.infer(model, [i], model_version=version)

    cases = [
        (("nope", "x", np.ones((1, 3), np.int32), "INT32"), "StatusCode.NOT_FOUND"),
        (("integers", "x", np.ones((1, 3), np.int32), "INT32", "5"), "StatusCode.NOT_FOUND"),
        (("integers", "x", np.ones((1, 3), np.int64), "INT64"), "StatusCode.INVALID_ARGUMENT"),
        (("integers", "x", np.ones((1, 4), np.int32), "INT32"), "StatusCode.INVALID_ARGUMENT"),
        (("fails", "x", np.ones(4, np.float32), "FP32"), "StatusCode.INTERNAL"),
        (
            ("integers", "x", np.ones((MAX_BODY // 12 + 10, 3), np.int32), "INT32"),
            "StatusCode.RESOURCE_EXHAUSTED",
        ),
    ]
    for args, code in cases:
        with pytest.raises(InferenceServerException) as info:
            call(*args)
        assert info.value.status() == code, (args[0], info.value)
    # a message that is not protobuf at all
    channel = grpc.insecure_channel(f"127.0.0.1:{server.grpc_port}")
    rpc = channel.unary_unary("/inference.GRPCInferenceService/ModelInfer")
    with pytest.raises(grpc.RpcError) as info:
        rpc(b"\x0a\xff\xff\xff\xff\x0f", timeout=30)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT
    channel.close()
    assert call("integers", "x", np.ones((1, 3), np.int32), "INT32").as_numpy("y").tolist() == [[3, 3, 3]]


def test_grpc_tensor_contents_and_their_checks(server):
    """Inputs in typed contents (not raw), built with tritonclient's protobuf messages."""
    import grpc
    from tritonclient.grpc import service_pb2

    channel = grpc.insecure_channel(f"127.0.0.1:{server.grpc_port}")
    rpc = channel.unary_unary(
        "/inference.GRPCInferenceService/ModelInfer",
        request_serializer=service_pb2.ModelInferRequest.SerializeToString,
        response_deserializer=service_pb2.ModelInferResponse.FromString,
    )
    req = service_pb2.ModelInferRequest(model_name="integers")
    t = req.inputs.add(name="x", datatype="INT32", shape=[2, 3])
    t.contents.int_contents.extend([-1, 0, 1, 2, 3, -2147483648])
    resp = rpc(req, timeout=30)
    y = np.frombuffer(resp.raw_output_contents[0], np.int64).reshape(2, 3)
    assert y.tolist() == [[-1, 1, 3], [5, 7, -4294967295]]
    t.contents.int_contents.append(5)  # seven values for six elements
    with pytest.raises(grpc.RpcError) as info:
        rpc(req, timeout=30)
    assert info.value.code() == grpc.StatusCode.INVALID_ARGUMENT and "7 values" in info.value.details()
    req = service_pb2.ModelInferRequest(model_name="strings")
    t = req.inputs.add(name="text", datatype="BYTES", shape=[2])
    t.contents.bytes_contents.extend([b"ab", b"cd"])
    resp = rpc(req, timeout=30)
    assert resp.raw_output_contents[0] == b"\x02\x00\x00\x00AB\x02\x00\x00\x00CD"
    channel.close()
