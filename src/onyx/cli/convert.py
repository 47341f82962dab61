"""``onyx convert MODEL OUTPUT --opset N``: rewrite a model for another opset of the default domain."""

from __future__ import annotations

import argparse
import os

from onyx.errors import InvalidArgument

HELP = "convert a model to another opset (up or down)"
EXAMPLE = "onyx convert model.onnx model-opset13.onnx --opset 13"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", help="the model to convert (never modified)")
    p.add_argument("output", help="where to write the converted model")
    p.add_argument("--opset", type=int, required=True, help="the target opset of the default domain")
    p.add_argument("--force", action="store_true", help="replace OUTPUT if it exists")
    p.add_argument(
        "--external-data", action="store_true", help="store large tensors in OUTPUT.data beside the model"
    )


def main(args: argparse.Namespace) -> int:
    from onyx.model_io import load, save
    from onyx.version_converter import convert

    if os.path.exists(args.output):
        if os.path.realpath(args.output) == os.path.realpath(args.model):
            raise InvalidArgument(
                f"output {args.output!r} is the input model: write the conversion elsewhere"
            )
        if not args.force:
            raise InvalidArgument(f"output {args.output!r} exists (use --force to replace it)")
    result = convert(load(args.model), args.opset)
    save(result.model, args.output, save_as_external_data=args.external_data)  # written to a temp, renamed
    print(f"{args.model}: opset {result.source} -> {result.target}, IR version {result.model.ir_version}")
    if result.adapted:
        total = sum(result.adapted.values())
        print(f"nodes adapted: {total}")
        for op_type, count in sorted(result.adapted.items(), key=lambda kv: (-kv[1], kv[0])):
            print(f"  {op_type:<24} {count}")
    else:
        print("nodes adapted: 0 (only the opset import changed)")
    print(f"wrote {args.output}")
    return 0
