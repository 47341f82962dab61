"""Convolution as GEMM over a column matrix: 1x1 kernels read x itself (strided when the stride is
not 1), non-overlapping patches (a ViT's patch embedding) a transpose of x, everything else an im2col
view copied once per block of output rows, followed by one matmul batched over images and groups
(onyx.kernels.conv_gemm.columns_conv: the blocks, their threads and their epilogues)."""

from __future__ import annotations

import numpy as np

from onyx.kernels.conv_gemm import columns_conv
from onyx.ops.nn._common import im2col, pad_spatial
from onyx.ops.nn.conv._finish import Finish
from onyx.ops.nn.conv._geometry import Geometry


def is_patchify(kernel, geo: Geometry) -> bool:
    """Kernel equal to the stride, no dilation, no padding: every input position falls under exactly
    one kernel offset (or none, past the last whole patch), so the column matrix is a transpose of x."""
    return (
        tuple(kernel) == tuple(geo.strides)
        and all(d == 1 for d in geo.dilations)
        and not any(geo.pb)
        and not any(geo.pe)
    )


def run(x, w, b, z, group: int, geo: Geometry, finish: Finish, threads: int):
    """The convolution (N, M, *out) through its column matrix; ``threads``: the session's count."""
    nd = x.ndim - 2
    n, c = x.shape[:2]
    m, cg = w.shape[:2]
    kernel = tuple(w.shape[2:])
    kp = geo.kernel_positions
    out, strides, p = geo.out, geo.strides, geo.positions
    mg = m // group
    patches = kp > 1 and is_patchify(kernel, geo)
    rows = out[0]
    inner = p // rows
    y = np.empty((n, group, mg, rows, inner), dtype=x.dtype)
    wm = w.reshape(group, mg, cg * kp)
    if kp == 1 and not any(geo.pb) and not any(geo.pe):
        st = strides[0]

        def cols_of(r0, r1):
            xs = x[:, :, r0 * st : (r1 - 1) * st + 1 : st]
            if any(s != 1 for s in strides):
                xs = xs[
                    (slice(None), slice(None), slice(None))
                    + tuple(slice(0, (out[i] - 1) * strides[i] + 1, strides[i]) for i in range(1, nd))
                ]
            return xs.reshape(n, group, cg, (r1 - r0) * inner)

        row_bytes = 0 if all(s == 1 for s in strides) else n * c * inner * x.dtype.itemsize
    elif patches:
        k0 = kernel[0]
        crop = tuple(slice(0, out[i] * kernel[i]) for i in range(1, nd))
        # (N, C, o0, k0, o1, k1, ...) -> (N, C, k0, k1, ..., o0, o1, ...)
        order = (0, 1) + tuple(3 + 2 * i for i in range(nd)) + tuple(2 + 2 * i for i in range(nd))

        def cols_of(r0, r1):
            slab = x[(slice(None), slice(None), slice(r0 * k0, r1 * k0)) + crop]
            dims = (r1 - r0,) + tuple(out[1:])
            split = slab.reshape((n, c) + tuple(v for i in range(nd) for v in (dims[i], kernel[i])))
            return split.transpose(order).reshape(n, group, cg * kp, (r1 - r0) * inner)

        row_bytes = n * c * kp * inner * x.dtype.itemsize
    else:
        xp = pad_spatial(x, geo.pb, geo.pe)

        def cols_of(r0, r1):
            sub = (r1 - r0,) + out[1:]
            cols = im2col(xp[:, :, r0 * strides[0] :], kernel, strides, geo.dilations, sub)
            return cols.reshape(n, group, cg * kp, (r1 - r0) * inner)

        row_bytes = n * c * kp * inner * x.dtype.itemsize
    columns_conv(
        wm, cols_of, y, out, b, z,
        row_bytes=row_bytes, activation=finish.activation, post=finish.numpy_post, threads=threads,
    )  # fmt: skip
    return y.reshape((n, m) + out)
