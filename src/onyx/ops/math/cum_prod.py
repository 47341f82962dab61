"""CumProd: cumulative product along an axis given as an input; ``exclusive`` and ``reverse``."""

import numpy as np

from onyx.ops.math.cum_sum import cumulate, cumulate_rule
from onyx.ops.registry import op, shape_rule


@op("CumProd", since=26)
def cum_prod_26(x, axis, *, exclusive=0, reverse=0):
    return cumulate("CumProd", np.multiply.accumulate, 1, x, axis, exclusive, reverse)


shape_rule("CumProd")(cumulate_rule)
