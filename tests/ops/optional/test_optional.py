"""Optional, OptionalHasElement and OptionalGetElement over every version."""

from __future__ import annotations

import numpy as np
import pytest

from onyx.errors import InvalidArgument
from onyx.ops import registry


def k(op_type, opset):
    return registry.lookup(op_type, "", opset).fn


@pytest.mark.parametrize("opset", [15, 18, 28])
def test_optional_wraps_and_empties(opset):
    t = np.zeros(2)
    assert k("Optional", opset)(t) is t
    s = [t]
    assert k("Optional", opset)(s) is s
    assert k("Optional", opset)(type=object()) is None


@pytest.mark.parametrize("opset", [15, 18, 28])
def test_has_element(opset):
    f = k("OptionalHasElement", opset)
    for value, expected in ((np.zeros(1), True), ([], True), (None, False)):
        out = f(value)
        assert out.dtype == np.bool_ and out.shape == () and bool(out) is expected


def test_has_element_input_optional_from_18():
    assert bool(k("OptionalHasElement", 18)()) is False
    with pytest.raises(TypeError):
        k("OptionalHasElement", 15)()
    assert registry.lookup("OptionalHasElement", "", 15).min_inputs == 1
    assert registry.lookup("OptionalHasElement", "", 18).min_inputs == 0


@pytest.mark.parametrize("opset", [15, 18, 28])
def test_get_element(opset):
    t = np.arange(3)
    assert k("OptionalGetElement", opset)(t) is t
    s = [t, t]
    assert k("OptionalGetElement", opset)(s) is s
    with pytest.raises(InvalidArgument, match="empty"):
        k("OptionalGetElement", opset)(None)
