"""``onyx quantize MODEL OUTPUT --mode ...``: dynamic/static int8 (onnxruntime's quantizer), int4, fp16.

Static quantization calibrates on a folder of ``.npz`` files, one batch each, whose arrays are named as
the model's inputs; ``--report`` then prints the signal-to-quantization-noise ratio of every tensor on
that data, worst first.
"""

from __future__ import annotations

import argparse
import glob
import os

import numpy as np

from onyx.errors import InvalidArgument, NoSuchFile
from onyx.errors import NotImplemented as OnyxNotImplemented

HELP = "quantize a model: dynamic/static int8, int4 weights or float16"
EXAMPLE = "onyx quantize model.onnx model.int8.onnx --mode static --calibration calib/ --per-channel --report"


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("model", help="the float model")
    p.add_argument("output", help="where to write the quantized model")
    p.add_argument("--mode", choices=["dynamic", "static", "int4", "fp16"], default="dynamic")
    p.add_argument("--calibration", metavar="DIR", help="folder of .npz batches (static mode, --report)")
    p.add_argument("--format", choices=["qdq", "qoperator"], default="qdq", help="static mode's format")
    p.add_argument("--per-channel", action="store_true", help="quantize weights per output channel")
    p.add_argument(
        "--activation-type",
        choices=["QInt8", "QUInt8", "QInt16", "QUInt16", "QFLOAT8E4M3FN"],
        default="QUInt8",
    )
    p.add_argument(
        "--weight-type",
        choices=["QInt8", "QUInt8", "QInt16", "QUInt16", "QInt4", "QFLOAT8E4M3FN"],
        default="QInt8",
        help="QFLOAT8E4M3FN needs it as --activation-type too, with --method Distribution",
    )
    p.add_argument(
        "--method",
        choices=["MinMax", "Entropy", "Percentile", "Distribution"],
        default="MinMax",
        help="static mode's calibration method",
    )
    p.add_argument("--block-size", type=int, default=128, help="int4 mode's block size")
    p.add_argument("--symmetric", action="store_true", help="int4 mode: symmetric blocks")
    p.add_argument(
        "--op-types",
        default="MatMul",
        metavar="TYPES",
        help="int4 mode: the operators whose weights to quantize, comma-separated (MatMul, Gather)",
    )
    p.add_argument("--report", action="store_true", help="print the per-tensor SQNR on the calibration data")


class NpzReader:
    """A CalibrationDataReader over a folder of .npz files (sorted by name), one batch per file."""

    def __init__(self, folder: str):
        if not os.path.isdir(folder):
            raise NoSuchFile(f"calibration folder {folder!r} does not exist")
        self.files = sorted(glob.glob(os.path.join(folder, "*.npz")))
        if not self.files:
            raise InvalidArgument(f"calibration folder {folder!r} holds no .npz file")
        self.index = 0

    def __len__(self) -> int:
        return len(self.files)

    def get_next(self) -> dict | None:
        if self.index >= len(self.files):
            return None
        path = self.files[self.index]
        self.index += 1
        try:
            with np.load(path, allow_pickle=False) as z:
                return {k: z[k] for k in z.files}
        except (ValueError, OSError) as e:
            raise InvalidArgument(f"cannot read calibration batch {path!r}: {e}") from None

    def rewind(self) -> None:
        self.index = 0


def main(args: argparse.Namespace) -> int:
    from onyx.model_io import load, save
    from onyx.quantization import CalibrationMethod, QuantFormat, QuantType, quantize_dynamic, quantize_static

    if not os.path.exists(args.model):
        raise NoSuchFile(f"model file {args.model!r} does not exist")
    if args.mode == "static" and not args.calibration:
        raise InvalidArgument("--mode static needs --calibration DIR (a folder of .npz batches)")
    if args.report and not args.calibration:
        raise InvalidArgument("--report needs --calibration DIR: the data to measure the noise on")
    reader = NpzReader(args.calibration) if args.calibration else None
    if args.mode == "static":
        quantize_static(
            args.model,
            args.output,
            reader,
            quant_format=QuantFormat.QDQ if args.format == "qdq" else QuantFormat.QOperator,
            per_channel=args.per_channel,
            activation_type=QuantType[args.activation_type],
            weight_type=QuantType[args.weight_type],
            calibrate_method=CalibrationMethod[args.method],
        )
    elif args.mode == "dynamic":
        quantize_dynamic(
            args.model, args.output, per_channel=args.per_channel, weight_type=QuantType[args.weight_type]
        )
    elif args.mode == "int4":
        try:
            from onyx.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer
        except ImportError as e:
            raise OnyxNotImplemented(f"int4 quantization is not available: {e}") from None
        op_types = tuple(t.strip() for t in args.op_types.split(",") if t.strip())
        q = MatMulNBitsQuantizer(
            load(args.model),
            block_size=args.block_size,
            is_symmetric=args.symmetric,
            op_types_to_quantize=op_types,
        )
        q.process()
        result = q.model
        save(getattr(result, "model", result), args.output)
    else:
        try:
            from onyx.float16 import convert_float_to_float16
        except ImportError as e:
            raise OnyxNotImplemented(f"float16 conversion is not available: {e}") from None
        save(convert_float_to_float16(load(args.model), keep_io_types=True), args.output)
    print(f"{args.output}: written ({args.mode})")
    if args.report:
        from onyx.quantization import report

        reader.rewind()
        rows = report(args.model, args.output, reader)
        width = max([len(r.name) for r in rows] + [6])
        print(f"{'tensor':<{width}}  SQNR (dB)")
        for r in rows:
            print(f"{r.name:<{width}}  {r.sqnr_db:9.2f}")
    return 0
