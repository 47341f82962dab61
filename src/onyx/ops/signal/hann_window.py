"""HannWindow: 0.5 - 0.5 cos(2 pi n / N), periodic (N = size) or symmetric (N = size - 1)."""

from onyx.ops.registry import op, shape_rule
from onyx.ops.signal._common import window_shape_rule
from onyx.ops.signal._windows import cosine_window


@op("HannWindow", since=17)
def hann_window(size, *, output_datatype=1, periodic=1):
    return cosine_window(size, (0.5, 0.5), periodic, output_datatype, "HannWindow")


shape_rule("HannWindow")(window_shape_rule)
