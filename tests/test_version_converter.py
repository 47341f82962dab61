"""onyx.version_converter: converted models give onnxruntime's outputs of the original, pass
onnx.checker.check_model(full_check=True), and refusals name the node and why."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

import numpy as np
import onnx
import onnxruntime as ort
import pytest
from onnx import TensorProto as TP
from onnx import helper as h
from onnx import numpy_helper as nh

import onyx
from onyx.errors import InvalidArgument
from onyx.errors import NotImplemented as OnyxNotImplemented
from onyx.version_converter import convert, convert_version

F = TP.FLOAT


def vi(name: str, shape, elem: int = F) -> onnx.ValueInfoProto:
    return h.make_tensor_value_info(name, elem, shape)


def init(name: str, array) -> onnx.TensorProto:
    return nh.from_array(np.asarray(array), name)


def make(nodes, inputs, outputs, opset: int, inits=(), ir: int | None = None) -> onnx.ModelProto:
    g = h.make_graph(nodes, "g", inputs, outputs, list(inits))
    m = h.make_model(g, opset_imports=[h.make_opsetid("", opset)])
    m.ir_version = ir or max(onyx.checker.min_ir_version(opset), 7)
    return m


@dataclass
class Case:
    """A model at ``opset`` and the opsets it must convert to (each compared with the original)."""

    name: str
    opset: int
    build: Callable[[], onnx.ModelProto]
    targets: tuple[int, ...]
    atol: float = 1e-6
    check_original: bool = True  # onnx's checker refuses deprecated operators (GroupNormalization-18)


def _x(shape, out_shape=None, ops=None):
    return [vi("x", shape)], [vi("y", out_shape)]


def c_squeeze_reduce(opset):
    return lambda: make(
        [
            h.make_node("Squeeze", ["x"], ["s"], axes=[2]),
            h.make_node("Unsqueeze", ["s"], ["u"], axes=[0]),
            h.make_node("ReduceSum", ["u"], ["r"], axes=[2], keepdims=0),
            h.make_node("ReduceMean", ["r"], ["y"], axes=[-1], keepdims=1),
        ],
        [vi("x", [2, 3, 1, 4])],
        [vi("y", [1, 2, 1])],
        opset,
    )


def c_squeeze_inputs(opset):
    return lambda: make(
        [
            h.make_node("Squeeze", ["x", "ax"], ["s"]),
            h.make_node("Unsqueeze", ["s", "ax0"], ["u"]),
            h.make_node("ReduceMax", ["u", "ax0"], ["y"], keepdims=0),
        ],
        [vi("x", [2, 1, 4])],
        [vi("y", [2, 4])],
        opset,
        [init("ax", np.array([1], np.int64)), init("ax0", np.array([0], np.int64))],
    )


def c_reduce_noop():
    return make(
        [h.make_node("ReduceL2", ["x"], ["y"], noop_with_empty_axes=1)],
        [vi("x", [2, 3])],
        [vi("y", [2, 3])],
        18,
    )


def c_slice_attrs():
    return make(
        [h.make_node("Slice", ["x"], ["y"], starts=[1, 0], ends=[3, 100], axes=[0, 2])],
        [vi("x", [4, 3, 5])],
        [vi("y", [2, 3, 5])],
        9,
    )


def c_slice_inputs():
    return make(
        [h.make_node("Slice", ["x", "st", "en", "ax"], ["y"])],
        [vi("x", [4, 3, 5])],
        [vi("y", [2, 3, 2])],
        13,
        [
            init("st", np.array([1, 1], np.int64)),
            init("en", np.array([3, 3], np.int64)),
            init("ax", np.array([0, -1], np.int64)),
        ],
    )


def c_pad_attrs():
    return make(
        [h.make_node("Pad", ["x"], ["y"], pads=[0, 1, 2, 0, 2, 1], value=1.5)],
        [vi("x", [2, 3, 4])],
        [vi("y", [2, 6, 7])],
        10,
    )


def c_pad_axes():
    return make(
        [h.make_node("Pad", ["x", "p", "v", "ax"], ["y"])],
        [vi("x", [2, 3, 4])],
        [vi("y", [2, 6, 4])],
        18,
        [
            init("p", np.array([1, 2], np.int64)),
            init("v", np.array(-2.0, np.float32)),
            init("ax", np.array([1], np.int64)),
        ],
    )


def c_clip_attrs():
    return make(
        [h.make_node("Clip", ["x"], ["y"], min=0.2, max=0.7)], [vi("x", [3, 4])], [vi("y", [3, 4])], 10
    )


def c_clip_inputs():
    return make(
        [
            h.make_node("Constant", [], ["lo"], value=init("lo", np.array(0.25, np.float32))),
            h.make_node("Clip", ["x", "lo", ""], ["y"]),
        ],
        [vi("x", [3, 4])],
        [vi("y", [3, 4])],
        13,
    )


def c_split_attr():
    return make(
        [h.make_node("Split", ["x"], ["a", "b"], axis=1, split=[1, 3])],
        [vi("x", [2, 4])],
        [vi("a", [2, 1]), vi("b", [2, 3])],
        11,
    )


def c_split_uneven():
    return make(
        [h.make_node("Split", ["x"], ["a", "b", "c"], axis=1, num_outputs=3)],
        [vi("x", [2, 7])],
        [vi("a", [2, 3]), vi("b", [2, 3]), vi("c", [2, 1])],
        18,
    )


def c_split_even():
    return make(
        [h.make_node("Split", ["x"], ["a", "b"], axis=0)],
        [vi("x", [4, 3])],
        [vi("a", [2, 3]), vi("b", [2, 3])],
        13,
    )


def c_topk():
    return make(
        [h.make_node("TopK", ["x"], ["v", "i"], k=2, axis=1)],
        [vi("x", [3, 5])],
        [vi("v", [3, 2]), vi("i", [3, 2], TP.INT64)],
        9,
    )


def c_topk_input():
    return make(
        [h.make_node("TopK", ["x", "k"], ["v", "i"], axis=-1)],
        [vi("x", [3, 5])],
        [vi("v", [3, 3]), vi("i", [3, 3], TP.INT64)],
        11,
        [init("k", np.array([3], np.int64))],
    )


def c_dropout():
    return make([h.make_node("Dropout", ["x"], ["y"], ratio=0.3)], [vi("x", [3, 4])], [vi("y", [3, 4])], 11)


def c_dropout_inputs():
    return make(
        [h.make_node("Dropout", ["x", "r"], ["y"])],
        [vi("x", [3, 4])],
        [vi("y", [3, 4])],
        13,
        [init("r", np.array(0.2, np.float32))],
    )


def c_softmax(op, axis, opset):
    def build():
        return make(
            [h.make_node(op, ["x"], ["y"], axis=axis)], [vi("x", [2, 3, 4])], [vi("y", [2, 3, 4])], opset
        )

    return build


def c_softmax_symbolic():
    return make(
        [h.make_node("Softmax", ["x"], ["y"])], [vi("x", ["a", "b", "c"])], [vi("y", ["a", "b", "c"])], 11
    )


def c_batchnorm(opset):
    def build():
        c = 3
        return make(
            [h.make_node("BatchNormalization", ["x", "s", "b", "m", "v"], ["y"], epsilon=1e-3)],
            [vi("x", [2, c, 4, 4])],
            [vi("y", [2, c, 4, 4])],
            opset,
            [
                init("s", np.linspace(0.5, 1.5, c).astype(np.float32)),
                init("b", np.full(c, 0.1, np.float32)),
                init("m", np.full(c, 0.2, np.float32)),
                init("v", np.linspace(1, 2, c).astype(np.float32)),
            ],
        )

    return build


def c_groupnorm(opset, uniform):
    def build():
        if opset < 21:
            scale, bias = np.array([0.5, 2.0], np.float32), np.array([0.1, -0.3], np.float32)
        elif uniform:
            scale = np.array([0.5, 0.5, 2.0, 2.0], np.float32)
            bias = np.array([0.1, 0.1, -0.3, -0.3], np.float32)
        else:
            scale, bias = np.linspace(0.5, 2, 4).astype(np.float32), np.linspace(-1, 1, 4).astype(np.float32)
        return make(
            [h.make_node("GroupNormalization", ["x", "s", "b"], ["y"], num_groups=2, epsilon=1e-4)],
            [vi("x", [2, 4, 3, 3])],
            [vi("y", [2, 4, 3, 3])],
            opset,
            [init("s", scale), init("b", bias)],
        )

    return build


def c_layernorm(axis, with_bias=True):
    def build():
        ins = ["x", "s", "b"] if with_bias else ["x", "s"]
        inits = [init("s", np.linspace(0.5, 1.5, 12).astype(np.float32).reshape(3, 4))]
        if with_bias:
            inits.append(init("b", np.linspace(-1, 1, 12).astype(np.float32).reshape(3, 4)))
        return make(
            [h.make_node("LayerNormalization", ins, ["y"], axis=axis, epsilon=1e-5)],
            [vi("x", [2, 3, 4])],
            [vi("y", [2, 3, 4])],
            17,
            inits,
        )

    return build


def c_unary(op, opset, **attrs):
    return lambda: make([h.make_node(op, ["x"], ["y"], **attrs)], [vi("x", [3, 5])], [vi("y", [3, 5])], opset)


def c_upsample(opset):
    def build():
        if opset < 9:
            node = h.make_node("Upsample", ["x"], ["y"], scales=[1.0, 1.0, 2.0, 3.0], mode="nearest")
            return make([node], [vi("x", [1, 2, 3, 3])], [vi("y", [1, 2, 6, 9])], opset)
        return make(
            [h.make_node("Upsample", ["x", "sc"], ["y"], mode="nearest")],
            [vi("x", [1, 2, 3, 3])],
            [vi("y", [1, 2, 6, 9])],
            opset,
            [init("sc", np.array([1, 1, 2, 3], np.float32))],
        )

    return build


def c_resize(opset, mode="nearest", shrink=False):
    def build():
        sc = np.array([1, 1, 0.5, 0.5] if shrink else [1, 1, 2, 1.5], np.float32)
        out = [1, 2, 3, 3] if shrink else [1, 2, 12, 9]
        ins, inits = (["x", "sc"], [init("sc", sc)])
        attrs = {"mode": mode}
        if opset >= 11:
            ins = ["x", "roi", "sc"]
            inits.append(init("roi", np.zeros(0, np.float32)))
            attrs.update(coordinate_transformation_mode="asymmetric")
            if mode == "nearest":
                attrs["nearest_mode"] = "ceil" if shrink else "floor"
        return make(
            [h.make_node("Resize", ins, ["y"], **attrs)],
            [vi("x", [1, 2, 6, 6])],
            [vi("y", out)],
            opset,
            inits,
        )

    return build


def c_resize_sizes():
    return make(
        [
            h.make_node(
                "Resize",
                ["x", "", "", "sz"],
                ["y"],
                mode="linear",
                coordinate_transformation_mode="asymmetric",
            )
        ],
        [vi("x", [1, 2, 4, 4])],
        [vi("y", [1, 2, 8, 6])],
        13,
        [init("sz", np.array([1, 2, 8, 6], np.int64))],
    )


def c_cast():
    return make(
        [h.make_node("Cast", ["x"], ["y"], to=TP.INT32, saturate=1)],
        [vi("x", [3, 4])],
        [vi("y", [3, 4], TP.INT32)],
        19,
    )


def c_qdq():
    return make(
        [
            h.make_node("QuantizeLinear", ["x", "sc", "zp"], ["q"], axis=1),
            h.make_node("DequantizeLinear", ["q", "sc", "zp"], ["y"]),
        ],
        [vi("x", [3, 4])],
        [vi("y", [3, 4])],
        13,
        [init("sc", np.array(0.02, np.float32)), init("zp", np.array(3, np.uint8))],
    )


def c_max_equal():
    return make(
        [h.make_node("Max", ["x", "z"], ["y"])], [vi("x", [3, 4]), vi("z", [3, 4])], [vi("y", [3, 4])], 8
    )


def c_max_broadcast():
    return make(
        [h.make_node("Max", ["x", "z"], ["y"])], [vi("x", [3, 4]), vi("z", [4])], [vi("y", [3, 4])], 8
    )


def c_constant_ints():
    return make(
        [
            h.make_node("Constant", [], ["shape"], value_ints=[4, 3]),
            h.make_node("Reshape", ["x", "shape"], ["y"]),
        ],
        [vi("x", [3, 4])],
        [vi("y", [4, 3])],
        12,
    )


def c_if_body(opset):
    def build():
        axes = {} if opset >= 13 else {"axes": [0]}
        ins = ["x", "a"] if opset >= 13 else ["x"]
        then = h.make_graph([h.make_node("Unsqueeze", ins, ["t"], **axes)], "then", [], [vi("t", [1, 3])])
        other = h.make_graph(
            [h.make_node("Unsqueeze", ins, ["e0"], **axes), h.make_node("Neg", ["e0"], ["e"])],
            "else",
            [],
            [vi("e", [1, 3])],
        )
        inits = [init("a", np.array([0], np.int64))] if opset >= 13 else []
        return make(
            [
                h.make_node("ReduceSum", ["x"], ["s"], keepdims=0)
                if opset < 13
                else h.make_node("ReduceSum", ["x"], ["s"], keepdims=0),
                h.make_node("Greater", ["s", "zero"], ["c"]),
                h.make_node("If", ["c"], ["y"], then_branch=then, else_branch=other),
            ],
            [vi("x", [3])],
            [vi("y", [1, 3])],
            opset,
            [init("zero", np.array(0, np.float32)), *inits],
        )

    return build


def c_loop_body():
    body = h.make_graph(
        [
            h.make_node("Identity", ["cond_in"], ["cond_out"]),
            h.make_node("Unsqueeze", ["acc_in"], ["u"], axes=[0]),
            h.make_node("ReduceSum", ["u"], ["acc_out"], axes=[0], keepdims=0),
            h.make_node("Add", ["acc_out", "one"], ["scan_out"]),
        ],
        "body",
        [vi("i", [], TP.INT64), vi("cond_in", [], TP.BOOL), vi("acc_in", [3])],
        [vi("cond_out", [], TP.BOOL), vi("acc_out", [3]), vi("scan_out", [3])],
    )
    return make(
        [h.make_node("Loop", ["n", "", "x"], ["y", "ys"], body=body)],
        [vi("x", [3])],
        [vi("y", [3]), vi("ys", [2, 3])],
        11,
        [init("n", np.array(2, np.int64)), init("one", np.array(1, np.float32))],
    )


def c_scatter():
    return make(
        [h.make_node("Scatter", ["x", "i", "u"], ["y"], axis=1)],
        [vi("x", [2, 4])],
        [vi("y", [2, 4])],
        9,
        [init("i", np.array([[1, 3], [0, 2]], np.int64)), init("u", np.ones((2, 2), np.float32))],
    )


def c_plain(opset):
    """Ops that change only in their types across opsets."""

    def build():
        return make(
            [
                h.make_node("MatMul", ["x", "w"], ["m"]),
                h.make_node("Add", ["m", "b"], ["a"]),
                h.make_node("Relu", ["a"], ["r"]),
                h.make_node("Sigmoid", ["r"], ["s"]),
                h.make_node("Concat", ["s", "r"], ["c"], axis=1),
                h.make_node("Flatten", ["c"], ["f"], axis=1),
                h.make_node("Transpose", ["f"], ["t"], perm=[1, 0]),
                h.make_node("Identity", ["t"], ["y"]),
            ],
            [vi("x", [2, 3])],
            [vi("y", [8, 2])],
            opset,
            [
                init("w", np.linspace(-1, 1, 12).astype(np.float32).reshape(3, 4)),
                init("b", np.linspace(0, 1, 4).astype(np.float32)),
            ],
        )

    return build


def c_negative_axes():
    return make(
        [
            h.make_node("Unsqueeze", ["x"], ["u"], axes=[-1]),
            h.make_node("Squeeze", ["u"], ["s"], axes=[-1]),
            h.make_node("Concat", ["s", "s"], ["c"], axis=-1),
            h.make_node("ReduceMax", ["c"], ["r"], axes=[-2], keepdims=1),
            h.make_node("Gather", ["c", "idx"], ["g"], axis=-1),
            h.make_node("ArgMax", ["g"], ["y"], axis=-1, keepdims=0),
        ],
        [vi("x", [2, 3])],
        [vi("y", [2], TP.INT64), vi("r", [1, 6])],
        11,
        [init("idx", np.array([0, 4, 5], np.int64))],
    )


def c_shape_slice():
    return make(
        [h.make_node("Shape", ["x"], ["s"], start=1, end=-1), h.make_node("Cast", ["s"], ["y"], to=F)],
        [vi("x", [2, 3, 4, 5])],
        [vi("y", [2])],
        15,
    )


def c_rms_norm(stash_fp16=False):
    def build():
        return make(
            [h.make_node("RMSNormalization", ["x", "s"], ["y"], axis=-1, epsilon=1e-5)],
            [vi("x", [2, 3, 4])],
            [vi("y", [2, 3, 4])],
            23,
            [init("s", np.linspace(0.5, 1.5, 4).astype(np.float32))],
        )

    return build


def c_layernorm_fp16():
    return make(
        [
            h.make_node("Cast", ["x"], ["xh"], to=TP.FLOAT16),
            h.make_node("LayerNormalization", ["xh", "s"], ["yh"], axis=-1, epsilon=1e-5),
            h.make_node("Cast", ["yh"], ["y"], to=F),
        ],
        [vi("x", [2, 3, 8])],
        [vi("y", [2, 3, 8])],
        17,
        [init("s", np.linspace(0.5, 1.5, 8).astype(np.float16))],
    )


def c_dft(opset):
    def build():
        if opset < 20:
            node = h.make_node("DFT", ["x"], ["y"], onesided=0)  # axis 1 by default
            return make([node], [vi("x", [2, 5, 1])], [vi("y", [2, 5, 2])], opset)
        node = h.make_node("DFT", ["x", "", "ax"], ["y"])
        return make(
            [node], [vi("x", [2, 5, 1])], [vi("y", [2, 5, 2])], opset, [init("ax", np.array(1, np.int64))]
        )

    return build


def c_gemm_no_c():
    return make(
        [h.make_node("Gemm", ["x", "w"], ["y"], transB=1, alpha=0.5)],
        [vi("x", [2, 3])],
        [vi("y", [2, 4])],
        13,
        [init("w", np.linspace(-1, 1, 12).astype(np.float32).reshape(4, 3))],
    )


def c_roi_align(opset):
    def build():
        attrs = {"output_height": 2, "output_width": 2, "sampling_ratio": 2, "spatial_scale": 1.0}
        if opset >= 16:
            attrs["coordinate_transformation_mode"] = "output_half_pixel"
        return make(
            [h.make_node("RoiAlign", ["x", "rois", "bi"], ["y"], **attrs)],
            [vi("x", [1, 2, 6, 6])],
            [vi("y", [2, 2, 2, 2])],
            opset,
            [
                init("rois", np.array([[0, 0, 3, 3], [1, 1.5, 5, 4.5]], np.float32)),
                init("bi", np.array([0, 0], np.int64)),
            ],
        )

    return build


def c_cast_like(opset):
    def build():
        return make(
            [h.make_node("CastLike", ["x", "like"], ["y"])],
            [vi("x", [3, 4])],
            [vi("y", [3, 4], TP.INT32)],
            opset,
            [init("like", np.zeros(1, np.int32))],
        )

    return build


def c_resize_axes():
    return make(
        [h.make_node("Resize", ["x", "", "sc"], ["y"], mode="linear", axes=[2, 3])],
        [vi("x", [1, 2, 4, 4])],
        [vi("y", [1, 2, 8, 6])],
        18,
        [init("sc", np.array([2, 1.5], np.float32))],
    )


def c_upsample_scales_input():
    return make(
        [h.make_node("Upsample", ["x", "sc"], ["y"], mode="nearest")],
        [vi("x", [1, 1, 2, 3]), vi("sc", [4])],
        [vi("y", None)],
        9,
    )


def c_trilu(upper):
    def build():
        return make(
            [h.make_node("Trilu", ["x", "k"], ["y"], upper=upper)],
            [vi("x", [2, 3, 4])],
            [vi("y", [2, 3, 4])],
            14,
            [init("k", np.array(-1 if upper else 1, np.int64))],
        )

    return build


def c_attention(kind):
    """Attention-23: 4-D MHA causal with past key/value; 3-D GQA with a boolean mask; softcap + float mask."""

    def build():
        rng = np.random.default_rng(1)
        if kind == "4d_causal_past":
            node = h.make_node("Attention", ["q", "k", "v", "", "pk", "pv"], ["y", "present_k", "present_v"],
                               is_causal=1)  # fmt: skip
            ins = [vi("q", [2, 3, 4, 8]), vi("k", [2, 3, 4, 8]), vi("v", [2, 3, 4, 8])]
            outs = [vi("y", [2, 3, 4, 8]), vi("present_k", [2, 3, 6, 8]), vi("present_v", [2, 3, 6, 8])]
            inits = [init("pk", rng.standard_normal((2, 3, 2, 8)).astype(np.float32)),
                     init("pv", rng.standard_normal((2, 3, 2, 8)).astype(np.float32))]  # fmt: skip
        elif kind == "3d_gqa_bool_mask":
            mask = rng.random((4, 5)) > 0.3
            mask[1] = False  # a row masked everywhere gives zeros
            node = h.make_node("Attention", ["q", "k", "v", "m"], ["y"], q_num_heads=4, kv_num_heads=2)
            ins = [vi("q", [2, 4, 16]), vi("k", [2, 5, 8]), vi("v", [2, 5, 8])]
            outs, inits = [vi("y", [2, 4, 16])], [init("m", mask)]
        else:
            node = h.make_node("Attention", ["q", "k", "v", "m"], ["y"], softcap=2.0, scale=0.3)
            ins = [vi("q", [1, 2, 3, 4]), vi("k", [1, 2, 5, 4]), vi("v", [1, 2, 5, 6])]
            outs = [vi("y", [1, 2, 3, 6])]
            inits = [init("m", rng.standard_normal((3, 5)).astype(np.float32))]
        return make([node], ins, outs, 23, inits)

    return build


def c_rotary(rank, interleaved, partial, positions):
    """RotaryEmbedding-23: 3-D or 4-D input, halves or interleaved, full or partial, with position ids."""

    def build():
        rng = np.random.default_rng(2)
        dim = 4 if partial else 8
        attrs = {"interleaved": interleaved, "rotary_embedding_dim": dim if partial else 0}
        shape = [2, 3, 5, 8] if rank == 4 else [2, 5, 24]
        if rank == 3:
            attrs["num_heads"] = 3
        cache_shape = (7, dim // 2) if positions else (2, 5, dim // 2)
        angles = rng.uniform(0, 3, cache_shape)
        inits = [
            init("cos", np.cos(angles).astype(np.float32)),
            init("sin", np.sin(angles).astype(np.float32)),
        ]
        ins = ["x", "cos", "sin"]
        if positions:
            inits.append(init("pos", rng.integers(0, 7, (2, 5)).astype(np.int64)))
            ins.append("pos")
        node = h.make_node("RotaryEmbedding", ins, ["y"], **attrs)
        return make([node], [vi("x", shape)], [vi("y", shape)], 23, inits)

    return build


CASES = [
    Case("squeeze_reduce_attr", 11, c_squeeze_reduce(11), (13, 18, 21)),
    Case("squeeze_reduce_input", 18, c_squeeze_inputs(18), (11, 13, 21)),
    Case("reduce_noop_empty_axes", 18, c_reduce_noop, (13, 17)),
    Case("slice_attrs", 9, c_slice_attrs, (10, 13, 21)),
    Case("slice_inputs", 13, c_slice_inputs, (9, 11, 21)),
    Case("pad_attrs", 10, c_pad_attrs, (11, 18, 21)),
    Case("pad_axes_input", 18, c_pad_axes, (10, 13, 21)),
    Case("clip_attrs", 10, c_clip_attrs, (11, 13, 21)),
    Case("clip_constant_node", 13, c_clip_inputs, (7, 11, 21)),
    Case("split_attr", 11, c_split_attr, (13, 18, 21)),
    Case("split_uneven_num_outputs", 18, c_split_uneven, (11, 13)),
    Case("split_even", 13, c_split_even, (11, 18, 21)),
    Case("topk_attr", 9, c_topk, (10, 11, 21)),
    Case("topk_input", 11, c_topk_input, (10, 21)),
    Case("dropout_attr", 11, c_dropout, (12, 13, 21)),
    Case("dropout_inputs", 13, c_dropout_inputs, (7, 11)),
    Case("softmax_axis1_up", 11, c_softmax("Softmax", 1, 11), (13, 21)),
    Case("logsoftmax_last_up", 11, c_softmax("LogSoftmax", 2, 11), (13, 21)),
    Case("hardmax_axis0_up", 11, c_softmax("Hardmax", 0, 11), (13,)),
    Case("softmax_axis1_down", 13, c_softmax("Softmax", 1, 13), (11, 7)),
    Case("logsoftmax_neg_down", 13, c_softmax("LogSoftmax", -2, 13), (12, 9)),
    Case("softmax_symbolic_dims", 11, c_softmax_symbolic, (13, 18)),
    Case("batchnorm_7", 7, c_batchnorm(7), (9, 14, 15, 21)),
    Case("batchnorm_15", 15, c_batchnorm(15), (7, 9, 13)),
    Case("groupnorm_18_up", 18, c_groupnorm(18, True), (21,), check_original=False),
    Case("groupnorm_18_down", 18, c_groupnorm(18, True), (13, 17), atol=1e-5, check_original=False),
    Case("groupnorm_21_uniform", 21, c_groupnorm(21, True), (18,), atol=1e-5),
    Case("groupnorm_21_channels", 21, c_groupnorm(21, False), (20, 13), atol=1e-5),
    Case("layernorm_last", 17, c_layernorm(-1), (13, 11), atol=1e-5),
    Case("layernorm_axis1_nobias", 17, c_layernorm(1, False), (16, 9), atol=1e-5),
    Case("gelu", 20, c_unary("Gelu", 20), (13, 11), atol=1e-6),
    Case("gelu_tanh", 20, c_unary("Gelu", 20, approximate="tanh"), (13,), atol=1e-6),
    Case("hardswish", 14, c_unary("HardSwish", 14), (13, 7)),
    Case("mish", 18, c_unary("Mish", 18), (13,), atol=1e-6),
    Case("celu", 12, c_unary("Celu", 12, alpha=0.7), (11, 9), atol=1e-6),
    Case("upsample_7", 7, c_upsample(7), (9, 10, 11, 13, 19)),
    Case("upsample_9", 9, c_upsample(9), (7, 10, 13, 18)),
    Case("resize_10_linear", 10, c_resize(10, "linear"), (9, 11, 13, 19)),
    Case("resize_11_nearest", 11, c_resize(11), (9, 10, 13, 18)),
    Case("resize_11_shrink", 11, c_resize(11, shrink=True), (10, 13)),
    Case("resize_13_sizes", 13, c_resize_sizes, (10, 11, 19)),
    Case("cast_saturate", 19, c_cast, (13, 7)),
    Case("qdq_per_tensor", 13, c_qdq, (10, 19, 21)),
    Case("max_equal_shapes", 8, c_max_equal, (7, 13)),
    Case("constant_value_ints", 12, c_constant_ints, (11, 9, 21)),
    Case("if_branches_11", 11, c_if_body(11), (13, 21)),
    Case("if_branches_13", 13, c_if_body(13), (11,)),
    Case("loop_body", 11, c_loop_body, (13, 18, 21)),
    Case("scatter", 9, c_scatter, (11, 13)),
    Case("plain_13", 13, c_plain(13), (7, 11, 18, 21)),
    Case("plain_7", 7, c_plain(7), (13, 18, 21, 23)),
    Case("dft_17", 17, c_dft(17), (20, 21)),
    Case("cast_like_15", 15, c_cast_like(15), (13, 7, 21)),
    Case("trilu_upper", 14, c_trilu(1), (13, 9)),
    Case("trilu_lower", 14, c_trilu(0), (13,)),
    Case("cast_like_21", 21, c_cast_like(21), (13, 19)),
    Case("resize_18_axes", 18, c_resize_axes, (13, 11)),
    Case("dft_20", 20, c_dft(20), (17,)),
    Case("gemm_without_c", 13, c_gemm_no_c, (10, 7)),
    Case("roi_align_10", 10, c_roi_align(10), (16, 21)),
    Case("roi_align_16", 16, c_roi_align(16), (10, 13)),
    Case("negative_axes", 11, c_negative_axes, (10, 7, 13, 18)),
    Case("shape_start_end", 15, c_shape_slice, (14, 13, 9, 21)),
    Case("rms_norm", 23, c_rms_norm(), (13, 18, 21), atol=1e-5),
    Case("attention_4d_causal_past", 23, c_attention("4d_causal_past"), (21, 13), atol=1e-5),
    Case("attention_3d_gqa_bool_mask", 23, c_attention("3d_gqa_bool_mask"), (18, 13), atol=1e-5),
    Case("attention_softcap_float_mask", 23, c_attention("softcap"), (13,), atol=1e-5),
    Case("rotary_4d_halves_positions", 23, c_rotary(4, 0, False, True), (21, 13), atol=1e-6),
    Case("rotary_3d_interleaved_partial", 23, c_rotary(3, 1, True, False), (18,), atol=1e-6),
    Case("rotary_4d_interleaved_positions", 23, c_rotary(4, 1, False, True), (13,), atol=1e-6),
    Case("rotary_3d_halves_partial_positions", 23, c_rotary(3, 0, True, True), (13,), atol=1e-6),
    # float16 LayerNormalization: statistics in float32 (stash_type=1) then cast back; rounding to
    # float16 at the end bounds the difference by one float16 ulp of |y| <= ~4
    Case("layernorm_fp16_stash", 17, c_layernorm_fp16, (13,), atol=4e-3),
]


def feeds_for(model: onnx.ModelProto, seed: int = 0) -> dict[str, np.ndarray]:
    rng = np.random.default_rng(seed)
    out = {}
    inits = {i.name for i in model.graph.initializer}
    for i in model.graph.input:
        if i.name in inits:
            continue
        t = i.type.tensor_type
        shape = (
            [d.dim_value if d.HasField("dim_value") else 2 for d in t.shape.dim]
            if t.HasField("shape")
            else [2, 3, 4]
        )
        dtype = onnx.helper.tensor_dtype_to_np_dtype(t.elem_type)
        out[i.name] = (rng.standard_normal(shape) * 2).astype(dtype)
    return out


def ort_run(model_bytes: bytes, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    so = ort.SessionOptions()
    so.graph_optimization_level = ort.GraphOptimizationLevel.ORT_DISABLE_ALL
    return ort.InferenceSession(model_bytes, so, providers=["CPUExecutionProvider"]).run(None, feeds)


def check_converted(original: onnx.ModelProto, converted_bytes: bytes, atol: float) -> None:
    """The converted bytes pass onnx's full check and give onnxruntime's outputs of the original."""
    onnx.checker.check_model(onnx.load_from_string(converted_bytes), full_check=True)
    feeds = feeds_for(original)
    want = ort_run(original.SerializeToString(), feeds)
    got = ort_run(converted_bytes, feeds)
    assert len(want) == len(got)
    for w, g in zip(want, got, strict=True):
        assert w.shape == g.shape and w.dtype == g.dtype
        np.testing.assert_allclose(g, w, rtol=1e-5, atol=atol)


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_converted_models_match_onnxruntime(case: Case) -> None:
    original = case.build()
    if case.check_original:
        onnx.checker.check_model(original, full_check=True)
    source = onyx.load_from_string(original.SerializeToString())
    for target in case.targets:
        result = convert(source, target)
        new = result.model
        assert new.opsets[""] == target
        assert new.ir_version >= onyx.checker.min_ir_version(target) or new.ir_version >= 4
        check_converted(original, onyx.serialize(new), case.atol)
    assert source.opsets[""] == case.opset  # the input model is left as it was


def _onyx(model: onnx.ModelProto) -> onyx.Model:
    return onyx.load_from_string(model.SerializeToString())


def test_reports_nodes_adapted_per_op_type() -> None:
    result = convert(_onyx(c_squeeze_reduce(11)()), 18)
    assert result.adapted == {"Squeeze": 1, "Unsqueeze": 1, "ReduceSum": 1, "ReduceMean": 1}
    assert (result.source, result.target) == (11, 18)
    assert convert(_onyx(c_plain(13)()), 14).adapted == {}  # Relu-14, Add-14: types only


def test_a_node_crossing_several_versions_counts_once() -> None:
    # LogSoftmax axis -2 from 13 to 9: rewritten at 13 (Transposes), its axis made positive at 11
    result = convert(_onyx(c_softmax("LogSoftmax", -2, 13)()), 9)
    assert result.adapted == {"LogSoftmax": 1}
    assert [n.op_type for n in result.model.graph.nodes] == ["Transpose", "LogSoftmax", "Transpose"]


def test_ir_version_follows_the_target_opset() -> None:
    m = _onyx(c_plain(13)())
    assert convert_version(m, 21).ir_version == 10
    assert convert_version(m, 23).ir_version == 11
    assert convert_version(m, 11).ir_version == 6
    assert convert_version(m, 13).opsets == {"": 13}


@pytest.mark.parametrize("target", [6, 0, -1, 29, 1000])
def test_target_opset_out_of_range(target: int) -> None:
    with pytest.raises(InvalidArgument, match="out of range"):
        convert_version(_onyx(c_plain(13)()), target)


@pytest.mark.parametrize("target", ["13", 13.0, None, True])
def test_target_opset_not_an_int(target) -> None:
    with pytest.raises(InvalidArgument, match="must be an int"):
        convert_version(_onyx(c_plain(13)()), target)


def test_not_a_model() -> None:
    with pytest.raises(InvalidArgument, match="onyx Model"):
        convert_version(c_plain(13)(), 11)


def test_computed_input_that_must_become_an_attribute_names_the_node() -> None:
    m = make(
        [
            h.make_node("Shape", ["x"], ["s"]),
            h.make_node("Slice", ["s", "st", "en"], ["sl"]),
            h.make_node("Squeeze", ["x", "sl"], ["y"], name="sq"),
        ],
        [vi("x", [2, 1, 3])],
        [vi("y", [2, 3])],
        13,
        [init("st", np.array([1], np.int64)), init("en", np.array([2], np.int64))],
    )
    with pytest.raises(OnyxNotImplemented, match=r'Squeeze node "sq".*axes.*computed at run time'):
        convert_version(_onyx(m), 11)


def test_graph_input_initializer_is_not_a_constant() -> None:
    # an initializer that is also a graph input can be overridden by a feed: it is not constant
    m = make(
        [h.make_node("Unsqueeze", ["x", "ax"], ["y"], name="unsq")],
        [vi("x", [3]), vi("ax", [1], TP.INT64)],
        [vi("y", [1, 3])],
        13,
        [init("ax", np.array([0], np.int64))],
    )
    with pytest.raises(OnyxNotImplemented, match='Unsqueeze node "unsq"'):
        convert_version(_onyx(m), 12)


def test_operator_missing_in_target_names_the_node() -> None:
    m = make(
        [h.make_node("Einsum", ["x", "x"], ["y"], equation="ij,jk->ik", name="ein")],
        [vi("x", [3, 3])],
        [vi("y", [3, 3])],
        12,
    )
    with pytest.raises(OnyxNotImplemented, match=r'Einsum node "ein".*does not exist in opset 11'):
        convert_version(_onyx(m), 11)
    m = make(
        [h.make_node("Trilu", ["x"], ["y"], name="tri")], [vi("x", ["a", "b"])], [vi("y", ["a", "b"])], 14
    )
    with pytest.raises(OnyxNotImplemented, match=r'Trilu node "tri".*last two dims must be known'):
        convert_version(_onyx(m), 13)


def test_types_not_allowed_in_target_are_refused() -> None:
    m = make(
        [h.make_node("Relu", ["x"], ["y"], name="r")], [vi("x", [3], TP.INT32)], [vi("y", [3], TP.INT32)], 14
    )
    with pytest.raises(OnyxNotImplemented, match=r'Relu node "r".*int32.*Relu-13 \(opset 13\)'):
        convert_version(_onyx(m), 13)
    m = make(
        [h.make_node("Cast", ["x"], ["y"], to=TP.BFLOAT16, name="c")],
        [vi("x", [3])],
        [vi("y", [3], TP.BFLOAT16)],
        13,
    )
    with pytest.raises(OnyxNotImplemented, match=r'Cast node "c".*bfloat16'):
        convert_version(_onyx(m), 12)


def test_attribute_without_equivalent_is_refused() -> None:
    m = make(
        [h.make_node("Pad", ["x", "p"], ["y"], mode="wrap", name="pw")],
        [vi("x", [2, 3])],
        [vi("y", [2, 5])],
        19,
        [init("p", np.array([0, 1, 0, 1], np.int64))],
    )
    with pytest.raises(OnyxNotImplemented, match=r'Pad node "pw".*wrap'):
        convert_version(_onyx(m), 18)
    m = make(
        [h.make_node("ArgMax", ["x"], ["y"], select_last_index=1, name="am")],
        [vi("x", [2, 3])],
        [vi("y", [1, 3], TP.INT64)],
        12,
    )
    with pytest.raises(OnyxNotImplemented, match=r'ArgMax node "am".*select_last_index'):
        convert_version(_onyx(m), 11)


def test_semantics_without_equivalent_are_refused() -> None:
    with pytest.raises(OnyxNotImplemented, match="shapes .* must all be known and equal"):
        convert_version(_onyx(c_max_broadcast()), 7)
    m = make(
        [h.make_node("Softmax", ["x"], ["y"], axis=0, name="sm")], [vi("x", [2, 3])], [vi("y", [2, 3])], 13
    )
    assert convert_version(_onyx(m), 12) is not None  # known rank: spelled out with Transposes
    m = make(
        [h.make_node("QuantizeLinear", ["x", "s"], ["y"], axis=0, name="q")],
        [vi("x", [2, 3])],
        [vi("y", [2, 3], TP.UINT8)],
        13,
        [init("s", np.array([0.1, 0.2], np.float32))],
    )
    with pytest.raises(OnyxNotImplemented, match=r'QuantizeLinear node "q".*per-axis'):
        convert_version(_onyx(m), 12)
    with pytest.raises(OnyxNotImplemented, match=r"Resize.*half_pixel"):
        convert_version(_half_pixel_resize(), 10)


def _half_pixel_resize() -> onyx.Model:
    m = make(
        [h.make_node("Resize", ["x", "roi", "sc"], ["y"], mode="linear")],
        [vi("x", [1, 1, 2, 2])],
        [vi("y", [1, 1, 4, 4])],
        11,
        [init("roi", np.zeros(0, np.float32)), init("sc", np.array([1, 1, 2, 2], np.float32))],
    )
    return _onyx(m)


def test_upsample_with_scales_fed_at_run_time() -> None:
    # Upsample's scales are >= 1, so the Resize it becomes rounds by floor even without knowing them
    original = c_upsample_scales_input()
    for target in (10, 13, 18):
        converted = onyx.serialize(convert_version(_onyx(original), target))
        feeds = {
            "x": np.arange(6, dtype=np.float32).reshape(1, 1, 2, 3),
            "sc": np.array([1, 1, 2, 3], np.float32),
        }
        np.testing.assert_array_equal(
            ort_run(converted, feeds)[0], ort_run(original.SerializeToString(), feeds)[0]
        )
    resize = make(
        [h.make_node("Resize", ["x", "sc"], ["y"], name="rs")],
        [vi("x", [1, 1, 2, 3]), vi("sc", [4])],
        [vi("y", None)],
        10,
    )
    with pytest.raises(OnyxNotImplemented, match=r'Resize node "rs".*constant scales'):
        convert_version(_onyx(resize), 11)


def test_non_tensor_kinds_are_checked() -> None:
    seq = h.make_tensor_sequence_value_info("s", F, None)
    m = make(
        [h.make_node("Identity", ["s"], ["y"], name="id")],
        [seq],
        [h.make_tensor_sequence_value_info("y", F, None)],
        16,
    )
    with pytest.raises(OnyxNotImplemented, match=r"Identity node \"id\": input 0 \('s'\) is a sequence"):
        convert_version(_onyx(m), 13)
    assert convert_version(_onyx(m), 14).opsets[""] == 14


def test_reshape_allowzero() -> None:
    def reshape(shape):
        return make(
            [h.make_node("Reshape", ["x", "s"], ["y"], allowzero=1, name="rz")],
            [vi("x", [2, 3])],
            [vi("y", [3, 2])],
            14,
            [init("s", np.array(shape, np.int64))],
        )

    check_converted(reshape([3, 2]), onyx.serialize(convert_version(_onyx(reshape([3, 2])), 13)), 0.0)
    with pytest.raises(OnyxNotImplemented, match=r'Reshape node "rz": allowzero=1'):
        convert_version(_onyx(reshape([3, 0, 2])), 13)


def test_mod_fmod0_on_floats_is_refused_below_28() -> None:
    m = make(
        [h.make_node("Mod", ["x", "z"], ["y"], name="mod")], [vi("x", [3]), vi("z", [3])], [vi("y", [3])], 28
    )
    with pytest.raises(OnyxNotImplemented, match=r'Mod node "mod": fmod=0 on floats'):
        convert_version(_onyx(m), 13)
    ints = make([h.make_node("Mod", ["x", "z"], ["y"])], [vi("x", [3], TP.INT32), vi("z", [3], TP.INT32)],
                [vi("y", [3], TP.INT32)], 28)  # fmt: skip
    assert convert_version(_onyx(ints), 13).opsets[""] == 13


def test_training_dropout_is_refused_going_down() -> None:
    m = make(
        [h.make_node("Dropout", ["x", "r", "t"], ["y"], name="d")],
        [vi("x", [3])],
        [vi("y", [3])],
        13,
        [init("r", np.array(0.5, np.float32)), init("t", np.array(True))],
    )
    with pytest.raises(OnyxNotImplemented, match=r'Dropout node "d".*training_mode'):
        convert_version(_onyx(m), 11)


def test_unused_constants_are_swept_and_input_untouched() -> None:
    source = _onyx(c_squeeze_inputs(18)())
    down = convert_version(source, 11)
    assert not down.graph.initializers  # both axes constants became attributes
    assert set(source.graph.initializers) == {"ax", "ax0"}
    assert [n.op_type for n in source.graph.nodes] == ["Squeeze", "Unsqueeze", "ReduceMax"]


def test_local_functions_are_converted() -> None:
    fn = h.make_function(
        "local",
        "sq",
        ["a"],
        ["b"],
        [h.make_node("Squeeze", ["a"], ["b"], axes=[0])],
        [h.make_opsetid("", 11)],
    )
    m = make([h.make_node("sq", ["x"], ["y"], domain="local")], [vi("x", [1, 3])], [vi("y", [3])], 11)
    m.opset_import.append(h.make_opsetid("local", 1))
    m.functions.append(fn)
    m.ir_version = 8
    new = convert_version(_onyx(m), 13)
    assert new.functions[0].opsets()[""] == 13
    assert [n.op_type for n in new.functions[0].nodes] == ["Constant", "Squeeze"]
    check_converted(m, onyx.serialize(new), 0.0)


def test_cli_convert_reports_and_never_overwrites(tmp_path, capsys) -> None:
    from onyx.cli import main

    src, dst = tmp_path / "m11.onnx", tmp_path / "m18.onnx"
    onnx.save(c_squeeze_reduce(11)(), src)
    before = src.read_bytes()
    assert main(["convert", str(src), str(dst), "--opset", "18"]) == 0
    out = capsys.readouterr().out
    assert "opset 11 -> 18" in out and "nodes adapted: 4" in out and "Squeeze" in out
    check_converted(onnx.load(src), dst.read_bytes(), 1e-6)
    assert src.read_bytes() == before
    assert main(["convert", str(src), str(dst), "--opset", "13"]) == 2  # exists: needs --force
    assert "--force" in capsys.readouterr().err
    assert main(["convert", str(src), str(dst), "--opset", "13", "--force"]) == 0
    assert onnx.load(dst).opset_import[0].version == 13
    assert main(["convert", str(src), str(src), "--opset", "13", "--force"]) == 2
    assert "is the input model" in capsys.readouterr().err
    assert src.read_bytes() == before
    assert main(["convert", str(src), str(tmp_path / "x.onnx"), "--opset", "99"]) == 2
    assert "out of range" in capsys.readouterr().err
    assert not (tmp_path / "x.onnx").exists()
    trilu = make(
        [h.make_node("Trilu", ["x"], ["y"], name="tri")], [vi("x", ["a", 3])], [vi("y", ["a", 3])], 14
    )
    onnx.save(trilu, tmp_path / "t.onnx")
    assert main(["convert", str(tmp_path / "t.onnx"), str(tmp_path / "t13.onnx"), "--opset", "13"]) == 2
    assert 'Trilu node "tri"' in capsys.readouterr().err
    assert sorted(p.name for p in tmp_path.iterdir()) == ["m11.onnx", "m18.onnx", "t.onnx"]
