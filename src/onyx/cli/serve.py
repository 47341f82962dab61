"""``onyx serve MODEL_REPOSITORY``: the Open Inference Protocol server (the serve extra)."""

from __future__ import annotations

import argparse

from onyx.errors import InvalidArgument

HELP = "serve a Triton-style model repository (Open Inference Protocol)"
EXAMPLE = "onyx serve models/ --http-port 8000 --grpc-port 8001"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("repository", metavar="MODEL_REPOSITORY")
    p.add_argument("--host", default="127.0.0.1")
    p.add_argument("--http-port", type=int, default=8000, help="0: any free port; -1: no REST")
    p.add_argument("--grpc-port", type=int, default=8001, help="0: any free port; -1: no gRPC")
    p.add_argument("--metrics-port", type=int, default=8002, help="/metrics listener; -1: none")
    p.add_argument("--poll", type=float, metavar="SECONDS", help="pick up repository changes")
    p.add_argument("--max-body-bytes", type=int, default=64 << 20, help="request size limit")
    p.add_argument("--threads", type=int, default=0, help="intra-op threads per model instance")
    p.add_argument("--default-max-batch-size", type=int, default=4, help="for models without config")
    p.add_argument("--log-level", default="info", choices=["debug", "info", "warning", "error"])


def main(args: argparse.Namespace) -> int:
    """Run `onyx serve` (imports the server lazily: it needs the `serve` extra)."""
    import logging

    try:
        from onyx.serve import serve
    except ImportError as e:
        raise InvalidArgument(f"onyx serve needs the serve extra (pip install 'onyx[serve]'): {e}") from None
    logging.basicConfig(
        level=args.log_level.upper(), format="%(asctime)s %(levelname)s %(name)s: %(message)s"
    )
    return serve(
        args.repository,
        host=args.host,
        http_port=args.http_port,
        grpc_port=args.grpc_port,
        metrics_port=args.metrics_port,
        poll=args.poll,
        max_body_bytes=args.max_body_bytes,
        threads=args.threads,
        default_max_batch_size=args.default_max_batch_size,
    )


