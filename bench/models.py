"""The benchmark model set: the recipes of tests/models/exporters.py at benchmark sizes.

    resnet18       ResNet-18 (basic blocks 2-2-2-2, widths 64..512, 1000 classes), 3x224x224
    mobilenetv2    MobileNetV2 at width 1.0 (1000 classes), 3x224x224
    bert_base      BertModel 12 layers, hidden 768, 12 heads, vocab 30522, sequence 128
    gpt2_small     GPT2Model 12 layers, n_embd 768, 12 heads, vocab 50257, sequence 128
    vit_base       ViTModel 12 layers, hidden 768, 12 heads, patch 16, 3x224x224
    lstm           2-layer bidirectional LSTM, 128 features in, hidden 256, sequence 64, linear head
    mlp            Linear 512->2048 -> GELU -> LayerNorm -> Linear 2048->512
    sklearn:       the skl2onnx pipelines of the tests, with sklearn's default sizes (100 trees...)

Random weights, nothing downloaded. Each builder returns ``(path, feeds)`` for a batch size (1 and 8;
sklearn models also 512 rows); one exported file per model and exporter serves every batch size (the
batch axis is dynamic). Files are cached under ``bench/.cache`` (git-ignored), or ``ONYX_BENCH_CACHE``.

    python -m bench.models                   # export every model (torchscript), print a table
    python -m bench.models bert --variant dynamo

Only the builders live here; the benchmark runner is separate.
"""

from __future__ import annotations

import argparse
import os
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from tests.models import exporters as ex

BENCH_CACHE_ENV = "ONYX_BENCH_CACHE"
DEFAULT_BENCH_CACHE = Path(__file__).resolve().parent / ".cache"
BATCHES = (1, 8)
SKLEARN_BATCHES = (1, 8, 512)


def bench_cache(override: str | os.PathLike | None = None) -> Path:
    d = Path(override) if override is not None else Path(os.environ.get(BENCH_CACHE_ENV, DEFAULT_BENCH_CACHE))
    d.mkdir(parents=True, exist_ok=True)
    return d


B, BS = ex.B, ex.BS

TORCH_BENCH: dict[str, ex.TorchRecipe] = {
    r.name: r
    for r in [
        ex.TorchRecipe(
            "resnet18",
            lambda: ex.make_resnet((64, 128, 256, 512), (2, 2, 2, 2), 1000),
            ex.image_inputs(224),
            ("input",),
            ("logits",),
            {"input": B, "logits": B},
        ),
        ex.TorchRecipe(
            "mobilenetv2",
            lambda: ex.make_mobilenet(ex.MOBILENETV2_SETTINGS, stem=32, last_channel=1280, num_classes=1000),
            ex.image_inputs(224),
            ("input",),
            ("logits",),
            {"input": B, "logits": B},
        ),
        ex.TorchRecipe(
            "bert_base",
            lambda: ex.make_bert(
                vocab_size=30522, hidden_size=768, num_hidden_layers=12, num_attention_heads=12
            ),
            ex.token_inputs(30522, 128, with_mask=True),
            ("input_ids", "attention_mask"),
            ("last_hidden_state", "pooler_output"),
            {"input_ids": BS, "attention_mask": BS, "last_hidden_state": BS, "pooler_output": B},
        ),
        ex.TorchRecipe(
            "gpt2_small",
            lambda: ex.make_gpt2(vocab_size=50257, n_embd=768, n_layer=12, n_head=12, n_positions=1024),
            ex.token_inputs(50257, 128, with_mask=False),
            ("input_ids",),
            ("last_hidden_state",),
            {"input_ids": BS, "last_hidden_state": BS},
        ),
        ex.TorchRecipe(
            "vit_base",
            lambda: ex.make_vit(
                image_size=224, patch_size=16, num_hidden_layers=12, hidden_size=768, num_attention_heads=12
            ),
            ex.image_inputs(224),
            ("pixel_values",),
            ("last_hidden_state", "pooler_output"),
            {"pixel_values": B, "last_hidden_state": B, "pooler_output": B},
        ),
        ex.TorchRecipe(
            "lstm",
            lambda: ex.make_lstm(input_size=128, hidden_size=256, num_layers=2, num_classes=32),
            ex.sequence_inputs(64, 128),
            ("input",),
            ("logits",),
            {"input": BS, "logits": BS},
        ),
        ex.TorchRecipe(
            "mlp",
            lambda: ex.make_mlp(512, 2048, 512),
            ex.vector_inputs(512),
            ("input",),
            ("output",),
            {"input": B, "output": B},
        ),
    ]
}


def _sk_default(name: str) -> Callable[[], object]:
    """The sklearn estimators at their library-default sizes (100 trees, 100 boosting rounds...)."""

    def make():
        import sklearn.ensemble as ens
        import sklearn.linear_model as lin
        import sklearn.pipeline as pipe
        import sklearn.preprocessing as pre
        import sklearn.svm as svm

        return {
            "random_forest_classifier": lambda: ens.RandomForestClassifier(random_state=0),
            "gradient_boosting_classifier": lambda: ens.GradientBoostingClassifier(random_state=0),
            "hist_gradient_boosting_classifier": lambda: ens.HistGradientBoostingClassifier(random_state=0),
            "svc": lambda: svm.SVC(probability=True, random_state=0),
            "svr": lambda: svm.SVR(),
            "logistic_regression": lambda: lin.LogisticRegression(max_iter=5000, random_state=0),
            "linear_regression": lambda: lin.LinearRegression(),
            "scaler_logistic_regression": lambda: pipe.make_pipeline(
                pre.StandardScaler(), lin.LogisticRegression(max_iter=5000, random_state=0)
            ),
            "random_forest_regressor": lambda: ens.RandomForestRegressor(random_state=0),
        }[name]()

    return make


SKLEARN_BENCH: dict[str, ex.SklearnRecipe] = {
    name: ex.SklearnRecipe(
        name, _sk_default(name), r.dataset, zipmap=r.zipmap, string_labels=r.string_labels, n_feeds=1
    )
    for name, r in ex.SKLEARN_RECIPES.items()
}


@dataclass(frozen=True)
class BenchModel:
    name: str
    kind: str  # "torch" or "sklearn"
    batches: tuple[int, ...]
    variants: tuple[str, ...]

    def build(self, batch: int = 1, variant: str | None = None, cache=None) -> ex.Built:
        """Export (or reuse) the model and return ``(path, feeds)`` for ``batch`` rows."""
        cache = bench_cache(cache)
        variant = variant or self.variants[0]
        if self.kind == "torch":
            recipe = TORCH_BENCH[self.name]
            path, _ = ex.build_torch(self.name, variant, cache, recipe=recipe)
            return path, recipe.feeds(batch)
        recipe = SKLEARN_BENCH[self.name]
        path, _ = ex.build_sklearn(self.name, cache, recipe=recipe)
        return path, _sklearn_rows(recipe, batch)


def _sklearn_rows(recipe: ex.SklearnRecipe, batch: int) -> dict[str, np.ndarray]:
    """``batch`` rows of the dataset (cycled when it has fewer), as float32."""
    x, _ = recipe.data()
    idx = np.arange(batch) * 7 % len(x)
    return {"X": np.ascontiguousarray(x[idx])}


BENCH_MODELS: dict[str, BenchModel] = {
    **{n: BenchModel(n, "torch", BATCHES, ex.TORCH_VARIANTS) for n in TORCH_BENCH},
    **{n: BenchModel(n, "sklearn", SKLEARN_BATCHES, ("skl2onnx",)) for n in SKLEARN_BENCH},
}


def build(name: str, batch: int = 1, variant: str | None = None, cache=None) -> ex.Built:
    """``(path, feeds)`` of benchmark model ``name`` at ``batch``; raises ExportFailed like the tests."""
    return BENCH_MODELS[name].build(batch, variant, cache)


def main(argv: list[str]) -> int:
    ap = argparse.ArgumentParser(description="export the benchmark models")
    ap.add_argument("names", nargs="*", help="substrings of model names (default: all)")
    ap.add_argument("--variant", default=None, help="torchscript (default) or dynamo, for torch models")
    args = ap.parse_args(argv[1:])
    for name, m in BENCH_MODELS.items():
        if args.names and not any(p in name for p in args.names):
            continue
        variant = args.variant if m.kind == "torch" and args.variant else None
        t = time.perf_counter()
        try:
            path, feeds = m.build(m.batches[0], variant)
        except ex.ExportFailed as e:
            print(f"{name:36s} {time.perf_counter() - t:7.1f} s  SKIPPED {e}")
            continue
        shapes = {k: v.shape for k, v in feeds.items()}
        size = path.stat().st_size / 1e6
        took = time.perf_counter() - t
        print(f"{name:36s} {took:7.1f} s {size:9.1f} MB  batches {m.batches}  {shapes}  {path}")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
