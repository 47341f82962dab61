"""The Open Inference Protocol over gRPC: ``inference.GRPCInferenceService`` on grpcio's generic handlers.

Requests arrive as bytes (an identity deserializer) and are decoded by :mod:`onyx.serve.grpc_messages`
inside the handler, so a malformed message is an INVALID_ARGUMENT naming what was wrong rather than a
transport error. Serving errors map to NOT_FOUND, INVALID_ARGUMENT, RESOURCE_EXHAUSTED, UNAVAILABLE and
INTERNAL; messages over the size limit are refused by grpcio with RESOURCE_EXHAUSTED.
"""

from __future__ import annotations

import logging
import time
from collections.abc import Callable, Iterator
from concurrent.futures import ThreadPoolExecutor

import grpc

from onyx.serve import grpc_messages as msg
from onyx.serve.core import ServerCore
from onyx.serve.errors import BadRequest, status_of

log = logging.getLogger("onyx.serve")

SERVICE = "inference.GRPCInferenceService"


def _identity(b: bytes) -> bytes:
    return b


class InferenceServicer:
    """The RPCs; each takes the raw request bytes and returns the raw response bytes."""

    def __init__(self, core: ServerCore):
        self.core = core
        self.repo = core.repository

    def _guard(self, name: str, fn: Callable[[bytes], bytes], counted: bool = True):
        core = self.core

        def handler(request: bytes, context: grpc.ServicerContext) -> bytes:
            t0 = time.perf_counter()
            code = "OK"
            try:
                if counted:
                    core.begin()
                try:
                    return fn(request)
                finally:
                    if counted:
                        core.end()
            except Exception as e:
                _, code = status_of(e)
                if code == "INTERNAL" and not getattr(e, "grpc_code", None):
                    log.exception("grpc %s failed", name)
                context.abort(getattr(grpc.StatusCode, code), str(e))
            finally:
                if log.isEnabledFor(logging.DEBUG):
                    log.debug("grpc %s -> %s in %.3f ms", name, code, (time.perf_counter() - t0) * 1e3)

        return handler

    # -- the RPCs ----------------------------------------------------------------------------------
    def server_live(self, request: bytes) -> bytes:
        return msg.encode_bool(self.core.live())

    def server_ready(self, request: bytes) -> bytes:
        return msg.encode_bool(self.core.ready())

    def model_ready(self, request: bytes) -> bytes:
        name, version = msg.decode_name_version(request)
        try:
            self.repo.get(name, version)
        except Exception:
            return msg.encode_bool(False)
        return msg.encode_bool(True)

    def server_metadata(self, request: bytes) -> bytes:
        return msg.encode_server_metadata(self.core.server_metadata())

    def model_metadata(self, request: bytes) -> bytes:
        name, version = msg.decode_name_version(request)
        return msg.encode_model_metadata(self.repo.get(name, version).metadata(self.repo.versions(name)))

    def model_config(self, request: bytes) -> bytes:
        name, version = msg.decode_name_version(request)
        return msg.encode_model_config(self.repo.get(name, version).config)

    def model_infer(self, request: bytes) -> bytes:
        name, version, req = msg.decode_model_infer(request)
        model = self.repo.get(name, version)
        return msg.encode_model_infer(model.infer(req).result())

    def repository_index(self, request: bytes) -> bytes:
        return msg.encode_repository_index(self.repo.index(msg.decode_repository_index(request)))

    def repository_load(self, request: bytes) -> bytes:
        name, has_params = msg.decode_repository_model(request)
        if has_params:
            raise BadRequest("load parameters (config or file overrides) are not supported")
        self.repo.load(name)
        return b""

    def repository_unload(self, request: bytes) -> bytes:
        name, _ = msg.decode_repository_model(request)
        self.repo.unload(name)
        return b""

    def model_stream_infer(self, requests: Iterator[bytes], context: grpc.ServicerContext) -> Iterator[bytes]:
        """ModelStreamInfer: one response per request, errors reported in the stream, never fatal."""
        for request in requests:
            try:
                self.core.begin()
                try:
                    out = self.model_infer(request)
                finally:
                    self.core.end()
                yield msg.encode_stream_response(out)
            except Exception as e:
                yield msg.encode_stream_response(None, str(e))

    def handler(self) -> grpc.GenericRpcHandler:
        unary = {
            "ServerLive": (self.server_live, False),
            "ServerReady": (self.server_ready, False),
            "ModelReady": (self.model_ready, False),
            "ServerMetadata": (self.server_metadata, True),
            "ModelMetadata": (self.model_metadata, True),
            "ModelConfig": (self.model_config, True),
            "ModelInfer": (self.model_infer, True),
            "RepositoryIndex": (self.repository_index, True),
            "RepositoryModelLoad": (self.repository_load, True),
            "RepositoryModelUnload": (self.repository_unload, True),
        }
        methods = {
            name: grpc.unary_unary_rpc_method_handler(
                self._guard(name, fn, counted), request_deserializer=_identity, response_serializer=_identity
            )
            for name, (fn, counted) in unary.items()
        }
        methods["ModelStreamInfer"] = grpc.stream_stream_rpc_method_handler(
            self.model_stream_infer, request_deserializer=_identity, response_serializer=_identity
        )
        return grpc.method_handlers_generic_handler(SERVICE, methods)


def create_grpc_server(core: ServerCore, address: str, workers: int = 32) -> tuple[grpc.Server, int]:
    """A started-ready (not yet started) grpc server bound to ``address``; returns it and its port."""
    options = [
        ("grpc.max_receive_message_length", core.max_body_bytes),
        ("grpc.max_send_message_length", -1),
        ("grpc.so_reuseport", 0),
    ]
    server = grpc.server(
        ThreadPoolExecutor(max_workers=workers, thread_name_prefix="onyx-grpc"), options=options
    )
    server.add_generic_rpc_handlers((InferenceServicer(core).handler(),))
    port = server.add_insecure_port(address)
    if port == 0:
        raise OSError(f"cannot listen for gRPC on {address}")
    return server, port
