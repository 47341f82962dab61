"""Run one inference through tritonclient: REST in JSON or binary mode, or gRPC."""

from __future__ import annotations

import numpy as np

PROTOCOLS = ["http-json", "http-binary", "grpc"]


def infer(
    protocol: str, client, model: str, feeds: dict, version: str = "", outputs=None, request_id: str = ""
):
    """feeds: name -> (array, datatype); returns (name -> array, response)."""
    if protocol.startswith("http"):
        import tritonclient.http as lib

        binary = protocol == "http-binary"
    else:
        import tritonclient.grpc as lib

        binary = True
    inputs = []
    for name, (array, datatype) in feeds.items():
        i = lib.InferInput(name, list(array.shape), datatype)
        if protocol.startswith("http"):
            i.set_data_from_numpy(array, binary_data=binary)
        else:
            i.set_data_from_numpy(array)
        inputs.append(i)
    requested = None
    if outputs is not None:
        if protocol.startswith("http"):
            requested = [lib.InferRequestedOutput(n, binary_data=binary) for n in outputs]
        else:
            requested = [lib.InferRequestedOutput(n) for n in outputs]
    result = client.infer(model, inputs, model_version=version, outputs=requested, request_id=request_id)
    response = result.get_response()
    names = [
        o["name"] if isinstance(o, dict) else o.name
        for o in (response["outputs"] if isinstance(response, dict) else response.outputs)
    ]
    return {n: result.as_numpy(n) for n in names}, response


def same(a: np.ndarray, b: np.ndarray) -> bool:
    """Identical values, dtypes and shapes (strings compared as bytes)."""
    if a.dtype == object or b.dtype == object:
        enc = lambda v: v if isinstance(v, bytes) else str(v).encode()  # noqa: E731
        return a.shape == b.shape and [enc(v) for v in a.reshape(-1)] == [enc(v) for v in b.reshape(-1)]
    return a.dtype == b.dtype and a.shape == b.shape and np.array_equal(a, b, equal_nan=True)
