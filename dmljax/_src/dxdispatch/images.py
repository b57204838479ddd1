"""Image files as DxDispatch reads them into buffers and writes buffers to them.

DxDispatch (``ImageReaderWriter.cpp`` with WIC, Windows only) reads a ``.png`` or ``.jpg``
initializer as 8-bit RGB (``resampleSize`` C = 3) or RGBA (C = 4) pixels, scales the picture to
``resampleSize``'s H x W with a high-quality cubic filter when its size differs, and stores each
component as ``float(byte) / 255`` in FLOAT32 or FLOAT16, planar (NCHW). ``writeFile`` to a
``.png`` or ``.jpg`` does the reverse for the first image of its ``dimensions`` (C 1, 3 or 4):
``byte(max(0, min(1, v)) * 255)``, truncated, with NaN written as 255 (C++'s ``std::min(1, NaN)``
is 1).

dmljax decodes, scales and encodes with Pillow (an optional dependency: ``pip install
'dmljax[images]'``): the scaling is Pillow's bicubic filter widened by the reduction factor, as
WIC's HighQualityCubic is, so a scaled picture can differ from DxDispatch's in the last bits of
some pixels, and JPEG decoders differ by about a level; a PNG at the requested size is read
exactly.
"""

from __future__ import annotations

import re
import warnings
from pathlib import Path
from typing import BinaryIO

import numpy as np

from dmljax._src.dtypes import DataType

__all__ = ["READ_SUFFIXES", "image_size", "pixel_bytes", "read_image", "require_pillow", "to_pixels", "write_image"]

READ_SUFFIXES = (".png", ".jpg")  # DxDispatch's: any other suffix is a raw file there
_FORMATS = ("PNG", "JPEG")
_MODES = {1: "L", 3: "RGB", 4: "RGBA"}  # channels -> Pillow mode (DxDispatch's Grayscale, RGB, RGBA)
_SIXTEEN_BIT = ("I;16", "I;16L", "I;16B", "I;16N", "I")
JPEG_QUALITY = 90  # WIC's JPEG encoder default (ImageQuality 0.9)
JPEG_MAX_SIDE = 65500  # libjpeg's JPEG_MAX_DIMENSION


def require_pillow():
    try:
        from PIL import Image
    except ImportError:
        raise ValueError("image files need Pillow, which is not installed: pip install 'dmljax[images]' "
                         "(or pip install pillow)") from None
    return Image


def _open(path: Path, what: str):
    Image = require_pillow()
    try:
        with warnings.catch_warnings():
            # Pillow's decompression-bomb warning: dmljax's memory check decides instead.
            warnings.simplefilter("ignore")
            return Image.open(path, formats=_FORMATS)
    except Image.DecompressionBombError as e:
        count = re.search(r"\((\d+) pixels\)", str(e))
        raise ValueError(f"{what} has {count.group(1) if count else 'more'} pixels, more than Pillow decodes "
                         f"(PIL.Image.MAX_IMAGE_PIXELS = {Image.MAX_IMAGE_PIXELS}, doubled)") from None
    except Image.UnidentifiedImageError:
        raise ValueError(f"{what} is not a PNG or JPEG image") from None
    except Exception as e:  # noqa: BLE001  Pillow's parsers raise many types for a corrupt header
        raise ValueError(f"{what} is not a readable PNG or JPEG image ({type(e).__name__}: {str(e)[:120]})") from None


def image_size(path: Path, what: str) -> tuple[int, int]:
    """(width, height) of a PNG or JPEG file, from its header only."""
    with _open(path, what) as im:
        return im.size


def pixel_bytes(width: int, height: int) -> int:
    """Memory decoding a picture takes at most: four bytes a pixel decoded (RGBA, or 16-bit grey)
    and as much again for its conversion to 8-bit RGB(A)."""
    return 8 * width * height


def read_image(path: Path, channels: int, height: int, width: int, data_type: DataType, what: str) -> np.ndarray:
    """The picture as a (channels, height, width) array of ``data_type`` (FLOAT32 or FLOAT16)
    holding ``byte / 255``: RGB for 3 channels, RGBA for 4, scaled to width x height if needed."""
    Image = require_pillow()
    mode = _MODES[channels]
    with _open(path, what) as im:
        try:
            with warnings.catch_warnings():
                warnings.simplefilter("ignore")
                im.load()
                if im.mode in _SIXTEEN_BIT:  # 16-bit grey: to 8 bits by rounding v / 257
                    wide = np.asarray(im).astype(np.int32)
                    im = Image.fromarray(np.clip((wide * 2 + 257) // 514, 0, 255).astype(np.uint8))
                if im.mode != mode:
                    im = im.convert(mode)
                if im.size != (width, height):
                    im = im.resize((width, height), Image.Resampling.BICUBIC)
                pixels = np.asarray(im, np.uint8).reshape(height, width, channels)
        except ValueError:
            raise
        except Exception as e:  # noqa: BLE001  a truncated or corrupt image: OSError, SyntaxError, ...
            raise ValueError(f"{what} cannot be decoded ({type(e).__name__}: {str(e)[:120]})") from None
    planar = np.ascontiguousarray(pixels.transpose(2, 0, 1))
    # DxDispatch: static_cast<float>(byte) / 255.0f, then (for FLOAT16) a conversion to half.
    return (planar.astype(np.float32) / np.float32(255)).astype(data_type.dtype.newbyteorder("<"))


def to_pixels(values: np.ndarray) -> np.ndarray:
    """Float components as bytes, as DxDispatch writes them: ``max(0, min(1, v)) * 255`` in
    float, truncated; C++'s ``std::min(1.0f, v)`` is ``v < 1 ? v : 1``, so NaN gives 255."""
    v = values.astype(np.float32)
    clipped = np.where(v < 1, v, np.float32(1))
    clipped = np.where(np.float32(0) < clipped, clipped, np.float32(0))
    return (clipped * np.float32(255)).astype(np.uint8)


def write_image(file: BinaryIO, suffix: str, values: np.ndarray, channels: int, height: int, width: int) -> None:
    """Write ``values`` (channels x height x width floats, planar) to ``file`` as a PNG or a JPEG
    picture (``suffix`` .png or .jpg). A JPEG holds no alpha: 4 channels are written as RGB."""
    Image = require_pillow()
    planar = to_pixels(values[: channels * height * width]).reshape(channels, height, width)
    pixels = np.ascontiguousarray(planar[0] if channels == 1 else planar.transpose(1, 2, 0))
    im = Image.fromarray(pixels)  # L, RGB or RGBA by the array's shape
    if suffix == ".jpg":
        im = im.convert("RGB") if channels == 4 else im
        im.save(file, format="JPEG", quality=JPEG_QUALITY)
    else:
        im.save(file, format="PNG")
