"""DxDispatch's image files: ``.png``/``.jpg`` initializers (``resampleSize``) and ``writeFile``
of pictures, as DxDispatch's ImageReaderWriter.cpp reads and writes them (planar RGB or RGBA,
``byte / 255`` in; ``byte(max(0, min(1, v)) * 255)`` out).

The pictures here are made with Pillow from bytes chosen by hand, and the expected values are
worked out from those bytes (51 / 255 = 0.2 ...), not by dmljax's reader.
"""

import json
import shutil
import struct
import sys
import zlib
from pathlib import Path
from unittest import mock

import numpy as np
import pytest
from PIL import Image

from dmljax._src.cli import main
from dmljax._src.dxdispatch import model as dxdispatch
from dmljax._src.dxdispatch.model import Model, ModelError
from tests import tiers

MODELS = Path(__file__).resolve().parents[2] / "shared" / "dxdispatch" / "models"
needs_shared = tiers.needs_shared

# Bytes whose / 255 prints short: 0, 0.2, 0.4, 0.6, 0.8, 1.
LEVELS = {0: "0", 51: "0.2", 102: "0.4", 153: "0.6", 204: "0.8", 255: "1"}


def run(tmp_path, capsys, resources, commands, dispatchables=None):
    p = tmp_path / "m.json"
    p.write_text(json.dumps({"resources": resources, "dispatchables": dispatchables or {}, "commands": commands}))
    status = main(["run", str(p), "--no-timing", "--out", str(tmp_path)])  # files beside the model
    out, err = capsys.readouterr()
    return status, out, err


def picture(path, pixels, mode=None):
    Image.fromarray(np.asarray(pixels, np.uint8) if mode is None else np.asarray(pixels), mode).save(path)


def image_resource(source, size, data_type="FLOAT32", **extra):
    return {"initialValuesDataType": data_type, "initialValues": {"sourcePath": source}, "resampleSize": size, **extra}


def printed(out):
    return [ln for ln in out.splitlines() if ln.startswith("Resource '") and "written to" not in ln]


# ------------------------------------------------------------------------------ reading
def test_png_is_read_planar_and_divided_by_255(tmp_path, capsys):
    rgb = [[[0, 51, 102], [153, 204, 255]],
           [[255, 0, 51], [102, 153, 204]]]  # 2 rows of 2 pixels
    picture(tmp_path / "rgb.png", rgb)
    rgba = [[[0, 51, 102, 255], [153, 204, 255, 51]]]
    picture(tmp_path / "rgba.png", rgba)
    status, out, err = run(tmp_path, capsys, {
        "rgb": image_resource("rgb.png", [1, 3, 2, 2]),
        "rgba": image_resource("rgba.png", [1, 4, 1, 2]),
        "half": image_resource("rgb.png", [1, 3, 2, 2], "FLOAT16"),
    }, [{"type": "print", "resource": r} for r in ("rgb", "rgba", "half")])
    assert status == 0, err
    # planar: the red plane (row by row), then green, then blue (then alpha)
    red, green, blue = ["0", "0.6", "1", "0.4"], ["0.2", "0.8", "0", "0.6"], ["0.4", "1", "0.2", "0.8"]
    half = {"0.2": "0.199951", "0.4": "0.399902", "0.6": "0.600098", "0.8": "0.799805"}  # FLOAT16 of k/5
    assert printed(out) == [
        "Resource 'rgb': " + ", ".join(red + green + blue),
        "Resource 'rgba': 0, 0.6, 0.2, 0.8, 0.4, 1, 1, 0.2",
        "Resource 'half': " + ", ".join(half.get(v, v) for v in red + green + blue),
    ]


def test_other_pixel_formats_are_converted_to_rgb(tmp_path, capsys):
    picture(tmp_path / "grey.png", [[0, 51, 255]])  # L: every channel the grey level
    picture(tmp_path / "grey16.png", np.array([[0, 51 * 257, 65535]], np.uint16))  # I;16: 16 bits to 8 by / 257
    Image.fromarray(np.array([[0, 1, 2]], np.uint8), "L").convert("P").save(tmp_path / "palette.png")
    status, out, err = run(tmp_path, capsys, {
        "grey": image_resource("grey.png", [1, 3, 1, 3]),
        "grey16": image_resource("grey16.png", [1, 3, 1, 3]),
        "alpha": image_resource("grey.png", [1, 4, 1, 3]),  # no alpha in the file: opaque
    }, [{"type": "print", "resource": r} for r in ("grey", "grey16", "alpha")])
    assert status == 0, err
    assert printed(out) == ["Resource 'grey': " + ", ".join(["0, 0.2, 1"] * 3),
                            "Resource 'grey16': " + ", ".join(["0, 0.2, 1"] * 3),
                            "Resource 'alpha': " + ", ".join(["0, 0.2, 1"] * 3 + ["1, 1, 1"])]


@pytest.mark.parametrize("source, target", [((8, 8), (3, 5)), ((2, 2), (7, 6)), ((4, 6), (4, 3))])
def test_scaling_keeps_a_uniform_picture(tmp_path, capsys, source, target):
    # Any interpolating filter keeps a constant: this holds whatever WIC's or Pillow's kernel is.
    h, w = source
    picture(tmp_path / "flat.png", np.broadcast_to(np.array([51, 102, 153], np.uint8), (h, w, 3)))
    th, tw = target
    status, out, err = run(tmp_path, capsys, {"img": image_resource("flat.png", [1, 3, th, tw])},
                           [{"type": "print", "resource": "img"}])
    assert status == 0, err
    assert printed(out) == ["Resource 'img': " + ", ".join(["0.2"] * (th * tw) + ["0.4"] * (th * tw) + ["0.6"] * (th * tw))]


def test_scaling_down_averages_like_a_cubic_filter(tmp_path, capsys):
    # A 2x2 checker of 0 and 255 blocks, halved: each output pixel is a block's own level give or
    # take the cubic filter's ringing (a box filter would give the blocks exactly).
    blocks = np.kron(np.array([[0, 255], [255, 0]], np.uint8), np.ones((8, 8), np.uint8))
    picture(tmp_path / "checker.png", np.repeat(blocks[..., None], 3, axis=2))
    status, out, err = run(tmp_path, capsys, {"img": image_resource("checker.png", [1, 3, 8, 8])},
                           [{"type": "print", "resource": "img"}])
    assert status == 0, err
    values = np.array([float(v) for v in printed(out)[0].split(": ")[1].split(", ")]).reshape(3, 8, 8)
    expect = np.kron(np.array([[0, 1], [1, 0]]), np.ones((4, 4)))
    assert np.all(values[:, [0, 1, 2, 5, 6, 7]][:, :, [0, 1, 2, 5, 6, 7]] ==
                  expect[[0, 1, 2, 5, 6, 7]][:, [0, 1, 2, 5, 6, 7]])  # away from the edges: exact
    assert np.all(np.abs(values - expect) <= 0.15)


# ------------------------------------------------------------------------------ writing
def test_write_png_clamps_truncates_and_writes_nan_as_255(tmp_path, capsys):
    values = [-1, 0, 0.5, 1, 2, "nan", 0.999, 1 / 255, "-inf", "inf", 0.2, 0.4]
    for dt in ("FLOAT32", "FLOAT16"):
        status, out, err = run(tmp_path, capsys, {"v": {"initialValuesDataType": dt, "initialValues": values}},
                               [{"type": "writeFile", "resource": "v", "targetPath": f"{dt}.png",
                                 "dimensions": [1, 1, 3, 4]}])
        assert status == 0, err
        assert "Resource 'v' written to " in out
        with Image.open(tmp_path / f"{dt}.png") as im:
            assert im.mode == "L" and im.size == (4, 3)
            got = np.asarray(im)
        # 0.5 * 255 = 127.5 -> 127; 0.999 * 255 = 254.7 -> 254 (FLOAT16's 0.99902 too). FLOAT16
        # holds 1/255, 0.2 and 0.4 a little low (0.0039215, 0.19995, 0.39990): 0, 50 and 101.
        low = [0, 50, 101] if dt == "FLOAT16" else [1, 51, 102]
        np.testing.assert_array_equal(got, [[0, 0, 127, 255], [255, 255, 254, low[0]], [0, 255, low[1], low[2]]])


def test_write_png_rgb_and_rgba_interleave_the_planes(tmp_path, capsys):
    planes = [1, 0, 0, 1, 0.2, 0.4]  # R plane, G plane, B plane of two pixels
    status, out, err = run(tmp_path, capsys, {
        "rgb": {"initialValuesDataType": "FLOAT32", "initialValues": planes},
        "rgba": {"initialValuesDataType": "FLOAT32", "initialValues": planes + [0.6, 0.8]}}, [
        {"type": "writeFile", "resource": "rgb", "targetPath": "rgb.png", "dimensions": [1, 3, 1, 2]},
        {"type": "writeFile", "resource": "rgba", "targetPath": "rgba.png", "dimensions": [1, 4, 1, 2]},
        {"type": "writeFile", "resource": "rgb", "targetPath": "one.png"}])  # no dimensions: 1 x 1 x 1
    assert status == 0, err
    with Image.open(tmp_path / "rgb.png") as im:
        assert im.mode == "RGB"
        np.testing.assert_array_equal(np.asarray(im), [[[255, 0, 51], [0, 255, 102]]])
    with Image.open(tmp_path / "rgba.png") as im:
        assert im.mode == "RGBA"
        np.testing.assert_array_equal(np.asarray(im), [[[255, 0, 51, 153], [0, 255, 102, 204]]])
    with Image.open(tmp_path / "one.png") as im:
        assert im.mode == "L" and np.asarray(im).tolist() == [[255]]


def test_write_jpg_and_read_it_back(tmp_path, capsys):
    status, out, err = run(tmp_path, capsys, {
        "rgba": {"initialValuesDataType": "FLOAT32", "initialValues": {"valueCount": 4 * 16 * 16, "value": 0.4}}}, [
        {"type": "writeFile", "resource": "rgba", "targetPath": "flat.jpg", "dimensions": [1, 4, 16, 16]}])
    assert status == 0, err
    with Image.open(tmp_path / "flat.jpg") as im:
        assert im.format == "JPEG" and im.mode == "RGB"  # JPEG has no alpha: written as RGB
        assert np.all(np.abs(np.asarray(im).astype(int) - 102) <= 1)
    status, out, err = run(tmp_path, capsys, {"img": image_resource("flat.jpg", [1, 3, 16, 16])},
                           [{"type": "print", "resource": "img"}])
    assert status == 0, err
    values = np.array([float(v) for v in printed(out)[0].split(": ")[1].split(", ")])
    assert values.shape == (768,) and np.all(np.abs(values - 0.4) <= 1.5 / 255)


def test_a_png_read_and_written_back_is_unchanged(tmp_path, capsys):
    rng = np.random.default_rng(0)
    pixels = rng.integers(0, 256, (5, 7, 3), dtype=np.uint8)
    picture(tmp_path / "in.png", pixels)
    status, out, err = run(tmp_path, capsys, {
        "img": image_resource("in.png", [1, 3, 5, 7]),
        "out": {"initialValuesDataType": "FLOAT32", "initialValues": {"valueCount": 105, "value": 0}}}, [
        {"type": "dispatch", "dispatchable": "id", "bindings": {"InputTensor": "img", "OutputTensor": "out"}},
        {"type": "writeFile", "resource": "out", "targetPath": "out.png", "dimensions": [1, 3, 5, 7]}],
        {"id": {"type": "ELEMENT_WISE_IDENTITY", "desc": {"InputTensor": {"DataType": "FLOAT32", "Sizes": [1, 3, 5, 7]},
                                                          "OutputTensor": {"DataType": "FLOAT32", "Sizes": [1, 3, 5, 7]}}}})
    assert status == 0, err
    with Image.open(tmp_path / "out.png") as im:
        np.testing.assert_array_equal(np.asarray(im), pixels)  # (b / 255) * 255 truncates back to b


# ------------------------------------------------------------------------- DxDispatch's model
@needs_shared
def test_image_io_model(tmp_path, capsys):
    """DxDispatch's image_io.json: a 1024 x 1024 JPEG scaled to 512 x 512, turned grey by a 1x1
    CONVOLUTION (0.2989 R + 0.5870 G + 0.1140 B) and written as a PNG."""
    for name in ("image_io.json", "chihuahua.jpg"):
        shutil.copy(MODELS / name, tmp_path)
    status = main(["run", str(tmp_path / "image_io.json"), "--no-timing", "--out", str(tmp_path)])
    out, err = capsys.readouterr()
    assert status == 0, err
    assert out.splitlines()[1:] == ["Resource 'output' written to 'output.png'"]
    # The decoding and scaling are Pillow's on both sides; what this checks is the planar RGB
    # layout, the / 255, the convolution and the byte conversion, in float64.
    with Image.open(MODELS / "chihuahua.jpg") as im:
        rgb = np.asarray(im.convert("RGB").resize((512, 512), Image.Resampling.BICUBIC), np.float64)
    weights = np.array([0.2989, 0.5870, 0.1140], np.float32).astype(np.float64)
    grey = (np.float32(rgb / 255).astype(np.float64) * weights).sum(axis=2)
    expect = np.floor(np.clip(grey, 0, 1) * 255)
    with Image.open(tmp_path / "output.png") as im:
        assert im.mode == "L" and im.size == (512, 512)
        got = np.asarray(im).astype(np.float64)
    # FLOAT32 arithmetic against float64: a level apart only where grey * 255 is within a few
    # float32 ulps of an integer.
    off = got != expect
    assert np.all(np.abs(got - expect)[off] == 1)
    assert np.all(np.abs(grey * 255 - np.round(grey * 255))[off] < 1e-4)
    assert off.mean() < 1e-3


# ------------------------------------------------------------------------------- refusals
def _load_error(tmp_path, resources, commands=()):
    p = tmp_path / "bad.json"
    p.write_text(json.dumps({"resources": resources, "dispatchables": {}, "commands": list(commands)}))
    with pytest.raises(ModelError) as e:
        Model.load(p)
    return str(e.value)


def png_chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))


@pytest.mark.parametrize("case, fragment", [
    ("no resampleSize", "is an image: give resampleSize [1, C, H, W]"),
    ("three sizes", "resampleSize is [3, 2, 2]; it must have four dimensions in N,C,H,W order, N being 1"),
    ("two images", "resampleSize is [2, 3, 2, 2]; it must have four dimensions"),
    ("grey", "resampleSize's C is 1; an image initializer gives 3 channels (RGB) or 4 (RGBA)"),
    ("empty", "resampleSize [1, 3, 0, 2] has an empty picture"),
    ("integers", "its initialValuesDataType must be FLOAT32 or FLOAT16 (DxDispatch converts pixels to those two), "
                 "not INT32"),
    ("crop", "resampleMode is \"crop\"; it must be \"scale\""),
    ("jpeg", "DxDispatch reads only .png and .jpg files as images"),
    ("text", "initialValues.sourcePath 'text.png' is not a PNG or JPEG image"),
    ("truncated", "initialValues.sourcePath 'cut.jpg' cannot be decoded ("),
    ("size on a raw file", "resampleSize/resampleMode apply only to image initializers"),
    ("no Pillow", "image files need Pillow, which is not installed: pip install 'dmljax[images]'"),
])
def test_image_initializer_refusals(tmp_path, case, fragment):
    picture(tmp_path / "ok.png", np.zeros((2, 2, 3), np.uint8))
    (tmp_path / "text.png").write_text("not a picture")
    picture(tmp_path / "full.jpg", np.random.default_rng(1).integers(0, 256, (64, 64, 3), dtype=np.uint8))
    full = (tmp_path / "full.jpg").read_bytes()
    (tmp_path / "cut.jpg").write_bytes(full[:len(full) * 2 // 3])  # the header whole, the scan cut
    (tmp_path / "ok.jpeg").write_bytes((tmp_path / "full.jpg").read_bytes())
    (tmp_path / "raw.dat").write_bytes(bytes(16))
    res = image_resource("ok.png", [1, 3, 2, 2])
    patch = mock.patch.dict(sys.modules, {"PIL": None}) if case == "no Pillow" else mock.MagicMock()
    res = {
        "no resampleSize": {k: v for k, v in res.items() if k != "resampleSize"},
        "three sizes": {**res, "resampleSize": [3, 2, 2]},
        "two images": {**res, "resampleSize": [2, 3, 2, 2]},
        "grey": {**res, "resampleSize": [1, 1, 2, 2]},
        "empty": {**res, "resampleSize": [1, 3, 0, 2]},
        "integers": {**res, "initialValuesDataType": "INT32"},
        "crop": {**res, "resampleMode": "crop"},
        "jpeg": image_resource("ok.jpeg", [1, 3, 2, 2]),
        "text": image_resource("text.png", [1, 3, 2, 2]),
        "truncated": image_resource("cut.jpg", [1, 3, 64, 64]),
        "size on a raw file": image_resource("raw.dat", [1, 3, 2, 2]),
        "no Pillow": res,
    }[case]
    with patch:
        message = _load_error(tmp_path, {"r": res})
    assert ": resource 'r': " in message and fragment in message, message


def png_header_only(width, height):
    """A valid PNG header of width x height RGB pixels, with almost no data."""
    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + png_chunk(b"IHDR", header) + png_chunk(b"IDAT", zlib.compress(b"\0" * 16)) \
        + png_chunk(b"IEND", b"")


def test_pictures_too_large_are_refused_before_they_are_decoded(tmp_path):
    (tmp_path / "large.png").write_bytes(png_header_only(12000, 12000))  # 576 MB decoded as RGBA
    with mock.patch.object(dxdispatch, "_memory_available", return_value=(256 << 20, None)):
        message = _load_error(tmp_path, {"r": image_resource("large.png", [1, 3, 8, 8])})
    # its 768-byte buffer, filled: 768 again, 8 x 144,000,000 decoded and converted, 5 x 192 scaled
    assert ": memory: the model needs 1152002496 bytes" in message and "(MemAvailable)" in message, message
    (tmp_path / "bomb.png").write_bytes(png_header_only(40000, 40000))  # beyond Pillow's own limit
    message = _load_error(tmp_path, {"r": image_resource("bomb.png", [1, 3, 8, 8])})
    assert "initialValues.sourcePath 'bomb.png' has 1600000000 pixels, more than Pillow decodes " \
           "(PIL.Image.MAX_IMAGE_PIXELS" in message, message


@pytest.mark.parametrize("dimensions, data_type, target, fragment", [
    ([1, 2, 2, 2], "FLOAT32", "x.png", "dimensions [1, 2, 2, 2] gives 2 channels; a picture has 1 (grey), 3 (RGB) or 4"),
    ([1, 3, 4, 4], "FLOAT32", "x.png", "a 3 x 4 x 4 picture needs 192 bytes; the resource has 32"),
    ([1, 1, 2, 4], "INT32", "x.png", "the resource holds INT32; pictures are written from FLOAT32 or FLOAT16"),
    ([1, 1, 2, 2, 2], "FLOAT32", "x.png", "has 5 entries; a picture's are [N, C, H, W]"),
    ([1, 1, 1, 8], "FLOAT32", "x.jpeg", "DxDispatch writes images only to .png and .jpg files"),
])
def test_write_picture_refusals(tmp_path, dimensions, data_type, target, fragment):
    res = {"v": {"initialValuesDataType": data_type, "initialValues": {"valueCount": 8, "value": 0}}}
    message = _load_error(tmp_path, res, [{"type": "writeFile", "resource": "v", "targetPath": target,
                                           "dimensions": dimensions}])
    assert "command 0 (writeFile)" in message and fragment in message, message
