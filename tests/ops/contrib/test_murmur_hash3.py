"""com.microsoft MurmurHash3 against onnxruntime: every input type, seeds, signed and unsigned outputs."""

from __future__ import annotations

import numpy as np
import pytest
from onnx import TensorProto

from onyx.errors import OnyxError
from onyx.ops.contrib.murmur_hash3 import hash_bytes
from tests.ops.contrib._single import assert_equal_outputs, both, run_onyx

R = np.random.default_rng(0)
INPUTS = {
    "int32": R.integers(-(2**31), 2**31 - 1, (3, 4)).astype(np.int32),
    "uint32": R.integers(0, 2**32 - 1, (3, 4)).astype(np.uint32),
    "int64": R.integers(-(2**62), 2**62, (5,)).astype(np.int64),
    "uint64": R.integers(0, 2**63, (2, 2)).astype(np.uint64),
    "float": R.standard_normal(6).astype(np.float32),
    "double": R.standard_normal(6),
    "string": np.array(
        [["", "a", "ab", "abc"], ["abcd", "abcde", "h\xe9llo w\xf6rld", "x" * 37]], dtype=object
    ),
    "empty": np.array([], dtype=object),
}


@pytest.mark.parametrize("name", list(INPUTS))
@pytest.mark.parametrize("positive,seed", [(1, 0), (0, 0), (1, 42), (0, -3), (1, 2**32 - 1)])
def test_against_onnxruntime(name, positive, seed):
    out = TensorProto.UINT32 if positive else TensorProto.INT32
    assert_equal_outputs(*both("MurmurHash3", [INPUTS[name]], [out], positive=positive, seed=seed))


def test_reference_values():
    # MurmurHash3_x86_32's published test vectors
    assert hash_bytes([b""], 0)[0] == 0
    assert hash_bytes([b""], 1)[0] == 0x514E28B7
    assert hash_bytes([b"\xff\xff\xff\xff"], 0)[0] == 0x76293B50
    assert hash_bytes([b"!Ce\x87"], 0)[0] == 0xF55B516B
    assert hash_bytes([b"Hello, world!"], 1234)[0] == 0xFAF6CDB3


def test_bad_input_type():
    with pytest.raises(OnyxError, match="unsupported input element type"):
        run_onyx("MurmurHash3", [np.zeros(2, np.int8)], [TensorProto.UINT32])
