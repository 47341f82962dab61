"""Build the small digits classifier shipped inside the package (src/onyx/data/).

Trains a StandardScaler + LogisticRegression pipeline on scikit-learn's bundled digits dataset (no
download), converts it with skl2onnx (default-domain opset 17, ZipMap off so the outputs are a label
tensor and a probability tensor, input "input" float32 [None, 64]) and writes:

    src/onyx/data/digits.onnx          the model
    src/onyx/data/digits_samples.npz   64 held-out samples: "x" float32 [64, 64], "y" int64 [64]

Deterministic: fixed split and random_state. Run:  python scripts/make_digits_model.py [--check]
"""

from __future__ import annotations

import argparse
from pathlib import Path

import numpy as np

DATA = Path(__file__).resolve().parent.parent / "src" / "onyx" / "data"
N_SAMPLES = 64
SEED = 0


def _dedupe_opsets(model) -> None:
    """skl2onnx lists the default domain twice in opset_import; keep one entry per domain."""
    seen: dict[str, int] = {}
    for o in model.opset_import:
        seen[o.domain] = max(seen.get(o.domain, 0), o.version)
    del model.opset_import[:]
    for domain, version in seen.items():
        entry = model.opset_import.add()
        entry.domain, entry.version = domain, version


def build() -> tuple[bytes, np.ndarray, np.ndarray]:
    from skl2onnx import to_onnx
    from skl2onnx.common.data_types import FloatTensorType
    from sklearn.datasets import load_digits
    from sklearn.linear_model import LogisticRegression
    from sklearn.model_selection import train_test_split
    from sklearn.pipeline import make_pipeline
    from sklearn.preprocessing import StandardScaler

    x, y = load_digits(return_X_y=True)
    x = x.astype(np.float32)
    y = y.astype(np.int64)
    x_train, x_test, y_train, y_test = train_test_split(
        x, y, test_size=N_SAMPLES, random_state=SEED, stratify=y
    )
    clf = LogisticRegression(max_iter=2000, random_state=SEED)
    pipe = make_pipeline(StandardScaler(), clf)
    pipe.fit(x_train, y_train)
    onx = to_onnx(
        pipe,
        initial_types=[("input", FloatTensorType([None, 64]))],
        target_opset=17,
        options={id(clf): {"zipmap": False}},
    )
    _dedupe_opsets(onx)
    onx.producer_name = "onyx/scripts/make_digits_model.py"
    onx.doc_string = "StandardScaler + LogisticRegression on sklearn's digits; outputs label, probabilities"
    return onx.SerializeToString(), x_test.astype(np.float32), y_test.astype(np.int64)


def check(model_path: Path, samples_path: Path) -> float:
    import onnxruntime as ort

    sess = ort.InferenceSession(str(model_path), providers=["CPUExecutionProvider"])
    s = np.load(samples_path)
    label, proba = sess.run(None, {"input": s["x"]})
    acc = float((label == s["y"]).mean())
    assert proba.shape == (N_SAMPLES, 10), proba.shape
    return acc


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--out", type=Path, default=DATA, help="output folder (default: src/onyx/data)")
    ap.add_argument("--check", action="store_true", help="only check the existing files with onnxruntime")
    args = ap.parse_args()
    model_path = args.out / "digits.onnx"
    samples_path = args.out / "digits_samples.npz"
    if not args.check:
        data, x, y = build()
        args.out.mkdir(parents=True, exist_ok=True)
        model_path.write_bytes(data)
        # np.savez (uncompressed) writes no timestamps that change between runs
        np.savez(samples_path, x=x, y=y)
        for p in (model_path, samples_path):
            print(f"wrote {p} ({p.stat().st_size} B)")
    acc = check(model_path, samples_path)
    print(f"onnxruntime accuracy on the {N_SAMPLES} samples: {acc:.4f}")
    if acc <= 0.9:
        raise SystemExit("accuracy too low")


if __name__ == "__main__":
    main()
