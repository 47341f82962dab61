"""Real models for onyx's tests: built here, exported to ONNX into a cache, never downloaded.

Every builder returns ``(path_to_onnx, feeds)`` where ``feeds`` maps input names to numpy arrays.
Builders are deterministic (``torch.manual_seed`` / fixed ``random_state``), use random weights
(transformers models come from a ``*Config`` object, never ``from_pretrained``) and reuse the cached
file when it exists. The cache folder is ``tests/.cache/models`` unless ``ONYX_MODEL_CACHE`` says
otherwise. Files are written atomically (temp name, then rename): several people may share a checkout.

When an exporter cannot export a model, the builder raises :class:`ExportFailed` with the reason, and
remembers the failure in ``<file>.failed`` (keyed by the torch version) so later runs skip at once.

    python -m tests.models.exporters            # export everything, print a table
    python -m tests.models.exporters bert gpt2  # only names containing one of these substrings

The same recipes at benchmark sizes live in ``bench/models.py``.
"""

from __future__ import annotations

import contextlib
import io
import os
import shutil
import sys
import tempfile
import time
import warnings
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

Feeds = dict[str, np.ndarray]
Built = tuple[Path, Feeds]

CACHE_ENV = "ONYX_MODEL_CACHE"
DEFAULT_CACHE = Path(__file__).resolve().parent.parent / ".cache" / "models"
TORCH_VARIANTS = ("torchscript", "dynamo")  # every torch model; "torchscript_functions" for some
TORCHSCRIPT_OPSET = 17
EXPORT_BATCH = 2  # torch.export specialises dimensions of size 1: export at 2, mark batch dynamic


class ExportFailed(Exception):
    """The exporter (torch.onnx / skl2onnx), not onyx, could not produce this model."""


def cache_dir(override: str | os.PathLike | None = None) -> Path:
    d = Path(override) if override is not None else Path(os.environ.get(CACHE_ENV, DEFAULT_CACHE))
    d.mkdir(parents=True, exist_ok=True)
    return d


def _tmp_path(final: Path) -> Path:
    fd, name = tempfile.mkstemp(prefix=f".{final.stem}-", suffix=final.suffix, dir=final.parent)
    os.close(fd)
    os.chmod(name, 0o644)  # mkstemp makes 0600 files; the cache may be shared
    return Path(name)


def _torch_version() -> str:
    import torch

    return torch.__version__


def _failed_marker(path: Path) -> Path:
    return path.with_name(path.name + ".failed")


def _check_failed(path: Path, tool_version: str) -> None:
    marker = _failed_marker(path)
    if marker.exists():
        first, _, reason = marker.read_text().partition("\n")
        if first == tool_version:
            raise ExportFailed(reason)
        marker.unlink(missing_ok=True)


def _reason(exc: BaseException) -> str:
    """A one-paragraph reason: the exception's summary and the root cause's first line."""

    def first(e: BaseException) -> str:
        text = str(e)
        if "## Exception summary" in text:  # torch.onnx's TorchExportError: the summary is what matters
            text = text.split("## Exception summary", 1)[1]
        text = " ".join(line.strip() for line in text.strip().splitlines() if line.strip())
        text = text.replace("\x1b[96m", "").replace("\x1b[0m", "")
        return f"{type(e).__name__}: {text[:400]}"

    parts = [first(exc)]
    seen = {id(exc)}
    e = exc.__cause__ or exc.__context__
    while e is not None and id(e) not in seen:
        seen.add(id(e))
        parts.append("caused by " + first(e))
        e = e.__cause__ or e.__context__
    if len(parts) == 1:
        return parts[0]
    return f"{parts[0][:200]}; {parts[-1]}"


def _record_failure(path: Path, tool_version: str, exc: BaseException) -> ExportFailed:
    reason = f"{path.stem}: export failed: {_reason(exc)}"
    tmp = _tmp_path(_failed_marker(path))
    tmp.write_text(f"{tool_version}\n{reason}")
    os.replace(tmp, _failed_marker(path))
    return ExportFailed(reason)


# --------------------------------------------------------------------------------------------------
# torch models
# --------------------------------------------------------------------------------------------------


def _randomize_batchnorm(module) -> None:
    """Default BatchNorm statistics (mean 0, var 1, weight 1, bias 0) hide bugs: randomise them."""
    import torch

    g = torch.Generator().manual_seed(1234)
    for m in module.modules():
        if isinstance(m, torch.nn.BatchNorm2d | torch.nn.BatchNorm1d):
            n = m.num_features
            with torch.no_grad():
                m.running_mean.copy_(torch.randn(n, generator=g) * 0.1)
                m.running_var.copy_(torch.rand(n, generator=g) * 0.5 + 0.75)
                m.weight.copy_(torch.rand(n, generator=g) * 0.5 + 0.75)
                m.bias.copy_(torch.randn(n, generator=g) * 0.1)


def make_resnet(widths=(16, 32, 64, 128), blocks=(1, 1, 1, 1), num_classes=10):
    """A ResNet (basic blocks): conv7x7/2-bn-relu, maxpool 3x3/2, residual stages, GAP, linear.

    ``widths=(64, 128, 256, 512), blocks=(2, 2, 2, 2), num_classes=1000`` is ResNet-18.
    """
    import torch
    from torch import nn

    class BasicBlock(nn.Module):
        def __init__(self, cin, cout, stride):
            super().__init__()
            self.conv1 = nn.Conv2d(cin, cout, 3, stride, 1, bias=False)
            self.bn1 = nn.BatchNorm2d(cout)
            self.conv2 = nn.Conv2d(cout, cout, 3, 1, 1, bias=False)
            self.bn2 = nn.BatchNorm2d(cout)
            self.relu = nn.ReLU(inplace=True)
            self.down = None
            if stride != 1 or cin != cout:
                self.down = nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))

        def forward(self, x):
            identity = x if self.down is None else self.down(x)
            y = self.relu(self.bn1(self.conv1(x)))
            y = self.bn2(self.conv2(y))
            return self.relu(y + identity)

    class ResNet(nn.Module):
        def __init__(self):
            super().__init__()
            w0 = widths[0]
            self.stem = nn.Sequential(
                nn.Conv2d(3, w0, 7, 2, 3, bias=False),
                nn.BatchNorm2d(w0),
                nn.ReLU(inplace=True),
                nn.MaxPool2d(3, 2, 1),
            )
            layers = []
            cin = w0
            for i, (w, n) in enumerate(zip(widths, blocks)):
                for j in range(n):
                    layers.append(BasicBlock(cin, w, 2 if (j == 0 and i > 0) else 1))
                    cin = w
            self.layers = nn.Sequential(*layers)
            self.pool = nn.AdaptiveAvgPool2d(1)
            self.fc = nn.Linear(cin, num_classes)

        def forward(self, x):
            x = self.layers(self.stem(x))
            return self.fc(torch.flatten(self.pool(x), 1))

    model = ResNet()
    _randomize_batchnorm(model)
    return model


MOBILENETV2_SETTINGS = ((1, 16, 1, 1), (6, 24, 2, 2), (6, 32, 3, 2), (6, 64, 4, 2), (6, 96, 3, 1))
MOBILENETV2_SETTINGS += ((6, 160, 3, 2), (6, 320, 1, 1))


def make_mobilenet(
    settings=((1, 8, 1, 1), (6, 16, 2, 2), (6, 24, 2, 2), (6, 32, 1, 2)),
    stem=16,
    last_channel=128,
    num_classes=10,
):
    """MobileNetV2: inverted residuals (expand 1x1, depthwise 3x3, project 1x1), ReLU6, GAP, linear.

    ``settings`` rows are (expansion t, channels c, repeats n, first stride s); the defaults are a
    small variant. ``MOBILENETV2_SETTINGS, stem=32, last_channel=1280, num_classes=1000`` is the
    original network at width 1.0.
    """
    import torch
    from torch import nn

    def cbr(cin, cout, k, stride, groups=1, act=True):
        layers = [nn.Conv2d(cin, cout, k, stride, k // 2, groups=groups, bias=False), nn.BatchNorm2d(cout)]
        if act:
            layers.append(nn.ReLU6(inplace=True))
        return nn.Sequential(*layers)

    class InvertedResidual(nn.Module):
        def __init__(self, cin, cout, stride, t):
            super().__init__()
            hidden = cin * t
            self.use_res = stride == 1 and cin == cout
            layers = [] if t == 1 else [cbr(cin, hidden, 1, 1)]
            layers += [cbr(hidden, hidden, 3, stride, groups=hidden), cbr(hidden, cout, 1, 1, act=False)]
            self.conv = nn.Sequential(*layers)

        def forward(self, x):
            return x + self.conv(x) if self.use_res else self.conv(x)

    class MobileNetV2(nn.Module):
        def __init__(self):
            super().__init__()
            feats = [cbr(3, stem, 3, 2)]
            cin = stem
            for t, c, n, s in settings:
                for i in range(n):
                    feats.append(InvertedResidual(cin, c, s if i == 0 else 1, t))
                    cin = c
            feats.append(cbr(cin, last_channel, 1, 1))
            self.features = nn.Sequential(*feats)
            self.classifier = nn.Sequential(nn.Dropout(0.2), nn.Linear(last_channel, num_classes))

        def forward(self, x):
            x = self.features(x)
            x = nn.functional.adaptive_avg_pool2d(x, 1)
            return self.classifier(torch.flatten(x, 1))

    model = MobileNetV2()
    _randomize_batchnorm(model)
    return model


def make_lstm(input_size=16, hidden_size=32, num_layers=2, num_classes=10):
    """A 2-layer bidirectional LSTM (batch_first) and a linear head on every time step."""
    from torch import nn

    class LSTMHead(nn.Module):
        def __init__(self):
            super().__init__()
            self.lstm = nn.LSTM(
                input_size, hidden_size, num_layers=num_layers, bidirectional=True, batch_first=True
            )
            self.head = nn.Linear(2 * hidden_size, num_classes)

        def forward(self, x):
            y, _ = self.lstm(x)
            return self.head(y)

    return LSTMHead()


def make_mlp(d_in=32, d_hidden=64, d_out=10):
    """Linear -> GELU (erf form) -> LayerNorm -> Linear."""
    from torch import nn

    return nn.Sequential(
        nn.Linear(d_in, d_hidden), nn.GELU(), nn.LayerNorm(d_hidden), nn.Linear(d_hidden, d_out)
    )


def _wrap_hf(model, input_names, n_outputs, implicit_mask=False):
    """Wrap a transformers model: plain tensors in (positional, in ``input_names`` order), a tuple out.

    ``implicit_mask`` passes ``attention_mask=ones_like(input_ids)``: without a mask, transformers
    looks for packed sequences with ``torch.diff``, which the TorchScript exporter cannot export.
    """
    import torch
    from torch import nn

    class Wrapped(nn.Module):
        def __init__(self):
            super().__init__()
            self.model = model

        def _run(self, **kw):
            if implicit_mask:
                kw["attention_mask"] = torch.ones_like(kw["input_ids"])
            return tuple(self.model(**kw, return_dict=False)[:n_outputs])

    if len(input_names) == 1:

        class One(Wrapped):
            def forward(self, x):
                return self._run(**{input_names[0]: x})

        return One()

    class Two(Wrapped):
        def forward(self, x, y):
            return self._run(**{input_names[0]: x, input_names[1]: y})

    assert len(input_names) == 2
    return Two()


def make_bert(vocab_size=1000, hidden_size=64, num_hidden_layers=2, num_attention_heads=4, **kw):
    from transformers import BertConfig, BertModel

    cfg = BertConfig(
        vocab_size=vocab_size,
        hidden_size=hidden_size,
        num_hidden_layers=num_hidden_layers,
        num_attention_heads=num_attention_heads,
        intermediate_size=kw.pop("intermediate_size", 4 * hidden_size),
        max_position_embeddings=kw.pop("max_position_embeddings", 512),
        **kw,
    )
    return _wrap_hf(BertModel(cfg), ["input_ids", "attention_mask"], 2)


def make_gpt2(vocab_size=1000, n_embd=64, n_layer=2, n_head=4, n_positions=128, **kw):
    from transformers import GPT2Config, GPT2Model

    cfg = GPT2Config(
        vocab_size=vocab_size,
        n_embd=n_embd,
        n_layer=n_layer,
        n_head=n_head,
        n_positions=n_positions,
        use_cache=False,
        bos_token_id=kw.pop("bos_token_id", vocab_size - 1),
        eos_token_id=kw.pop("eos_token_id", vocab_size - 1),
        **kw,
    )
    return _wrap_hf(GPT2Model(cfg), ["input_ids"], 1, implicit_mask=True)


def make_vit(image_size=32, patch_size=8, num_hidden_layers=2, hidden_size=64, num_attention_heads=4, **kw):
    from transformers import ViTConfig, ViTModel

    cfg = ViTConfig(
        image_size=image_size,
        patch_size=patch_size,
        num_hidden_layers=num_hidden_layers,
        hidden_size=hidden_size,
        num_attention_heads=num_attention_heads,
        intermediate_size=kw.pop("intermediate_size", 4 * hidden_size),
        **kw,
    )
    return _wrap_hf(ViTModel(cfg), ["pixel_values"], 2)


@dataclass(frozen=True)
class TorchRecipe:
    """How to build, feed and export one torch model.

    ``inputs(batch, rng)`` returns the numpy inputs in order; ``dynamic`` maps each input and output
    name to its dynamic axes ({axis: name}).
    """

    name: str
    make: Callable[[], Any]
    inputs: Callable[[int, np.random.Generator], list[np.ndarray]]
    input_names: tuple[str, ...]
    output_names: tuple[str, ...]
    dynamic: dict[str, dict[int, str]] = field(default_factory=dict)
    test_batch: int = 1
    seed: int = 0
    # module classes to export as model-local functions in the "torchscript_functions" variant
    function_modules: Callable[[], set] | None = None

    def feeds(self, batch: int | None = None) -> Feeds:
        rng = np.random.default_rng(self.seed + 1)
        arrays = self.inputs(self.test_batch if batch is None else batch, rng)
        return dict(zip(self.input_names, arrays))


def image_inputs(size: int):
    def inputs(batch, rng):
        return [rng.standard_normal((batch, 3, size, size), dtype=np.float32)]

    return inputs


def token_inputs(vocab: int, seq: int, with_mask: bool):
    def inputs(batch, rng):
        ids = rng.integers(0, vocab, size=(batch, seq), dtype=np.int64)
        if not with_mask:
            return [ids]
        mask = np.ones((batch, seq), dtype=np.int64)
        mask[:, seq - seq // 4 :] = 0  # padding at the end, so masking matters
        return [ids, mask]

    return inputs


def sequence_inputs(seq: int, features: int):
    def inputs(batch, rng):
        return [rng.standard_normal((batch, seq, features), dtype=np.float32)]

    return inputs


def vector_inputs(features: int):
    def inputs(batch, rng):
        return [rng.standard_normal((batch, features), dtype=np.float32)]

    return inputs


def _mlp_function_modules() -> set:
    from torch import nn

    return {nn.GELU, nn.LayerNorm}


B = {0: "batch"}
BS = {0: "batch", 1: "sequence"}

TORCH_RECIPES: dict[str, TorchRecipe] = {
    r.name: r
    for r in [
        TorchRecipe(
            "resnet_small", make_resnet, image_inputs(64), ("input",), ("logits",), {"input": B, "logits": B}
        ),
        TorchRecipe(
            "mobilenet_small",
            make_mobilenet,
            image_inputs(64),
            ("input",),
            ("logits",),
            {"input": B, "logits": B},
        ),
        TorchRecipe(
            "bert_tiny",
            make_bert,
            token_inputs(1000, 16, with_mask=True),
            ("input_ids", "attention_mask"),
            ("last_hidden_state", "pooler_output"),
            {"input_ids": BS, "attention_mask": BS, "last_hidden_state": BS, "pooler_output": B},
        ),
        TorchRecipe(
            "gpt2_tiny",
            make_gpt2,
            token_inputs(1000, 16, with_mask=False),
            ("input_ids",),
            ("last_hidden_state",),
            {"input_ids": BS, "last_hidden_state": BS},
        ),
        TorchRecipe(
            "vit_tiny",
            make_vit,
            image_inputs(32),
            ("pixel_values",),
            ("last_hidden_state", "pooler_output"),
            {"pixel_values": B, "last_hidden_state": B, "pooler_output": B},
        ),
        TorchRecipe(
            "lstm", make_lstm, sequence_inputs(10, 16), ("input",), ("logits",), {"input": BS, "logits": BS}
        ),
        TorchRecipe(
            "mlp_gelu_layernorm",
            make_mlp,
            vector_inputs(32),
            ("input",),
            ("output",),
            {"input": B, "output": B},
            function_modules=_mlp_function_modules,
        ),
    ]
}


def _build_module(recipe: TorchRecipe):
    import torch

    torch.manual_seed(recipe.seed)
    return recipe.make().eval()


def _torch_export(recipe: TorchRecipe, variant: str, path: Path, module=None) -> None:
    """Export ``recipe`` with ``variant`` to ``path`` (one self-contained file)."""
    import torch

    module = _build_module(recipe) if module is None else module
    args = tuple(torch.from_numpy(a) for a in recipe.inputs(EXPORT_BATCH, np.random.default_rng(recipe.seed)))
    kw: dict[str, Any] = dict(input_names=list(recipe.input_names), output_names=list(recipe.output_names))
    if variant == "torchscript":
        kw.update(dynamo=False, opset_version=TORCHSCRIPT_OPSET, dynamic_axes=recipe.dynamic or None)
    elif variant == "torchscript_functions":
        if recipe.function_modules is None:
            raise ValueError(f"{recipe.name} has no function_modules for the {variant} variant")
        kw.update(
            dynamo=False,
            opset_version=TORCHSCRIPT_OPSET,
            dynamic_axes=recipe.dynamic or None,
            export_modules_as_functions=recipe.function_modules(),
        )
    elif variant == "dynamo":
        dims: dict[str, Any] = {}
        shapes = tuple(
            {
                axis: dims.setdefault(n, torch.export.Dim(n))
                for axis, n in recipe.dynamic.get(name, {}).items()
            }
            for name in recipe.input_names
        )
        kw.update(dynamo=True, external_data=False, dynamic_shapes=shapes if dims else None)
    else:
        raise ValueError(f"unknown torch exporter variant {variant!r}; expected one of {TORCH_VARIANTS}")
    sink = io.StringIO()
    with (
        warnings.catch_warnings(),
        contextlib.redirect_stdout(sink),
        contextlib.redirect_stderr(sink),
        torch.no_grad(),
    ):
        warnings.simplefilter("ignore")
        torch.onnx.export(module, args, str(path), **kw)


def build_torch(
    name: str, variant: str = "torchscript", cache: str | os.PathLike | None = None, *, recipe=None
):
    """Export the torch model ``name`` (a key of TORCH_RECIPES unless ``recipe`` is given)."""
    recipe = TORCH_RECIPES[name] if recipe is None else recipe
    path = cache_dir(cache) / f"{recipe.name}-{variant}.onnx"
    if not path.exists():
        tv = _torch_version()
        _check_failed(path, tv)
        tmp = _tmp_path(path)
        try:
            _torch_export(recipe, variant, tmp)
            import onnx

            onnx.load(str(tmp))  # a file the exporter half-wrote is an export failure
        except Exception as e:  # noqa: BLE001 - any exporter error is reported as the skip reason
            tmp.unlink(missing_ok=True)
            raise _record_failure(path, tv, e) from e
        os.replace(tmp, path)
    return path, recipe.feeds()


def resnet_small(variant="torchscript", cache=None) -> Built:
    return build_torch("resnet_small", variant, cache)


def mobilenet_small(variant="torchscript", cache=None) -> Built:
    return build_torch("mobilenet_small", variant, cache)


def bert_tiny(variant="torchscript", cache=None) -> Built:
    return build_torch("bert_tiny", variant, cache)


def gpt2_tiny(variant="torchscript", cache=None) -> Built:
    return build_torch("gpt2_tiny", variant, cache)


def vit_tiny(variant="torchscript", cache=None) -> Built:
    return build_torch("vit_tiny", variant, cache)


def lstm(variant="torchscript", cache=None) -> Built:
    return build_torch("lstm", variant, cache)


def mlp_gelu_layernorm(variant="torchscript", cache=None) -> Built:
    return build_torch("mlp_gelu_layernorm", variant, cache)


EXTERNAL_RECIPE = TorchRecipe(
    "mlp_external",
    lambda: make_mlp(64, 128, 16),
    vector_inputs(64),
    ("input",),
    ("output",),
    {"input": B, "output": B},
)


def external_data_model(cache=None) -> Built:
    """An MLP (~40 KB of weights) exported by torch.onnx and saved with external data.

    Returns ``<cache>/external_data/mlp_external.onnx``; its tensors larger than 1 KB live in
    ``mlp_external.onnx.data`` beside it (one file, relative location).
    """
    import onnx

    folder = cache_dir(cache) / "external_data"
    path = folder / "mlp_external.onnx"
    if not path.exists():
        tmpdir = Path(tempfile.mkdtemp(prefix=".external_data-", dir=folder.parent))
        os.chmod(tmpdir, 0o755)
        try:
            single = tmpdir / "single.onnx"
            _torch_export(EXTERNAL_RECIPE, "torchscript", single)
            model = onnx.load(str(single))
            single.unlink()
            onnx.save_model(
                model,
                str(tmpdir / path.name),
                save_as_external_data=True,
                all_tensors_to_one_file=True,
                location=path.name + ".data",
                size_threshold=1024,
            )
            try:
                os.rename(tmpdir, folder)
            except OSError:  # someone else finished first
                if not path.exists():
                    raise
        finally:
            shutil.rmtree(tmpdir, ignore_errors=True)
    return path, EXTERNAL_RECIPE.feeds()


# --------------------------------------------------------------------------------------------------
# scikit-learn models through skl2onnx
# --------------------------------------------------------------------------------------------------


@dataclass(frozen=True)
class SklearnRecipe:
    """A scikit-learn estimator fit on a dataset that sklearn ships, converted with skl2onnx.

    ``zipmap`` None keeps skl2onnx's default (ZipMap on for classifiers: seq(map) probabilities);
    False turns it off. ``string_labels`` trains on the dataset's class names (string label tensor).
    """

    name: str
    make: Callable[[], Any]
    dataset: str
    zipmap: bool | None = None
    string_labels: bool = False
    n_feeds: int = 16

    def data(self) -> tuple[np.ndarray, np.ndarray]:
        from sklearn import datasets

        bunch = getattr(datasets, f"load_{self.dataset}")()
        x = bunch.data.astype(np.float32)
        y = bunch.target
        if self.string_labels:
            y = np.asarray(bunch.target_names)[y].astype(str)
        return x, y

    def feeds(self, n: int | None = None) -> Feeds:
        x, _ = self.data()
        n = self.n_feeds if n is None else n
        idx = np.linspace(0, len(x) - 1, n).astype(np.int64)  # spread over all classes
        return {"X": np.ascontiguousarray(x[idx])}


def _sk(name):
    def make():
        import sklearn.ensemble as ens
        import sklearn.linear_model as lin
        import sklearn.pipeline as pipe
        import sklearn.preprocessing as pre
        import sklearn.svm as svm

        return {
            "random_forest_classifier": lambda: ens.RandomForestClassifier(
                n_estimators=10, max_depth=6, random_state=0
            ),
            "gradient_boosting_classifier": lambda: ens.GradientBoostingClassifier(
                n_estimators=20, max_depth=3, random_state=0
            ),
            "hist_gradient_boosting_classifier": lambda: ens.HistGradientBoostingClassifier(
                max_iter=20, random_state=0
            ),
            "svc": lambda: svm.SVC(probability=True, random_state=0),
            "svr": lambda: svm.SVR(),
            "logistic_regression": lambda: lin.LogisticRegression(max_iter=5000, random_state=0),
            "linear_regression": lambda: lin.LinearRegression(),
            "scaler_logistic_regression": lambda: pipe.make_pipeline(
                pre.StandardScaler(), lin.LogisticRegression(max_iter=2000, random_state=0)
            ),
            "random_forest_regressor": lambda: ens.RandomForestRegressor(
                n_estimators=10, max_depth=6, random_state=0
            ),
        }[name]()

    return make


SKLEARN_RECIPES: dict[str, SklearnRecipe] = {
    r.name: r
    for r in [
        # ZipMap on (skl2onnx's default): output_probability is seq(map(int64, tensor(float)))
        SklearnRecipe("random_forest_classifier", _sk("random_forest_classifier"), "iris"),
        # ZipMap on with string labels: tensor(string) label, seq(map(string, tensor(float)))
        SklearnRecipe("logistic_regression", _sk("logistic_regression"), "breast_cancer", string_labels=True),
        SklearnRecipe(
            "gradient_boosting_classifier", _sk("gradient_boosting_classifier"), "breast_cancer", zipmap=False
        ),
        # Known export failure (skl2onnx 1.20 with onnx 1.23): the HGB converter writes a Python bool
        # into nodes_missing_value_tracks_true (INTS) for leaves, which onnx's make_attribute rejects.
        SklearnRecipe(
            "hist_gradient_boosting_classifier",
            _sk("hist_gradient_boosting_classifier"),
            "iris",
            zipmap=False,
        ),
        SklearnRecipe("svc", _sk("svc"), "iris", zipmap=False),
        SklearnRecipe("svr", _sk("svr"), "diabetes"),
        SklearnRecipe("linear_regression", _sk("linear_regression"), "diabetes"),
        SklearnRecipe(
            "scaler_logistic_regression", _sk("scaler_logistic_regression"), "digits", zipmap=False
        ),
        SklearnRecipe("random_forest_regressor", _sk("random_forest_regressor"), "diabetes"),
    ]
}

SKLEARN_OPSET = 17


def sklearn_export(recipe: SklearnRecipe, path: Path) -> None:
    from skl2onnx import to_onnx
    from skl2onnx.common.data_types import FloatTensorType

    x, y = recipe.data()
    est = recipe.make()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # SVC(probability=True) is deprecated in sklearn 1.9
        est.fit(x, y)
    options = None
    if recipe.zipmap is False:
        final = est.steps[-1][1] if hasattr(est, "steps") else est
        options = {id(final): {"zipmap": False}}
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        onx = to_onnx(
            est,
            initial_types=[("X", FloatTensorType([None, x.shape[1]]))],
            target_opset=SKLEARN_OPSET,
            options=options,
        )
    path.write_bytes(onx.SerializeToString())


def build_sklearn(name: str, cache: str | os.PathLike | None = None, *, recipe=None) -> Built:
    recipe = SKLEARN_RECIPES[name] if recipe is None else recipe
    path = cache_dir(cache) / f"{recipe.name}-skl2onnx.onnx"
    if not path.exists():
        import skl2onnx
        import sklearn

        tv = f"sklearn {sklearn.__version__} skl2onnx {skl2onnx.__version__}"
        _check_failed(path, tv)
        tmp = _tmp_path(path)
        try:
            sklearn_export(recipe, tmp)
        except Exception as e:  # noqa: BLE001
            tmp.unlink(missing_ok=True)
            raise _record_failure(path, tv, e) from e
        os.replace(tmp, path)
    return path, recipe.feeds()


# --------------------------------------------------------------------------------------------------
# the catalogue
# --------------------------------------------------------------------------------------------------


def all_models() -> dict[str, Callable[[str | os.PathLike | None], Built]]:
    """Every test model as ``"<name>/<variant>" -> builder(cache) -> (path, feeds)``."""
    out: dict[str, Callable[..., Built]] = {}
    for name in TORCH_RECIPES:
        variants = TORCH_VARIANTS
        if TORCH_RECIPES[name].function_modules is not None:
            variants += ("torchscript_functions",)
        for variant in variants:
            out[f"{name}/{variant}"] = lambda cache=None, n=name, v=variant: build_torch(n, v, cache)
    out["mlp_external/external_data"] = external_data_model
    for name in SKLEARN_RECIPES:
        out[f"{name}/skl2onnx"] = lambda cache=None, n=name: build_sklearn(n, cache)
    return out


def main(argv: list[str]) -> int:
    patterns = [p.lower() for p in argv[1:]]
    failed = 0
    t_all = time.perf_counter()
    for key, build in all_models().items():
        if patterns and not any(p in key.lower() for p in patterns):
            continue
        t = time.perf_counter()
        try:
            path, feeds = build()
            size = path.stat().st_size
            print(f"{key:45s} {time.perf_counter() - t:6.1f} s {size / 1e3:9.1f} KB  {path}")
        except ExportFailed as e:
            failed += 1
            print(f"{key:45s} {time.perf_counter() - t:6.1f} s  SKIPPED {e}")
    print(f"total {time.perf_counter() - t_all:.1f} s, {failed} export failures")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv))
