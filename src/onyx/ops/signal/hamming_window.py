"""HammingWindow: 25/46 - 21/46 cos(2 pi n / N), periodic (N = size) or symmetric (N = size - 1)."""

from onyx.ops.registry import op, shape_rule
from onyx.ops.signal._common import window_shape_rule
from onyx.ops.signal._windows import cosine_window


@op("HammingWindow", since=17)
def hamming_window(size, *, output_datatype=1, periodic=1):
    return cosine_window(size, (25 / 46, 21 / 46), periodic, output_datatype, "HammingWindow")


shape_rule("HammingWindow")(window_shape_rule)
