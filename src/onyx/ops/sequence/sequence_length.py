"""SequenceLength: the number of tensors in a sequence, as an int64 scalar."""

from __future__ import annotations

import numpy as np

from onyx.ops.registry import op
from onyx.ops.sequence._common import as_sequence


@op("SequenceLength", since=11)
def sequence_length(input_sequence):
    return np.array(len(as_sequence(input_sequence, "SequenceLength")), dtype=np.int64)
