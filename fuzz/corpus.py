"""The seed corpus: every model of the official ONNX node suite (onnx's collect_testcases: real
operators at real opsets, with subgraphs, sequences and functions) plus small exports, one file each."""

from __future__ import annotations

import hashlib
from pathlib import Path


def seed_models() -> list[bytes]:
    """Serialized seed models (needs the onnx package, a test dependency)."""
    from onnx.backend.test.case.node import collect_testcases

    seeds = []
    for case in collect_testcases():
        model = getattr(case, "model", None)
        if model is not None:
            seeds.append(model.SerializeToString())
    return seeds


def write_corpus(folder: Path) -> int:
    """Write the seeds into ``folder`` (content-addressed names, as libFuzzer names its own); count new."""
    folder.mkdir(parents=True, exist_ok=True)
    new = 0
    for data in seed_models():
        path = folder / hashlib.sha1(data).hexdigest()
        if not path.exists():
            path.write_bytes(data)
            new += 1
    return new


def quick_seed_models() -> list[bytes]:
    """A dozen small models built at once (no collect_testcases, which takes ~15 s): the short CI run's
    seeds. Together they reach the decoder's every message kind, subgraphs (If, Loop), sequences, shape
    arithmetic that later dims depend on, and the common kernels."""
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    f, i64 = TensorProto.FLOAT, TensorProto.INT64

    def model(nodes, inputs, outputs, inits=(), opset=18) -> bytes:
        graph = helper.make_graph(nodes, "seed", inputs, outputs, list(inits))
        return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)]).SerializeToString()

    def vi(name, elem=f, shape=None):
        return helper.make_tensor_value_info(name, elem, shape)

    def const(name, array):
        return numpy_helper.from_array(np.asarray(array), name)

    n = helper.make_node
    branch = helper.make_graph([n("Neg", ["x"], ["b"])], "then", [], [vi("b")])
    other = helper.make_graph([n("Identity", ["x"], ["b"])], "else", [], [vi("b")])
    body = helper.make_graph(
        [n("Identity", ["cond"], ["cond_out"]), n("Add", ["acc", "one"], ["acc_out"])],
        "body",
        [vi("i", i64, []), vi("cond", TensorProto.BOOL, []), vi("acc")],
        [vi("cond_out", TensorProto.BOOL, []), vi("acc_out")],
    )
    return [
        model(
            [n("MatMul", ["x", "w"], ["h"]), n("Add", ["h", "b"], ["a"]), n("Relu", ["a"], ["y"])],
            [vi("x", f, ["N", 3])],
            [vi("y")],
            [const("w", np.ones((3, 4), np.float32)), const("b", np.zeros(4, np.float32))],
        ),
        model(
            [
                n("Conv", ["x", "k"], ["c"], pads=[1, 1, 1, 1], strides=[1, 1]),
                n("MaxPool", ["c"], ["y"], kernel_shape=[2, 2], strides=[2, 2]),
            ],
            [vi("x", f, [1, 2, 6, 6])],
            [vi("y")],
            [const("k", np.ones((3, 2, 3, 3), np.float32))],
        ),
        model(
            [
                n("Shape", ["x"], ["s"]),
                n("Gather", ["s", "zero"], ["d"], axis=0),
                n("Unsqueeze", ["d", "zero1"], ["d1"]),
                n("Concat", ["d1", "two"], ["shape"], axis=0),
                n("ConstantOfShape", ["shape"], ["c"]),
                n("Expand", ["x1", "shape"], ["e"]),
                n("Reshape", ["e", "flat"], ["y"]),
            ],
            [vi("x", f, ["N", 2]), vi("x1", f, [1, 1])],
            [vi("y")],
            [
                const("zero", np.array(0)),
                const("zero1", np.array([0])),
                const("two", np.array([2])),
                const("flat", np.array([-1])),
            ],
        ),
        model(
            [n("If", ["c"], ["y"], then_branch=branch, else_branch=other)],
            [vi("c", TensorProto.BOOL, []), vi("x", f, [2])],
            [vi("y")],
        ),
        model(
            [n("Loop", ["trips", "", "x"], ["y"], body=body)],
            [vi("x", f, [2])],
            [vi("y")],
            [const("trips", np.array(3)), const("one", np.ones(2, np.float32))],
        ),
        model(
            [
                n("Transpose", ["x"], ["t"], perm=[1, 0]),
                n("Slice", ["t", "st", "en"], ["s"]),
                n("Unsqueeze", ["s", "ax"], ["u"]),
                n("Squeeze", ["u", "ax"], ["y"]),
            ],
            [vi("x", f, [4, 5])],
            [vi("y")],
            [const("st", np.array([1, 0])), const("en", np.array([3, 4])), const("ax", np.array([0]))],
        ),
        model(
            [
                n("Softmax", ["x"], ["s"], axis=-1),
                n("ReduceMean", ["s", "ax"], ["m"], keepdims=1),
                n("LayerNormalization", ["x", "g", "b"], ["l"], axis=-1),
                n("Sub", ["l", "m"], ["y"]),
            ],
            [vi("x", f, [2, 3])],
            [vi("y")],
            [
                const("ax", np.array([1])),
                const("g", np.ones(3, np.float32)),
                const("b", np.zeros(3, np.float32)),
            ],
        ),
        model(
            [
                n("Cast", ["x"], ["i"], to=i64),
                n("Equal", ["i", "z"], ["e"]),
                n("Where", ["e", "x", "x2"], ["y"]),
            ],
            [vi("x", f, [3]), vi("x2", f, [3])],
            [vi("y")],
            [const("z", np.array([0]))],
        ),
        model(
            [n("SplitToSequence", ["x"], ["seq"], axis=0), n("ConcatFromSequence", ["seq"], ["y"], axis=0)],
            [vi("x", f, [3, 2])],
            [vi("y")],
        ),
        model(
            [
                n("Pad", ["x", "pads"], ["p"], mode="reflect"),
                n("Resize", ["p", "", "scales"], ["y"], mode="nearest"),
            ],
            [vi("x", f, [1, 1, 3, 3])],
            [vi("y")],
            [
                const("pads", np.array([0, 0, 1, 1, 0, 0, 1, 1])),
                const("scales", np.array([1, 1, 2, 2], np.float32)),
            ],
        ),
        model(
            [
                n("TopK", ["x", "k"], ["v", "ix"], axis=-1),
                n("ArgMax", ["x"], ["am"], axis=1),
                n("Range", ["s", "l", "d"], ["r"]),
                n("Tile", ["v", "reps"], ["y"]),
            ],
            [vi("x", f, [2, 5])],
            [vi("y"), vi("ix", i64), vi("am", i64), vi("r", i64)],
            [
                const("k", np.array([2])),
                const("s", np.array(0)),
                const("l", np.array(5)),
                const("d", np.array(1)),
                const("reps", np.array([1, 2])),
            ],
        ),
        model(
            [n("StringNormalizer", ["x"], ["y"], case_change_action="UPPER")],
            [vi("x", TensorProto.STRING, [3])],
            [vi("y", TensorProto.STRING)],
        ),
    ]


def write_quick_corpus(folder: Path) -> int:
    """Write :func:`quick_seed_models` and the kept regression cases into ``folder``; count them."""
    folder.mkdir(parents=True, exist_ok=True)
    seeds = quick_seed_models()
    seeds += [p.read_bytes() for p in sorted((Path(__file__).parent / "regressions").glob("*"))]
    for data in seeds:
        (folder / hashlib.sha1(data).hexdigest()).write_bytes(data)
    return len(seeds)
