"""``onyx serve``: the Open Inference Protocol (KServe v2) over REST and gRPC for a Triton-style model
repository, with dynamic batching and Triton's Prometheus metrics (the ``serve`` extra).

    from onyx.serve import InferenceServer
    with InferenceServer("models/", http_port=0, grpc_port=0, metrics_port=-1) as server:
        print(server.http_port)
"""

from __future__ import annotations

from onyx.serve.server import InferenceServer, serve

__all__ = ["InferenceServer", "serve"]
