"""Negative axes became legal at opset 11 (Concat, Gather, Split, Squeeze, Reduce*...). Going below 11 a
negative ``axis``/``axes`` is rewritten as its positive value, which needs the rank it counts from."""

from __future__ import annotations

from collections.abc import Callable

from onyx.ir.model import Node
from onyx.version_converter._core import Converter, adapter, fail

RankOf = Callable[[Node, Converter], "int | None"]


def _input_rank(node: Node, cx: Converter) -> int | None:
    return cx.rank(node.inputs[0])


def _unsqueezed_rank(node: Node, cx: Converter) -> int | None:
    rank = cx.rank(node.inputs[0])
    return None if rank is None else rank + len(node.attr("axes", []))


def _one_hot_rank(node: Node, cx: Converter) -> int | None:
    rank = cx.rank(node.inputs[0])
    return None if rank is None else rank + 1


def _positive(attr: str, rank_of: RankOf) -> Callable[[Node, Converter], None]:
    def down(node: Node, cx: Converter) -> None:
        value = node.attr(attr)
        if value is None:
            return
        values = value if isinstance(value, list) else [value]
        if all(v >= 0 for v in values):
            return
        rank = rank_of(node, cx)
        if rank is None:
            raise fail(node, f"negative {attr} {value} needs the rank to be known before opset 11")
        fixed = [v + rank if v < 0 else v for v in values]
        cx.set_attr(node, attr, fixed if isinstance(value, list) else fixed[0])

    return down


REDUCE = (
    "ReduceL1", "ReduceL2", "ReduceLogSum", "ReduceLogSumExp", "ReduceMax", "ReduceMean", "ReduceMin",
    "ReduceProd", "ReduceSum", "ReduceSumSquare",
)  # fmt: skip

adapter(("ArgMax", "ArgMin", "Concat", "Gather", "Split", "TopK", "Compress", "Flatten"), 11,
        down=_positive("axis", _input_rank))  # fmt: skip
adapter(("Squeeze", *REDUCE), 11, down=_positive("axes", _input_rank))
adapter("Unsqueeze", 11, down=_positive("axes", _unsqueezed_rank))
adapter("OneHot", 11, down=_positive("axis", _one_hot_rank))
