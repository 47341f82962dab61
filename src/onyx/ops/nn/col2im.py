"""Col2Im (opset 18): rearrange column blocks back into a (padded, cropped) image, summing overlaps."""

from __future__ import annotations

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops.nn._common import as_ints, back, compute_dtype
from onyx.ops.nn._shapes import col2im_rule
from onyx.ops.nn.conv_transpose import col2im_add
from onyx.ops.registry import op, shape_rule


@op("Col2Im", since=18)
def col2im(input, image_shape, block_shape, *, dilations=None, pads=None, strides=None):
    img = tuple(int(v) for v in np.asarray(image_shape).ravel())
    blk = tuple(int(v) for v in np.asarray(block_shape).ravel())
    nd = len(img)
    if len(blk) != nd or input.ndim != 3:
        raise InvalidArgument(
            f"Col2Im: input {input.shape} must be 3-D; image_shape {img} and block_shape {blk} same length"
        )
    strides = as_ints(strides, nd, 1, "strides")
    dilations = as_ints(dilations, nd, 1, "dilations")
    pads = as_ints(pads, 2 * nd, 0, "pads")
    kp = int(np.prod(blk))
    n, ck, length = input.shape
    if ck % kp:
        raise InvalidArgument(f"Col2Im: input dimension 1 ({ck}) not divisible by prod(block_shape)={kp}")
    c = ck // kp
    padded = tuple(img[i] + pads[i] + pads[i + nd] for i in range(nd))
    out = tuple((padded[i] - ((blk[i] - 1) * dilations[i] + 1)) // strides[i] + 1 for i in range(nd))
    if int(np.prod(out)) != length:
        raise InvalidArgument(f"Col2Im: input has {length} blocks, image/block/pads/strides give {out}")
    ct = compute_dtype(input.dtype)
    cols = input.astype(ct, copy=False).reshape((n, c) + blk + out)
    y = col2im_add(cols, padded, blk, strides, dilations, out, ct)
    y = y[(slice(None), slice(None)) + tuple(slice(pads[i], pads[i] + img[i]) for i in range(nd))]
    return back(np.ascontiguousarray(y), input.dtype)


shape_rule("Col2Im")(col2im_rule)
