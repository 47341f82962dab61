"""CumProd: cumulative product along an axis given as an input; ``exclusive`` and ``reverse``."""

import numpy as np

from onyx.ops.math.cum_sum import cumulate
from onyx.ops.registry import op


@op("CumProd", since=26)
def cum_prod_26(x, axis, *, exclusive=0, reverse=0):
    return cumulate("CumProd", np.multiply.accumulate, 1, x, axis, exclusive, reverse)
