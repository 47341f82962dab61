"""Shape rule of ImageDecoder: uint8 [height, width, channels]."""

from __future__ import annotations

import pytest
from onnx import TensorProto as TP

from onyx.errors import InvalidGraph
from onyx.ir.symbolic import Sym
from tests.shape_inference._mlctl_rules import check_case, family_ops, infer, suite_cases


@pytest.mark.parametrize("fmt,channels", [("RGB", 3), ("BGR", 3), ("Grayscale", 1)])
def test_image_decoder(fmt, channels):
    elem, dims = infer("ImageDecoder", [("x", TP.UINT8, ["L"])], {"pixel_format": fmt}, opset=20)
    assert elem == TP.UINT8 and dims[2] == channels
    assert all(isinstance(d, Sym) and str(d).startswith("unk__") for d in dims[:2])
    with pytest.raises(InvalidGraph):
        infer("ImageDecoder", [("x", TP.UINT8, ["L"])], {"pixel_format": "CMYK"}, opset=20)


CASES = suite_cases(["image_decoder"], family_ops("image"))


def test_suite_has_cases():
    assert len(CASES) >= 5


@pytest.mark.parametrize("case", CASES, ids=lambda c: c.name)
def test_node_suite(case):
    pytest.importorskip("PIL")
    check_case(case)


def test_every_op_of_the_family_has_a_rule():
    from tests.shape_inference._mlctl_rules import ops_without_rules

    assert ops_without_rules("image") == []
