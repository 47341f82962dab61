"""com.microsoft CropAndResize against onnxruntime: bilinear and nearest, boxes inside, across and
outside the image, flipped boxes, one-pixel crops."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto as T

from onyx.errors import OnyxError
from tests.ops.contrib._single import assert_equal_outputs, both, run_onyx

R = np.random.default_rng(0)
X = R.standard_normal((2, 3, 8, 10)).astype(np.float32)
ROIS = np.concatenate(
    [
        np.array(
            [
                [0, 0, 1, 1],
                [0.1, 0.2, 0.7, 0.9],
                [-0.2, 0.3, 1.3, 0.5],
                [0.5, 0.5, 0.5, 0.5],
                [0.9, 0.8, 0.1, 0.2],
            ],
            np.float32,
        ),
        R.random((10, 4)).astype(np.float32),
    ]
)
BATCH = R.integers(0, 2, len(ROIS)).astype(np.int32)


@pytest.mark.parametrize("mode", ["bilinear", "nearest"])
@pytest.mark.parametrize("crop", [(3, 4), (1, 1), (5, 2), (8, 10), (15, 19)])
@pytest.mark.parametrize("dtype,elem", [(np.float32, T.FLOAT), (np.float16, T.FLOAT16)])
def test_against_onnxruntime(mode, crop, dtype, elem):
    ins = [X.astype(dtype), ROIS.astype(dtype), BATCH, np.array(crop, np.int32)]
    assert_equal_outputs(*both("CropAndResize", ins, [elem], mode=mode, extrapolation_value=-7.0))


@pytest.mark.parametrize(
    "rois,batch,crop,match",
    [
        (ROIS[:, :3], BATCH, (2, 2), r"\[num_rois, 4\]"),
        (ROIS, BATCH[:3], (2, 2), "batch_indices must be"),
        (ROIS, BATCH + 5, (2, 2), r"in \[0, 2\)"),
        (ROIS, BATCH, (0, 2), "positive"),
    ],
)
def test_bad_inputs(rois, batch, crop, match):
    with pytest.raises(OnyxError, match=match):
        run_onyx("CropAndResize", [X, rois, batch, np.array(crop, np.int32)], [T.FLOAT])
