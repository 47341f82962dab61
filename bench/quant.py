"""int8 against float32, onyx against onnxruntime, at batch 1.

    python -m bench.quant                       # resnet18, resnet50, bert_base
    python -m bench.quant resnet18 --rounds 15
    python -m bench.quant --threads 1             # one intra-op thread everywhere

Each float32 model is exported from torch (bench.models; ResNet-50, which bench.models does not
build, from the bottleneck recipe below) with random weights, then quantized by onnxruntime's own
quantizer: the ResNets statically (QDQ format, per-channel int8 weights, uint8 activations, two
random calibration images), BERT dynamically (int8 weights). Four sessions per model (onyx float32,
onyx int8, onnxruntime float32, onnxruntime int8) run interleaved, round after round, one run each
per round; reported: the median latency of each, the int8 ratios, and the file sizes. Quantized files
are cached beside the float ones (bench/.cache or ONYX_BENCH_CACHE).
"""

from __future__ import annotations

import argparse
import statistics
import sys
import time
from pathlib import Path

import numpy as np

from bench import models
from tests.models import exporters as ex

MODELS = ("resnet18", "resnet50", "bert_base")


def make_resnet50(num_classes: int = 1000):
    """ResNet-50: bottleneck blocks 3-4-6-3 of widths 64..512 (expansion 4), random weights."""
    from torch import nn

    class Bottleneck(nn.Module):
        def __init__(self, cin, mid, stride):
            super().__init__()
            cout = mid * 4
            self.body = nn.Sequential(
                nn.Conv2d(cin, mid, 1, bias=False), nn.BatchNorm2d(mid), nn.ReLU(inplace=True),
                nn.Conv2d(mid, mid, 3, stride, 1, bias=False), nn.BatchNorm2d(mid), nn.ReLU(inplace=True),
                nn.Conv2d(mid, cout, 1, bias=False), nn.BatchNorm2d(cout),
            )  # fmt: skip
            self.down = None
            if stride != 1 or cin != cout:
                self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
            self.relu = nn.ReLU(inplace=True)

        def forward(self, x):
            identity = x if self.down is None else self.down(x)
            return self.relu(self.body(x) + identity)

    stem = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(inplace=True)]
    layers = [*stem, nn.MaxPool2d(3, 2, 1)]
    cin = 64
    for i, (mid, n) in enumerate(zip((64, 128, 256, 512), (3, 4, 6, 3))):
        for j in range(n):
            layers.append(Bottleneck(cin, mid, 2 if j == 0 and i > 0 else 1))
            cin = mid * 4
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, num_classes)]
    model = nn.Sequential(*layers).eval()
    ex._randomize_batchnorm(model)
    return model


RESNET50 = ex.TorchRecipe(
    "resnet50", make_resnet50, ex.image_inputs(224), ("input",), ("logits",), {"input": ex.B, "logits": ex.B}
)


def float_model(name: str, cache: Path) -> tuple[Path, dict]:
    if name == "resnet50":
        path, _ = ex.build_torch("resnet50", "torchscript", cache, recipe=RESNET50)
        return path, RESNET50.feeds(1)
    return models.build(name, 1, cache=cache)


class _Images:
    """onnxruntime's CalibrationDataReader protocol: two random images."""

    def __init__(self, name: str):
        rng = np.random.default_rng(7)
        self._it = iter([{name: rng.standard_normal((1, 3, 224, 224), dtype=np.float32)} for _ in range(2)])

    def get_next(self):
        return next(self._it, None)


def quantized_model(name: str, path: Path) -> Path:
    """``path`` quantized by onnxruntime.quantization (cached beside it)."""
    from onnxruntime.quantization import QuantFormat, QuantType, quantize_dynamic, quantize_static

    out = path.with_name(path.stem + "-int8.onnx")
    if out.exists():
        return out
    tmp = out.with_suffix(".tmp.onnx")
    if name.startswith("resnet"):
        quantize_static(
            str(path), str(tmp), _Images("input"), quant_format=QuantFormat.QDQ, per_channel=True,
            activation_type=QuantType.QUInt8, weight_type=QuantType.QInt8,
        )  # fmt: skip
    else:
        quantize_dynamic(str(path), str(tmp), weight_type=QuantType.QInt8)
    tmp.replace(out)
    return out


def sessions(fp32: Path, int8: Path, threads: int) -> dict:
    """The four sessions, each with ``threads`` intra-op threads (0: each runtime's default)."""
    import onnxruntime as ort

    import onyx

    so = onyx.SessionOptions()
    so.intra_op_num_threads = threads
    ro = ort.SessionOptions()
    ro.intra_op_num_threads = threads

    def ort_session(p):
        return ort.InferenceSession(str(p), ro, providers=["CPUExecutionProvider"])

    return {
        "onyx fp32": onyx.InferenceSession(str(fp32), so),
        "onyx int8": onyx.InferenceSession(str(int8), so),
        "ort fp32": ort_session(fp32),
        "ort int8": ort_session(int8),
    }


def bench(name: str, rounds: int, cache: Path, threads: int = 0) -> dict:
    fp32, feeds = float_model(name, cache)
    int8 = quantized_model(name, fp32)
    runs = sessions(fp32, int8, threads)
    times: dict[str, list[float]] = {k: [] for k in runs}
    outs = {}
    for k, s in runs.items():  # warm up (and keep one output of each to compare)
        outs[k] = s.run(None, feeds)[0]
    for _ in range(rounds):
        for k, s in runs.items():
            t = time.perf_counter()
            s.run(None, feeds)
            times[k].append(time.perf_counter() - t)
    med = {k: statistics.median(v) * 1e3 for k, v in times.items()}
    diff = float(np.max(np.abs(outs["onyx int8"].astype(np.float64) - outs["ort int8"])))
    quant_error = float(np.max(np.abs(outs["ort int8"].astype(np.float64) - outs["ort fp32"])))
    return {
        "quant_error": quant_error,
        "ms": med,
        "mb_fp32": fp32.stat().st_size / 1e6 + _external(fp32),
        "mb_int8": int8.stat().st_size / 1e6,
        "int8_vs_ort_int8_maxdiff": diff,
    }


def _external(path: Path) -> float:
    """MB of external-data files beside a model (the exporter's ``.data``), if any."""
    extra = path.with_name(path.name + ".data")
    return extra.stat().st_size / 1e6 if extra.exists() else 0.0


def table(results: dict) -> str:
    head = (
        "| model | onyx fp32 ms | onyx int8 ms | ort fp32 ms | ort int8 ms | onyx int8 / onyx fp32 "
        "| onyx int8 / ort int8 | MB fp32 | MB int8 | max diff onyx-ort int8 | max diff ort int8-fp32 |"
    )
    lines = [head, "|" + " --- |" * 11]
    for name, r in results.items():
        ms = r["ms"]
        times = " | ".join(f"{ms[k]:.1f}" for k in ("onyx fp32", "onyx int8", "ort fp32", "ort int8"))
        lines.append(
            f"| {name} | {times} | {ms['onyx int8'] / ms['onyx fp32']:.2f} "
            f"| {ms['onyx int8'] / ms['ort int8']:.2f} "
            f"| {r['mb_fp32']:.1f} | {r['mb_int8']:.1f} | {r['int8_vs_ort_int8_maxdiff']:.3g} "
            f"| {r['quant_error']:.3g} |"
        )
    return "\n".join(lines)


def main(argv: list[str]) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("models", nargs="*", help=f"models among {', '.join(MODELS)} (default: all)")
    parser.add_argument("--rounds", type=int, default=10, help="interleaved rounds (default 10)")
    parser.add_argument("--cache", default=None, help="model cache (default bench/.cache)")
    parser.add_argument(
        "--threads", type=int, default=0, help="intra-op threads of every session (0: default)"
    )
    args = parser.parse_args(argv)
    names = args.models or list(MODELS)
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        parser.error(f"unknown model(s) {', '.join(unknown)}; choose among {', '.join(MODELS)}")
    cache = models.bench_cache(args.cache)
    results = {}
    for name in names:
        results[name] = bench(name, args.rounds, cache, args.threads)
        print(f"{name}: done", file=sys.stderr)
    print(table(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
