"""Helpers shared by the neural-network kernels: window geometry, padding, dtype handling."""

from __future__ import annotations

from functools import lru_cache

import numpy as np

from onyx.errors import InvalidArgument
from onyx.ops._derived import derived

_F32 = np.dtype(np.float32)


def compute_dtype(dtype: np.dtype) -> np.dtype:
    """The dtype to compute in: float32 for float16/bfloat16/float8 (and other ml_dtypes), else itself."""
    dtype = np.dtype(dtype)
    if dtype.kind == "f" and dtype.itemsize >= 4:
        return dtype
    if dtype.kind in "fV":
        return _F32
    return dtype


def to_compute(x: np.ndarray) -> np.ndarray:
    """``x`` in its compute dtype (no copy when already there)."""
    ct = compute_dtype(x.dtype)
    return x if x.dtype == ct else x.astype(ct)


def back(y: np.ndarray, dtype: np.dtype) -> np.ndarray:
    """``y`` cast back to ``dtype`` (no copy when already there)."""
    return y if y.dtype == dtype else y.astype(dtype)


def as_ints(v, n: int, default: int, name: str) -> tuple[int, ...]:
    if v is None or len(v) == 0:
        return (default,) * n
    v = tuple(int(a) for a in v)
    if len(v) != n:
        raise InvalidArgument(f"{name} has {len(v)} values, expected {n} (one per spatial axis)")
    return v


def norm_auto_pad(auto_pad) -> str:
    if isinstance(auto_pad, bytes):
        auto_pad = auto_pad.decode()
    ap = (auto_pad or "NOTSET").upper()
    if ap not in ("NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"):
        raise InvalidArgument(f"auto_pad {auto_pad!r} is not one of NOTSET, SAME_UPPER, SAME_LOWER, VALID")
    return ap


@lru_cache(maxsize=512)
def window_geometry(
    in_shape: tuple[int, ...],
    kernel: tuple[int, ...],
    strides: tuple[int, ...],
    dilations: tuple[int, ...],
    pads: tuple[int, ...],
    auto_pad: str,
    ceil_mode: bool = False,
) -> tuple[tuple[int, ...], tuple[int, ...], tuple[int, ...], tuple[int, ...]]:
    """Begin pads, end pads (extended so that every window fits), output spatial shape, declared end pads.

    Shared by convolution and pooling. ``pads`` is (b1, ..., bn, e1, ..., en).
    """
    nd = len(in_shape)
    pb: list[int] = []
    pe: list[int] = []
    pe0: list[int] = []
    out: list[int] = []
    for i in range(nd):
        n, k, s, d = in_shape[i], kernel[i], strides[i], dilations[i]
        if s <= 0 or d <= 0 or k <= 0:
            raise InvalidArgument(
                f"kernel_shape {kernel}, strides {strides}, dilations {dilations} must be positive"
            )
        ek = (k - 1) * d + 1
        if auto_pad in ("SAME_UPPER", "SAME_LOWER"):
            o = -(-n // s)
            total = max(0, (o - 1) * s + ek - n)
            small, big = total // 2, total - total // 2
            b, e = (small, big) if auto_pad == "SAME_UPPER" else (big, small)
        elif auto_pad == "VALID":
            b = e = 0
            o = (-(-(n - ek + 1) // s)) if ceil_mode else (n - ek) // s + 1
        else:
            b, e = pads[i], pads[i + nd]
            span = n + b + e - ek
            if ceil_mode:
                o = -(-span // s) + 1
                if (o - 1) * s >= n + b:
                    o -= 1
            else:
                o = span // s + 1
        o = max(o, 0)
        need = (o - 1) * s + ek if o > 0 else 0
        e_ext = max(e, need - n - b)
        pb.append(b)
        pe.append(e_ext)
        pe0.append(e)
        out.append(o)
    return tuple(pb), tuple(pe), tuple(out), tuple(pe0)


def pad_spatial(x: np.ndarray, pb, pe, value=0) -> np.ndarray:
    """``x`` (N, C, *spatial) padded on the spatial axes with a constant (no copy when nothing to pad)."""
    if not any(pb) and not any(pe):
        return x
    nd = len(pb)
    shape = x.shape[:2] + tuple(x.shape[2 + i] + pb[i] + pe[i] for i in range(nd))
    xp = np.empty(shape, dtype=x.dtype)
    xp.fill(value)
    xp[(slice(None), slice(None)) + tuple(slice(pb[i], pb[i] + x.shape[2 + i]) for i in range(nd))] = x
    return xp


def im2col(xp: np.ndarray, kernel, strides, dilations, out_shape) -> np.ndarray:
    """A strided view (N, C, *kernel, *out) of the padded input ``xp`` (N, C, *spatial); no copy."""
    nd = len(kernel)
    st = xp.strides
    shape = xp.shape[:2] + tuple(kernel) + tuple(out_shape)
    strides_ = (
        st[:2]
        + tuple(st[2 + i] * dilations[i] for i in range(nd))
        + tuple(st[2 + i] * strides[i] for i in range(nd))
    )
    return np.lib.stride_tricks.as_strided(xp, shape=shape, strides=strides_, writeable=False)


def check_rank(x: np.ndarray, min_rank: int, what: str) -> None:
    if x.ndim < min_rank:
        raise InvalidArgument(
            f"{what}: input of rank {x.ndim} (shape {x.shape}); expected rank >= {min_rank}"
        )


def check_unidirectional(x_shape, other, what: str, name: str) -> None:
    """Raise InvalidArgument unless ``other`` broadcasts to ``x_shape`` without growing it."""
    try:
        ok = np.broadcast_shapes(tuple(x_shape), tuple(other.shape)) == tuple(x_shape)
    except ValueError:
        ok = False
    if not ok:
        raise InvalidArgument(
            f"{what}: {name} of shape {other.shape} does not broadcast to X of shape {tuple(x_shape)}"
        )


def as_compute_weight(w: np.ndarray, dtype) -> np.ndarray:
    """``w`` in ``dtype``; conversions of read-only arrays (a session's frozen weights) are cached
    (onyx.ops._derived)."""
    dtype = np.dtype(dtype)
    if w.dtype == dtype:
        return w
    return derived(w, ("astype", dtype), lambda: w.astype(dtype))
