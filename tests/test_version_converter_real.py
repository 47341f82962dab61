"""onyx.version_converter on real exports (torch.onnx and skl2onnx), and measured against
onnx.version_converter on the same models: a conversion counts when the converter returns a model that
passes onnx's full check and gives onnxruntime's outputs of the original."""

from __future__ import annotations

import io
import warnings

import numpy as np
import onnx
import onnx.version_converter
import pytest

import onyx
from onyx.version_converter import convert_version
from tests.test_version_converter import CASES, check_converted

torch = pytest.importorskip("torch")


class SmallCNN(torch.nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.c1 = torch.nn.Conv2d(3, 8, 3, padding=1)
        self.c2 = torch.nn.Conv2d(8, 4, 3, stride=2)
        self.fc = torch.nn.Linear(4 * 3 * 3, 5)

    def forward(self, x):
        x = torch.nn.functional.max_pool2d(torch.relu(self.c1(x)), 2)
        x = torch.nn.functional.interpolate(x, scale_factor=2.0, mode="nearest")
        return torch.softmax(self.fc(self.c2(x).flatten(1)), dim=-1)


class SmallBlock(torch.nn.Module):
    """A pre-norm transformer layer: LayerNorm, attention with Split/Reshape/Softmax, a GELU MLP."""

    def __init__(self, d: int = 16, heads: int = 2) -> None:
        super().__init__()
        self.heads = heads
        self.qkv, self.o = torch.nn.Linear(d, 3 * d), torch.nn.Linear(d, d)
        self.ln1, self.ln2 = torch.nn.LayerNorm(d), torch.nn.LayerNorm(d)
        self.ff = torch.nn.Sequential(torch.nn.Linear(d, 32), torch.nn.GELU(), torch.nn.Linear(32, d))

    def forward(self, x):
        b, t, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=-1)
        q, k, v = (z.reshape(b, t, self.heads, d // self.heads).transpose(1, 2) for z in (q, k, v))
        a = torch.softmax(q @ k.transpose(-1, -2) / (d // self.heads) ** 0.5, dim=-1) @ v
        x = x + self.o(a.transpose(1, 2).reshape(b, t, d))
        return x + self.ff(self.ln2(x))


def torch_export(module, example, opset: int) -> onnx.ModelProto:
    torch.manual_seed(0)
    f = io.BytesIO()
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        torch.onnx.export(module.eval(), (example,), f, opset_version=opset, dynamo=False)
    return onnx.load_from_string(f.getvalue())


def sklearn_pipeline() -> onnx.ModelProto:
    skl2onnx = pytest.importorskip("skl2onnx")
    from sklearn.linear_model import LogisticRegression
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    rng = np.random.default_rng(0)
    x, y = rng.standard_normal((40, 4)).astype(np.float32), rng.integers(0, 3, 40)
    pipe = make_pipeline(StandardScaler(), LogisticRegression(max_iter=200)).fit(x, y)
    return skl2onnx.to_onnx(pipe, x[:1], target_opset={"": 13, "ai.onnx.ml": 3}, options={"zipmap": False})


def real_models() -> list[tuple[str, onnx.ModelProto, tuple[int, ...]]]:
    torch.manual_seed(0)
    cnn, block = SmallCNN(), SmallBlock()
    image, tokens = torch.randn(1, 3, 8, 8), torch.randn(2, 5, 16)
    out = []
    for opset in (13, 17, 18):
        out.append((f"torch_cnn_{opset}", torch_export(cnn, image, opset), (9, 11, 13, 18, 21)))
        out.append((f"torch_block_{opset}", torch_export(block, tokens, opset), (11, 13, 17, 18, 21)))
    out.append(("skl2onnx_scaler_logreg_13", sklearn_pipeline(), (9, 11, 18, 21)))
    return out


@pytest.fixture(scope="module")
def exports():
    return real_models()


def test_real_exports_convert_up_and_down(exports) -> None:
    for _name, model, targets in exports:
        source = onyx.load_from_string(model.SerializeToString())
        for target in targets:
            if target == model.opset_import[0].version:
                continue
            converted = convert_version(source, target)
            check_converted(model, onyx.serialize(converted), atol=1e-5)


def _attempt(convert, model: onnx.ModelProto, target: int, atol: float) -> bool:
    try:
        converted = convert(model, target)
        check_converted(model, converted, atol)
    except Exception:  # any failure of the converter or of its result counts as not converted
        return False
    return True


def _onyx_convert(model: onnx.ModelProto, target: int) -> bytes:
    return onyx.serialize(convert_version(onyx.load_from_string(model.SerializeToString()), target))


def _onnx_convert(model: onnx.ModelProto, target: int) -> bytes:
    return onnx.version_converter.convert_version(model, target).SerializeToString()


def compare(exports) -> tuple[list[tuple[str, int, bool, bool]], int]:
    """(model, target, onyx converted, onnx converted) for every case and target."""
    rows = []
    models = [(c.name, c.build(), c.targets, c.atol) for c in CASES]
    models += [(n, m, t, 1e-5) for n, m, t in exports]
    for name, model, targets, atol in models:
        for target in targets:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                rows.append(
                    (
                        name,
                        target,
                        _attempt(_onyx_convert, model, target, atol),
                        _attempt(_onnx_convert, model, target, atol),
                    )
                )
    return rows, len(models)


def test_onyx_converts_at_least_what_onnx_converts(exports) -> None:
    rows, _ = compare(exports)
    onnx_only = [(n, t) for n, t, ours, theirs in rows if theirs and not ours]
    assert not onnx_only, f"onnx.version_converter converts these and onyx does not: {onnx_only}"
    assert all(ours for _, _, ours, _ in rows)


def main() -> None:
    """Prints the tables recorded in docs/tools.md (``--node-suite``: the ONNX node suite's, slower)."""
    import sys

    if "--node-suite" in sys.argv:
        node_suite_comparison()
        return
    rows, n_models = compare(real_models())
    ours = sum(r[2] for r in rows)
    theirs = sum(r[3] for r in rows)
    print(f"{n_models} models, {len(rows)} conversions: onyx {ours}, onnx.version_converter {theirs}")
    for name, target, a, b in rows:
        if a != b:
            print(f"  {name} -> {target}: onyx {'ok' if a else 'FAIL'}, onnx {'ok' if b else 'FAIL'}")


def node_suite_comparison(targets: tuple[int, ...] = (13, 18)) -> None:
    """Both converters on the official ONNX node suite: every default-domain case that onnxruntime
    passes as is, converted to each of ``targets`` (other than its own opset); a conversion counts when
    the result passes onnx's full check and onnxruntime still gives the case's expected outputs."""
    import collections

    import onnxruntime as ort
    from onnx.backend.test.case.node import collect_testcases

    def passes(model_bytes: bytes, case) -> bool:
        so = ort.SessionOptions()
        so.log_severity_level = 4
        sess = ort.InferenceSession(model_bytes, so, providers=["CPUExecutionProvider"])
        names = [i.name for i in sess.get_inputs()]
        for inputs, expected in case.data_sets:
            got = sess.run(None, dict(zip(names, inputs, strict=False)))
            for g, e in zip(got, expected, strict=True):
                if not isinstance(e, np.ndarray) or e.dtype == object:
                    continue
                np.testing.assert_allclose(g, e, rtol=max(case.rtol, 1e-4), atol=max(case.atol, 1e-5))
        return True

    counts: collections.Counter[str] = collections.Counter()
    only_onnx, only_onyx = [], []
    for case in collect_testcases():
        if case.kind != "node" or any(o.domain not in ("", "ai.onnx") for o in case.model.opset_import):
            continue
        try:
            passes(case.model.SerializeToString(), case)
        except Exception:  # onnxruntime itself fails the case: not counted
            continue
        source = case.model.opset_import[0].version
        for target in targets:
            if target == source:
                continue
            counts["conversions"] += 1
            ok = {}
            for label, fn in (("onyx", _onyx_convert), ("onnx", _onnx_convert)):
                try:
                    with warnings.catch_warnings():
                        warnings.simplefilter("ignore")
                        converted = fn(case.model, target)
                    onnx.checker.check_model(onnx.load_from_string(converted), full_check=True)
                    ok[label] = passes(converted, case)
                except Exception:
                    ok[label] = False
                counts[label] += ok[label]
            if ok["onnx"] and not ok["onyx"]:
                only_onnx.append(f"{case.name} {source}->{target}")
            if ok["onyx"] and not ok["onnx"]:
                only_onyx.append(f"{case.name} {source}->{target}")
    print(f"node suite, targets {targets}: {counts['conversions']} conversions of cases onnxruntime passes")
    print(f"  onyx {counts['onyx']}, onnx.version_converter {counts['onnx']}")
    print(f"  only onnx ({len(only_onnx)}): {only_onnx}")
    print(f"  only onyx: {len(only_onyx)}")


if __name__ == "__main__":
    main()
