"""Small ONNX models and a Triton-style repository for the serving tests, built with onyx's GraphBuilder."""

from __future__ import annotations

import os

import ml_dtypes
import numpy as np

from onyx.ir.builder import GraphBuilder
from onyx.model_io import save

MAX_BODY = 1 << 20  # the test server's body limit: small, so that the 413 test needs only a 2 MiB body


def add_sub(offset: float = 0.0):
    """Triton's classic 'simple' model: sum = x + y (+ offset), diff = x - y, float32 [N, 4]."""
    b = GraphBuilder(opset=17)
    x = b.input("INPUT0", np.float32, ["N", 4])
    y = b.input("INPUT1", np.float32, ["N", 4])
    s = b.Add(x, y)
    if offset:
        s = b.Add(s, b.const(np.array(offset, np.float32)))
    b.output(s, "OUTPUT0", np.float32, ["N", 4])
    b.output(b.Sub(x, y), "OUTPUT1", np.float32, ["N", 4])
    return b.model()


def integers():
    """int32 [N, 3] -> int64 [N, 3] = 2 * x + 1 (no config.pbtxt: the config is inferred)."""
    b = GraphBuilder(opset=17)
    x = b.input("x", np.int32, ["N", 3])
    y = b.Add(b.Mul(b.Cast(x, to=7), b.const(np.array(2, np.int64))), b.const(np.array(1, np.int64)))
    b.output(y, "y", np.int64, ["N", 3])
    return b.model()


def strings():
    """string [N] -> upper-cased string [N] and the length of the batch as int64 [N]."""
    b = GraphBuilder(opset=17)
    s = b.input("text", "STRING", ["N"])
    b.output(b.StringNormalizer(s, case_change_action="UPPER"), "upper", "STRING", ["N"])
    return b.model()


def fixed():
    """float64 [2, 3] -> float64 [3, 2]: a static shape, max_batch_size 0."""
    b = GraphBuilder(opset=17)
    x = b.input("x", np.float64, [2, 3])
    b.output(b.Transpose(b.Mul(x, b.const(np.array(3.0))), perm=[1, 0]), "t", np.float64, [3, 2])
    return b.model()


def mixed():
    """FP16, BOOL, UINT8 and BF16 inputs, each mapped to an output of its own type."""
    b = GraphBuilder(opset=17)
    h = b.input("h", np.float16, ["N", 2])
    flag = b.input("flag", np.bool_, ["N", 2])
    u = b.input("u", np.uint8, ["N", 2])
    bf = b.input("bf", ml_dtypes.bfloat16, ["N", 2])
    b.output(b.Mul(h, b.const(np.array(2, np.float16))), "h2", np.float16, ["N", 2])
    b.output(b.Not(flag), "not_flag", np.bool_, ["N", 2])
    b.output(b.Add(u, b.const(np.array(1, np.uint8))), "u1", np.uint8, ["N", 2])
    b.output(b.Identity(bf), "bf_out", ml_dtypes.bfloat16, ["N", 2])
    return b.model()


def fails():
    """float32 [N] reshaped to [3]: runs for 3 elements, fails in the model for any other count."""
    b = GraphBuilder(opset=17)
    x = b.input("x", np.float32, ["N"])
    b.output(b.Reshape(x, b.const(np.array([3], np.int64))), "y", np.float32, [3])
    return b.model()


def scale():
    """float32 [N, 4] -> [N, 4] * 2: the model of the batching tests."""
    b = GraphBuilder(opset=17)
    x = b.input("x", np.float32, ["N", 4])
    b.output(b.Mul(x, b.const(np.array(2, np.float32))), "y", np.float32, ["N", 4])
    return b.model()


# batches of exactly 8 rows whatever the timing: the queue delay (60 s) never expires in a test
BATCHED_CONFIG = """
name: "batched"
platform: "onnxruntime_onnx"
max_batch_size: 8
input [ { name: "x" data_type: TYPE_FP32 dims: [ 4 ] } ]
output [ { name: "y" data_type: TYPE_FP32 dims: [ 4 ] } ]
dynamic_batching { max_queue_delay_microseconds: 60000000 }
instance_group [ { count: 2 kind: KIND_CPU } ]
"""

SIMPLE_CONFIG = """
# Triton's model configuration, as it would be written for onnxruntime
name: "simple"
platform: "onnxruntime_onnx"
max_batch_size: 8
version_policy: { all { } }
input [
  {
    name: "INPUT0"
    data_type: TYPE_FP32
    dims: [ 4 ]
  },
  {
    name: "INPUT1"
    data_type: TYPE_FP32
    dims: [ 4 ]
  }
]
output [
  {
    name: "OUTPUT0"
    data_type: TYPE_FP32
    dims: [ 4 ]
  },
  {
    name: "OUTPUT1"
    data_type: TYPE_FP32
    dims: [ 4 ]
  }
]
dynamic_batching {
  preferred_batch_size: [ 4, 8 ]
  max_queue_delay_microseconds: 100
}
instance_group [
  {
    count: 2
    kind: KIND_CPU
  }
]
parameters { key: "intra_op_thread_count" value: { string_value: "1" } }
optimization { execution_accelerators { cpu_execution_accelerator : [ { name : "openvino" } ] } }
"""

STRINGS_CONFIG = """
name: "strings"
backend: "onnxruntime"
max_batch_size: 16
input [ { name: "text", data_type: TYPE_STRING, dims: [ ] } ]
output [ { name: "upper", data_type: TYPE_STRING, dims: [ ] } ]
version_policy: { latest { num_versions: 1 } }
"""


def write_repository(root: str) -> str:
    """simple (versions 1 and 2, config.pbtxt), strings and batched (config.pbtxt); integers, fixed,
    mixed and fails (configs inferred)."""

    def put(name: str, version: int, model, config: str | None = None) -> None:
        d = os.path.join(root, name, str(version))
        os.makedirs(d, exist_ok=True)
        save(model, os.path.join(d, "model.onnx"))
        if config is not None:
            with open(os.path.join(root, name, "config.pbtxt"), "w") as f:
                f.write(config)

    put("simple", 1, add_sub(), SIMPLE_CONFIG)
    put("simple", 2, add_sub(offset=100.0))
    put("integers", 1, integers())
    put("strings", 1, strings(), STRINGS_CONFIG)
    put("fixed", 1, fixed())
    put("mixed", 1, mixed())
    put("fails", 1, fails())
    put("batched", 1, scale(), BATCHED_CONFIG)
    return root
