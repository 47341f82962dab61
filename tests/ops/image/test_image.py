"""ImageDecoder: needs Pillow (the optional extra onyx[images]); without it the kernel says so."""

from __future__ import annotations

import builtins
import io

import numpy as np
import pytest

from onyx.errors import InvalidArgument
from onyx.errors import NotImplemented as OnyxNotImplemented
from onyx.ops import registry


def decoder():
    return registry.lookup("ImageDecoder", "", 20).fn


def test_missing_pillow_names_the_extra(monkeypatch):
    real_import = builtins.__import__

    def no_pil(name, *args, **kwargs):
        if name == "PIL" or name.startswith("PIL."):
            raise ImportError("No module named 'PIL'")
        return real_import(name, *args, **kwargs)

    monkeypatch.setattr(builtins, "__import__", no_pil)
    with pytest.raises(OnyxNotImplemented, match=r"onyx\[images\]"):
        decoder()(np.frombuffer(b"P6\n1 1\n255\n\x00\x00\x00", np.uint8))


def test_input_validation():
    with pytest.raises(InvalidArgument, match="pixel_format"):
        decoder()(np.zeros(4, np.uint8), pixel_format="RGBA")
    with pytest.raises(InvalidArgument, match="uint8"):
        decoder()(np.zeros(4, np.int32))


def _encode(fmt, pixels):
    from PIL import Image

    buf = io.BytesIO()
    Image.fromarray(pixels).save(buf, format=fmt)
    return np.frombuffer(buf.getvalue(), dtype=np.uint8)


@pytest.mark.parametrize("fmt", ["PNG", "BMP", "PPM", "TIFF"])
def test_lossless_formats_round_trip(fmt):
    pytest.importorskip("PIL")
    pixels = np.random.default_rng(0).integers(0, 256, (5, 7, 3), dtype=np.uint8)
    data = _encode(fmt, pixels)
    rgb = decoder()(data)
    assert rgb.dtype == np.uint8 and rgb.shape == (5, 7, 3)
    np.testing.assert_array_equal(rgb, pixels)
    np.testing.assert_array_equal(decoder()(data, pixel_format="BGR"), pixels[:, :, ::-1])
    gray = decoder()(data, pixel_format="Grayscale")
    assert gray.shape == (5, 7, 1)


def test_corrupt_stream_gives_empty_image():
    pytest.importorskip("PIL")
    out = decoder()(np.frombuffer(b"not an image at all", np.uint8))
    assert out.shape == (0, 0, 3) and out.dtype == np.uint8
