"""The Open Inference Protocol over REST: a Starlette (ASGI) app, served by uvicorn.

Endpoints: /v2/health/live|ready, /v2, /v2/models/{m}[/versions/{v}][/ready|/config|/stats|/infer],
/v2/models/stats, /v2/repository/index, /v2/repository/models/{m}/load|unload, /metrics. Inference takes
JSON tensors and the binary tensor data extension (Inference-Header-Content-Length, binary_data_size,
binary_data / binary_data_output); gzip and deflate bodies are accepted and, when asked for, returned.
Errors are ``{"error": "..."}`` with the protocol's status (400, 404, 413, 500, 503).
"""

from __future__ import annotations

import json
import logging
import time
import zlib
from typing import Any

from starlette.applications import Starlette
from starlette.concurrency import run_in_threadpool
from starlette.requests import Request
from starlette.responses import JSONResponse, Response
from starlette.routing import Route

from onyx.serve import datatypes
from onyx.serve.core import ServerCore
from onyx.serve.errors import BadRequest, BodyTooLarge, NotFound, status_of
from onyx.serve.metrics import CONTENT_TYPE as METRICS_CONTENT_TYPE
from onyx.serve.model import InferInput, InferRequest, InferResponse, RequestedOutput

log = logging.getLogger("onyx.serve")

HEADER_LENGTH = "Inference-Header-Content-Length"
_DECODE_IN_THREAD = 256 * 1024  # bodies above this are decoded off the event loop


# ---------------------------------------------------------------------------------------------
# request and response bodies


def decode_infer_request(body: bytes, header_length: int | None) -> tuple[InferRequest, bool]:
    """Parse an inference request body (JSON, optionally followed by binary tensor data).

    Returns the request and the default for returning outputs as binary data."""
    size = len(body)
    if header_length is None:
        header_length = size
    if not 0 <= header_length <= size:
        raise BadRequest(f"{HEADER_LENGTH} {header_length} is outside the body of {size} bytes")
    try:
        head = json.loads(body[:header_length])
    except (UnicodeDecodeError, json.JSONDecodeError) as e:
        raise BadRequest(f"the request is not valid JSON: {e}") from None
    if not isinstance(head, dict):
        raise BadRequest("the request must be a JSON object")
    params = _params(head.get("parameters"), "request")
    if "classification" in params:
        raise BadRequest("the classification extension is not supported")
    raw_inputs = head.get("inputs")
    if not isinstance(raw_inputs, list) or not raw_inputs:
        raise BadRequest("the request needs a non-empty list 'inputs'")
    binary = memoryview(body)[header_length:]
    offset = 0
    inputs = []
    for i, t in enumerate(raw_inputs):
        if not isinstance(t, dict) or not isinstance(t.get("name"), str):
            raise BadRequest(f"input {i} must be an object with a string 'name'")
        where = f"input {t['name']!r}"
        datatype = datatypes.check_datatype(t.get("datatype"), where)
        shape = datatypes.check_shape(t.get("shape"), where)
        tparams = _params(t.get("parameters"), where)
        nbytes = tparams.get("binary_data_size")
        if nbytes is not None:
            if "data" in t:
                raise BadRequest(f"{where} has both 'data' and binary_data_size")
            if not isinstance(nbytes, int) or isinstance(nbytes, bool) or nbytes < 0:
                raise BadRequest(f"{where}: binary_data_size must be a non-negative integer")
            if offset + nbytes > len(binary):
                raise BadRequest(
                    f"{where}: binary_data_size {nbytes} runs past the {len(binary)} bytes of binary data "
                    f"({offset} already used)"
                )
            array = datatypes.from_raw(binary[offset : offset + nbytes], datatype, shape, where)
            offset += nbytes
        elif "data" in t:
            array = datatypes.from_json(t["data"], datatype, shape, where)
        else:
            raise BadRequest(f"{where} has neither 'data' nor parameters.binary_data_size")
        inputs.append(InferInput(t["name"], datatype, shape, array))
    if offset != len(binary):
        raise BadRequest(
            f"the binary_data_size of the inputs add up to {offset} bytes, but "
            f"{len(binary)} bytes of binary data follow the JSON header"
        )
    default_binary = params.get("binary_data_output", False)
    if not isinstance(default_binary, bool):
        raise BadRequest("parameters.binary_data_output must be true or false")
    outputs = None
    raw_outputs = head.get("outputs")
    if raw_outputs is not None:
        if not isinstance(raw_outputs, list):
            raise BadRequest("'outputs' must be a list")
        outputs = []
        for i, o in enumerate(raw_outputs):
            if not isinstance(o, dict) or not isinstance(o.get("name"), str):
                raise BadRequest(f"output {i} must be an object with a string 'name'")
            oparams = _params(o.get("parameters"), f"output {o['name']!r}")
            if "classification" in oparams:
                raise BadRequest("the classification extension is not supported")
            b = oparams.get("binary_data")
            if b is not None and not isinstance(b, bool):
                raise BadRequest(f"output {o['name']!r}: binary_data must be true or false")
            outputs.append(RequestedOutput(o["name"], b))
    request_id = head.get("id", "")
    if not isinstance(request_id, str):
        raise BadRequest("'id' must be a string")
    return InferRequest(inputs, outputs, request_id, params), default_binary


def _params(p: Any, where: str) -> dict[str, Any]:
    if p is None:
        return {}
    if not isinstance(p, dict):
        raise BadRequest(f"{where}: 'parameters' must be an object")
    return p


def encode_infer_response(resp: InferResponse, default_binary: bool) -> tuple[bytes, int | None]:
    """The response body and, when binary outputs follow the JSON, the JSON header's length."""
    outputs = []
    blobs = []
    for o in resp.outputs:
        item: dict[str, Any] = {"name": o.name, "datatype": o.datatype, "shape": list(o.array.shape)}
        binary = default_binary if o.binary is None else o.binary
        if binary:
            raw = datatypes.to_raw(o.array, o.datatype)
            item["parameters"] = {"binary_data_size": len(raw)}
            blobs.append(raw)
        else:
            item["data"] = datatypes.to_json(o.array, o.datatype)
        outputs.append(item)
    head: dict[str, Any] = {"model_name": resp.model_name, "model_version": resp.model_version}
    if resp.id:
        head["id"] = resp.id
    head["outputs"] = outputs
    text = json.dumps(head, separators=(",", ":")).encode()
    if not blobs:
        return text, None
    return b"".join([text, *blobs]), len(text)


# ---------------------------------------------------------------------------------------------
# body limits and compression


async def read_body(request: Request, limit: int) -> bytes:
    """The request body, refusing (413) more than ``limit`` bytes; excess is read and dropped, never
    kept, so the client still gets the 413."""
    declared = request.headers.get("content-length")
    too_big = declared is not None and declared.isdigit() and int(declared) > limit
    chunks, n = [], 0
    async for chunk in request.stream():
        n += len(chunk)
        if n > limit:
            too_big = True
        if not too_big:
            chunks.append(chunk)
    if too_big:
        raise BodyTooLarge(f"the request body ({declared or n} bytes) is over the limit of {limit} bytes")
    body = b"".join(chunks)
    encoding = request.headers.get("content-encoding", "identity").lower()
    if encoding in ("gzip", "deflate"):
        d = zlib.decompressobj(31 if encoding == "gzip" else 15)
        try:
            body = d.decompress(body, limit + 1)
        except zlib.error as e:
            raise BadRequest(f"the {encoding} body cannot be decompressed: {e}") from None
        if len(body) > limit or d.unconsumed_tail:
            raise BodyTooLarge(f"the decompressed request body is over the limit of {limit} bytes")
    elif encoding != "identity":
        raise BadRequest(f"unsupported Content-Encoding {encoding!r}; use gzip, deflate or none")
    return body


def _compress(body: bytes, accept: str) -> tuple[bytes, str | None]:
    accept = accept.lower()
    if "gzip" in accept:
        c = zlib.compressobj(6, zlib.DEFLATED, 31)
        return c.compress(body) + c.flush(), "gzip"
    if "deflate" in accept:
        return zlib.compress(body), "deflate"
    return body, None


# ---------------------------------------------------------------------------------------------
# the app


def error_response(exc: BaseException) -> JSONResponse:
    status, _ = status_of(exc)
    if status >= 500 and not getattr(exc, "http_status", None):
        log.exception("unexpected error", exc_info=exc)
    return JSONResponse({"error": str(exc)}, status_code=status)


def create_app(core: ServerCore, metrics_only: bool = False) -> Starlette:
    """The ASGI app; ``metrics_only`` serves /metrics alone (the --metrics-port listener)."""
    repo = core.repository

    def endpoint(fn, counted: bool = True):
        """Wrap a handler: count it in flight (refused once draining), map errors, log one line."""

        async def handle(request: Request) -> Response:
            t0 = time.perf_counter()
            try:
                if counted:
                    core.begin()
            except Exception as e:
                return error_response(e)
            try:
                response = await fn(request)
            except Exception as e:  # every error becomes the protocol's {"error": ...}
                response = error_response(e)
            finally:
                if counted:
                    core.end()
            if log.isEnabledFor(logging.DEBUG):
                log.debug(
                    "http %s %s -> %d in %.3f ms",
                    request.method,
                    request.url.path,
                    response.status_code,
                    (time.perf_counter() - t0) * 1e3,
                )
            return response

        return handle

    def version_of(request: Request) -> str | None:
        return request.path_params.get("version")

    async def metrics(request: Request) -> Response:
        return Response(core.metrics.render(), media_type=METRICS_CONTENT_TYPE)

    if metrics_only:
        return Starlette(routes=[Route("/metrics", metrics, methods=["GET"])])

    async def live(request: Request) -> Response:
        return Response(status_code=200 if core.live() else 503)

    async def ready(request: Request) -> Response:
        return Response(status_code=200 if core.ready() else 503)

    async def server_metadata(request: Request) -> Response:
        return JSONResponse(core.server_metadata())

    async def model_metadata(request: Request) -> Response:
        name = request.path_params["model"]
        m = repo.get(name, version_of(request))
        return JSONResponse(m.metadata(repo.versions(name)))

    async def model_ready(request: Request) -> Response:
        repo.get(request.path_params["model"], version_of(request))
        return Response(status_code=200)

    async def model_config(request: Request) -> Response:
        return JSONResponse(repo.get(request.path_params["model"], version_of(request)).config.to_json())

    async def model_stats(request: Request) -> Response:
        return JSONResponse(core.statistics(request.path_params.get("model"), version_of(request)))

    async def infer(request: Request) -> Response:
        model = repo.get(request.path_params["model"], version_of(request))
        body = await read_body(request, core.max_body_bytes)
        raw_length = request.headers.get(HEADER_LENGTH)
        header_length = None
        if raw_length is not None:
            if not raw_length.strip().isdigit():
                raise BadRequest(f"{HEADER_LENGTH} must be a non-negative integer, got {raw_length!r}")
            header_length = int(raw_length)
        if len(body) > _DECODE_IN_THREAD:
            req, default_binary = await run_in_threadpool(decode_infer_request, body, header_length)
        else:
            req, default_binary = decode_infer_request(body, header_length)
        resp = await model.infer_async(req)
        content, json_length = encode_infer_response(resp, default_binary)
        headers = {}
        media = "application/json"
        if json_length is not None:
            headers[HEADER_LENGTH] = str(json_length)
            media = "application/octet-stream"
        accept = request.headers.get("accept-encoding")
        if accept:
            content, encoding = _compress(content, accept)
            if encoding:
                headers["Content-Encoding"] = encoding
        return Response(content, media_type=media, headers=headers)

    async def repository_index(request: Request) -> Response:
        body = await read_body(request, 1 << 20)
        ready_only = False
        if body.strip():
            try:
                req = json.loads(body)
            except (UnicodeDecodeError, json.JSONDecodeError) as e:
                raise BadRequest(f"the request is not valid JSON: {e}") from None
            ready_only = bool(req.get("ready", False)) if isinstance(req, dict) else False
        return JSONResponse(repo.index(ready_only))

    async def repository_load(request: Request) -> Response:
        body = await read_body(request, core.max_body_bytes)
        if body.strip():
            try:
                req = json.loads(body)
            except (UnicodeDecodeError, json.JSONDecodeError) as e:
                raise BadRequest(f"the request is not valid JSON: {e}") from None
            if isinstance(req, dict) and req.get("parameters"):
                raise BadRequest(
                    "load parameters (config or file overrides) are not supported; "
                    "edit the repository and load again"
                )
        name = request.path_params["model"]
        await run_in_threadpool(repo.load, name)
        return JSONResponse({})

    async def repository_unload(request: Request) -> Response:
        await read_body(request, 1 << 20)
        name = request.path_params["model"]
        await run_in_threadpool(repo.unload, name)
        return JSONResponse({})

    async def not_found(request: Request) -> Response:
        raise NotFound(f"no endpoint {request.method} {request.url.path}")

    m = "/v2/models/{model}"
    mv = "/v2/models/{model}/versions/{version}"
    routes = [
        Route("/v2/health/live", endpoint(live, counted=False), methods=["GET"]),
        Route("/v2/health/ready", endpoint(ready, counted=False), methods=["GET"]),
        Route("/v2", endpoint(server_metadata), methods=["GET"]),
        Route("/v2/models/stats", endpoint(model_stats), methods=["GET"]),
        Route(m, endpoint(model_metadata), methods=["GET"]),
        Route(mv, endpoint(model_metadata), methods=["GET"]),
        Route(m + "/ready", endpoint(model_ready), methods=["GET"]),
        Route(mv + "/ready", endpoint(model_ready), methods=["GET"]),
        Route(m + "/config", endpoint(model_config), methods=["GET"]),
        Route(mv + "/config", endpoint(model_config), methods=["GET"]),
        Route(m + "/stats", endpoint(model_stats), methods=["GET"]),
        Route(mv + "/stats", endpoint(model_stats), methods=["GET"]),
        Route(m + "/infer", endpoint(infer), methods=["POST"]),
        Route(mv + "/infer", endpoint(infer), methods=["POST"]),
        Route("/v2/repository/index", endpoint(repository_index), methods=["POST"]),
        Route("/v2/repository/models/{model}/load", endpoint(repository_load), methods=["POST"]),
        Route("/v2/repository/models/{model}/unload", endpoint(repository_unload), methods=["POST"]),
        Route("/metrics", metrics, methods=["GET"]),
        Route("/{path:path}", endpoint(not_found), methods=["GET", "POST", "PUT", "DELETE"]),
    ]
    return Starlette(routes=routes)


__all__ = ["create_app", "decode_infer_request", "encode_infer_response"]
