"""ImageDecoder: decode an encoded image (BMP, JPEG, JPEG2000, TIFF, PNG, WebP, PNM) to uint8 HWC.

Decoding uses Pillow, an optional extra (``pip install onyx[images]``), imported when the kernel first
runs so that onyx itself needs only numpy. A stream that cannot be decoded gives an empty image of
shape (0, 0, channels), as the spec asks.
"""

from __future__ import annotations

import io

import numpy as np

from onyx.errors import InvalidArgument
from onyx.errors import NotImplemented as OnyxNotImplemented
from onyx.ops.registry import op, shape_rule

_CHANNELS = {"RGB": 3, "BGR": 3, "Grayscale": 1}


def _pillow():
    try:
        from PIL import Image
    except ImportError:
        raise OnyxNotImplemented(
            "ImageDecoder needs Pillow, which is not installed: install the optional extra "
            "'onyx[images]' (pip install 'onyx[images]')"
        ) from None
    return Image


@op("ImageDecoder", since=20)
def image_decoder(encoded_stream, *, pixel_format="RGB"):
    if pixel_format not in _CHANNELS:
        raise InvalidArgument(
            f"ImageDecoder: pixel_format must be RGB, BGR or Grayscale, got {pixel_format!r}"
        )
    data = np.asarray(encoded_stream)
    if data.dtype != np.uint8 or data.ndim != 1:
        raise InvalidArgument(
            f"ImageDecoder: encoded_stream must be a 1-D uint8 tensor, got {data.dtype} shape {data.shape}"
        )
    Image = _pillow()
    channels = _CHANNELS[pixel_format]
    try:
        with Image.open(io.BytesIO(data.tobytes())) as img:
            img = img.convert("L" if pixel_format == "Grayscale" else "RGB")
            pixels = np.asarray(img, dtype=np.uint8)
    except Exception:  # noqa: BLE001 - any decoding failure gives the spec's empty image
        return np.zeros((0, 0, channels), dtype=np.uint8)
    if pixel_format == "Grayscale":
        return np.ascontiguousarray(pixels[:, :, None])
    if pixel_format == "BGR":
        return np.ascontiguousarray(pixels[:, :, ::-1])
    return np.ascontiguousarray(pixels)


@shape_rule("ImageDecoder")
def _image_decoder_shape(ctx) -> None:
    """uint8 [height, width, channels]: the image's size depends on the data (fresh symbols);
    3 channels for RGB/BGR, 1 for Grayscale."""
    fmt = ctx.attr("pixel_format", "RGB")
    if fmt not in _CHANNELS:
        ctx.fail(f"pixel_format must be RGB, BGR or Grayscale, got {fmt!r}")
    x = ctx.input_shape(0)
    if x is not None and len(x) != 1:
        ctx.fail(f"encoded_stream must be 1-D, got {x}")
    ctx.set_output(0, 2, [ctx.new_dim(), ctx.new_dim(), _CHANNELS[fmt]])
