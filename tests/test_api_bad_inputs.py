"""Misuse of the public API gives onyx errors that say what was expected, never a bare traceback."""

import numpy as np
import pytest

import onyx
from onyx.cli import shipped_model


@pytest.mark.parametrize(
    "call",
    [
        lambda: onyx.check(None),
        lambda: onyx.infer_shapes("model.onnx"),
        lambda: onyx.optimize(None, 1),
        lambda: onyx.optimize(onyx.load(shipped_model()[0]), "fast"),
        lambda: onyx.optimize(onyx.load(shipped_model()[0]), -1),
        lambda: onyx.save("not a model", "/tmp/x.onnx"),
        lambda: onyx.InferenceSession(123),
        lambda: onyx.load(3.5),
    ],
)
def test_wrong_argument_types(call):
    with pytest.raises(onyx.InvalidArgument):
        call()


def test_load_tensor_of_corrupt_bytes():
    with pytest.raises(onyx.InvalidProtobuf):
        onyx.load_tensor(b"\x0a\xff\xff\xff\xff\x0f")


def test_save_into_a_missing_folder(tmp_path):
    with pytest.raises(onyx.NoSuchFile):
        onyx.save(onyx.load(shipped_model()[0]), tmp_path / "no" / "such" / "m.onnx")


def test_run_with_feeds_that_are_not_a_dict():
    sess = onyx.InferenceSession(shipped_model()[0])
    with pytest.raises(onyx.InvalidArgument, match="dict"):
        sess.run(None, [np.zeros((1, 64), np.float32)])
