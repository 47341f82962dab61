"""Shape inference on real exports (torch both exporters, transformers, LSTM, sklearn pipelines).

Issue acceptance: onyx knows the shape of at least 98% of the intermediates of the torch exports, at least
as many as onnx's own inference, and never disagrees with a dimension onnx's inference knows. On every
model the inferred shapes also agree with the arrays a run actually produces.
"""

from __future__ import annotations

import warnings

import numpy as np
import onnx
import onnx.shape_inference
import pytest

import onyx
from onyx.ir.types import TensorType
from onyx.shape_inference import known_fraction
from tests.models import exporters

MODELS = exporters.all_models()
TORCH = [k for k in MODELS if not k.endswith("/skl2onnx")]


def _build(key):
    try:
        return MODELS[key]()
    except exporters.ExportFailed as e:
        pytest.skip(str(e))


def _onnx_known(path) -> tuple[int, int, dict[str, list]]:
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        m = onnx.shape_inference.infer_shapes(onnx.load(str(path)))
    vi = {v.name: v for v in list(m.graph.value_info) + list(m.graph.output)}
    known = total = 0
    dims: dict[str, list] = {}
    for n in m.graph.node:
        for o in n.output:
            if not o:
                continue
            total += 1
            v = vi.get(o)
            if v is None or not v.type.HasField("tensor_type") or not v.type.tensor_type.HasField("shape"):
                continue
            ds = [d.dim_value if d.HasField("dim_value") else None for d in v.type.tensor_type.shape.dim]
            dims[o] = ds
            if all(d.HasField("dim_value") or d.HasField("dim_param") for d in v.type.tensor_type.shape.dim):
                known += 1
    return known, total, dims


@pytest.mark.parametrize("key", TORCH)
def test_torch_exports_known_and_agree_with_onnx(key):
    path, _ = _build(key)
    model = onyx.infer_shapes(onyx.load(str(path)))
    known, total = known_fraction(model)
    o_known, o_total, o_dims = _onnx_known(path)
    assert known >= 0.98 * total, f"{key}: onyx knows {known}/{total}"
    assert known >= o_known, f"{key}: onyx knows {known}, onnx {o_known} of {o_total}"
    for node in model.graph.walk():
        for v in node.outputs:
            want = o_dims.get(v.name)
            if want is None or not isinstance(v.type, TensorType) or v.type.shape is None:
                continue
            got = v.type.shape.dims
            assert len(got) == len(want), f"{key}: {v.name} rank {len(got)} vs onnx {len(want)}"
            for a, b in zip(got, want):
                if b is not None:
                    assert a == b, f"{key}: {v.name} dims {got} vs onnx {want}"


@pytest.mark.parametrize("key", list(MODELS))
def test_inferred_shapes_match_a_real_run(key):
    """Every output's inferred static dims, rank and element type agree with what the model computes."""
    path, feeds = _build(key)
    model = onyx.infer_shapes(onyx.load(str(path)))
    outs = onyx.InferenceSession(str(path)).run(None, feeds)
    for v, arr in zip(model.graph.outputs, outs):
        if not isinstance(arr, np.ndarray) or not isinstance(v.type, TensorType):
            continue
        assert onyx.ir.dtypes.DataType(v.type.elem_type).numpy_dtype == arr.dtype
        if v.type.shape is not None:
            assert len(v.type.shape.dims) == arr.ndim
            for d, n in zip(v.type.shape.dims, arr.shape):
                assert not isinstance(d, int) or d == n, f"{key}: {v.name} {v.type.shape} vs {arr.shape}"
