"""BlackmanWindow: 0.42 - 0.5 cos(2 pi n / N) + 0.08 cos(4 pi n / N), periodic or symmetric."""

from onyx.ops.registry import op, shape_rule
from onyx.ops.signal._common import window_shape_rule
from onyx.ops.signal._windows import cosine_window


@op("BlackmanWindow", since=17)
def blackman_window(size, *, output_datatype=1, periodic=1):
    return cosine_window(size, (0.42, 0.5, 0.08), periodic, output_datatype, "BlackmanWindow")


shape_rule("BlackmanWindow")(window_shape_rule)
