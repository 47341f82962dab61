"""int4 (blockwise MatMul + Gather weights) against float32: file sizes, and onyx against onnxruntime on
the int4 model, at batch 1.

    python -m bench.quant_int4                              # bert_base, gpt2_small; blocks 32 and 128
    python -m bench.quant_int4 bert_base --blocks 32 --rounds 5

Each float32 model is exported from torch (bench.models, random weights), then quantized by
onnxruntime's own ``MatMulNBitsQuantizer`` (symmetric, ``op_types_to_quantize`` MatMul and Gather:
MatMul weights -> com.microsoft MatMulNBits, embedding tables -> GatherBlockQuantized; Gemm weights
stay float, as onnxruntime leaves them). Two sessions (onyx int4, onnxruntime int4), one intra-op
thread each, run interleaved, round after round; reported: file sizes and their ratio, the median
latency of each and their ratio, the largest difference between the two runtimes' outputs on the int4
model, and (for scale) between onnxruntime's int4 and float32 outputs. Quantized files are cached
beside the float ones (bench/.cache or ONYX_BENCH_CACHE) as ``<model>-int4-b<block>.onnx``.
"""

from __future__ import annotations

import argparse
import logging
import os
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from bench import models

MODELS = ("bert_base", "gpt2_small")
BLOCKS = (32, 128)


def int4_model(path: Path, block: int) -> Path:
    """``path`` quantized by onnxruntime's MatMulNBitsQuantizer (cached beside it)."""
    out = path.with_name(f"{path.stem}-int4-b{block}.onnx")
    if out.exists():
        return out
    import onnx
    from onnxruntime.quantization.matmul_nbits_quantizer import MatMulNBitsQuantizer

    logging.getLogger("onnxruntime.quantization.matmul_nbits_quantizer").setLevel(logging.ERROR)
    q = MatMulNBitsQuantizer(
        onnx.load(str(path)), block_size=block, is_symmetric=True, op_types_to_quantize=("MatMul", "Gather")
    )
    with np.errstate(all="ignore"):  # it divides by the zero scales it then discards
        q.process()
    tmp = out.with_suffix(".tmp.onnx")
    q.model.save_model_to_file(str(tmp))
    tmp.replace(out)
    return out


def _mb(path: Path) -> float:
    """MB of a model file and of its external-data file (``<name>.data``) if any."""
    extra = path.with_name(path.name + ".data")
    return (path.stat().st_size + (extra.stat().st_size if extra.exists() else 0)) / 1e6


def _maxdiff(a: list, b: list) -> float:
    return max(float(np.max(np.abs(np.asarray(x, np.float64) - y))) for x, y in zip(a, b, strict=True))


def bench(name: str, block: int, rounds: int, cache: Path, threads: int = 1) -> dict:
    import onnxruntime as ort

    import onyx

    fp32, feeds = models.build(name, 1, cache=cache)
    int4 = int4_model(fp32, block)
    so = onyx.SessionOptions()
    so.intra_op_num_threads = threads
    ro = ort.SessionOptions()
    ro.intra_op_num_threads = threads
    ro.log_severity_level = 3
    ort_fp32 = ort.InferenceSession(str(fp32), ro, providers=["CPUExecutionProvider"]).run(None, feeds)
    runs = {
        "onyx int4": onyx.InferenceSession(str(int4), so),
        "ort int4": ort.InferenceSession(str(int4), ro, providers=["CPUExecutionProvider"]),
    }
    outs = {k: s.run(None, feeds) for k, s in runs.items()}  # warm up, and keep the outputs
    times: dict[str, list[float]] = {k: [] for k in runs}
    for _ in range(rounds):
        for k, s in runs.items():
            t = time.perf_counter()
            s.run(None, feeds)
            times[k].append(time.perf_counter() - t)
    return {
        "ms": {k: statistics.median(v) * 1e3 for k, v in times.items()},
        "mb_fp32": _mb(fp32),
        "mb_int4": _mb(int4),
        "onyx_vs_ort": _maxdiff(outs["onyx int4"], outs["ort int4"]),
        "int4_vs_fp32": _maxdiff(outs["ort int4"], ort_fp32),
    }


def table(results: dict) -> str:
    head = (
        "| model | block | MB fp32 | MB int4 | fp32 / int4 | onyx int4 ms | ort int4 ms | onyx / ort "
        "| max diff onyx-ort int4 | max diff ort int4-fp32 |"
    )
    lines = [head, "|" + " --- |" * 10]
    for (name, block), r in results.items():
        ms, mb32, mb4 = r["ms"], r["mb_fp32"], r["mb_int4"]
        lines.append(
            f"| {name} | {block} | {mb32:.1f} | {mb4:.1f} | {mb32 / mb4:.2f} "
            f"| {ms['onyx int4']:.1f} | {ms['ort int4']:.1f} | {ms['onyx int4'] / ms['ort int4']:.2f} "
            f"| {r['onyx_vs_ort']:.3g} | {r['int4_vs_fp32']:.3g} |"
        )
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", help=f"models among {', '.join(MODELS)} (default: all)")
    parser.add_argument("--blocks", type=int, nargs="+", default=list(BLOCKS), help="block sizes (32 128)")
    parser.add_argument("--rounds", type=int, default=10, help="interleaved rounds (default 10)")
    parser.add_argument("--threads", type=int, default=1, help="intra-op threads of each session (1)")
    parser.add_argument("--cache", default=None, help="model cache (default bench/.cache)")
    args = parser.parse_args(argv)
    names = args.models or list(MODELS)
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        parser.error(f"unknown model(s) {', '.join(unknown)}; choose among {', '.join(MODELS)}")
    bad = [b for b in args.blocks if b < 16 or b & (b - 1)]
    if bad:
        parser.error(f"block sizes must be powers of 2, at least 16; got {bad}")
    cache = models.bench_cache(args.cache)
    results = {}
    for name in names:
        for block in args.blocks:
            results[(name, block)] = bench(name, block, args.rounds, cache, args.threads)
            print(f"{name} block {block}: done (load {os.getloadavg()[0]:.2f})", file=sys.stderr)
    print(table(results))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
