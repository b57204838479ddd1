"""CONVOLUTION with unit spatial dimensions on the CPU: the convolution without them, of fewer
spatial dimensions (dmljax/_src/kernels/convolution_squeezed.py), against the convolution as
written, timed in pairs in one process, and the CPU entries of that module's RULE the figures give.

    python benchmarks/convolution/squeezed.py [--out DIR] [--batches 1,4] [--train-batches 1]
        [--dtypes float32,float16] [--directions fwd,train] [--budget-s 3] [--kinds "K x 1,1 x K,..."]
    (SMOKE=1: small shapes)

Cases: each pattern of kept ("K") and unit ("1") spatial dimensions (``squeeze_kind``) with the
shapes that carry it in the ONNX models of tests/onnx/zoo.py (a 1-D convolution exported as a 2-D
one: Magika's K x 1 layer, Silero VAD's and RapidOCR's recogniser's 1 x K layers) and a few more:
other channels, lengths and windows, strides, padding, a 1 x 1 window, a depthwise one, a BACKWARD
one with strides, and the three-dimensional patterns. Directions: ``fwd`` dmljax.convolution's value (at
``--batches``); ``train`` its value and both gradients (jax.vjp by the input and the filter; at
``--train-batches``). Each variant is jitted with the form forced (``force_kernels``, a private
switch for measuring the rule) or switched off (``dmljax.use_kernels(False,
"convolution_squeezed")``); ``dmljax.bench.timing.time_paired`` times them in alternating
repetitions (the machine is shared: a slow spell hits both) and reports the median ratio of the
squeezed form's time to the written convolution's, with its quartiles. The rule: "squeezed" for a
kind and type where the points' ratios (both directions) have a geometric mean below 1 and none is
above 1.1 (a tie within the machine's noise), else "xla". Writes squeezed_cpu.json and .md
(default benchmarks/results/<device>/convolution), the load averages beside the figures.
"""

import argparse
import sys
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1]),
                str(Path(__file__).resolve().parents[2])]

import numpy as np  # noqa: E402

import common  # noqa: E402
import cpu_forms  # noqa: E402
from dmljax._src.kernels import convolution_squeezed as squeezed  # noqa: E402

SWITCH = squeezed.CONVOLUTION_SQUEEZED.name


def _case(label, cin, cout, spatial, window, strides=None, pads=None, groups=1, direction="FORWARD"):
    d = len(spatial)
    pads = pads or ((0,) * d, (0,) * d)
    return {"label": label, "cin": cin, "cout": cout, "spatial": tuple(spatial), "window": tuple(window),
            "strides": tuple(strides or (1,) * d), "start": tuple(pads[0]), "end": tuple(pads[1]), "groups": groups,
            "direction": direction}


def cases():
    """Each kind's shapes: the zoo's models' first, then others."""
    out = [
        _case("magika 256->512 512x1 5x1", 256, 512, (512, 1), (5, 1)),
        _case("128->128 1024x1 3x1 p1", 128, 128, (1024, 1), (3, 1), pads=((1, 0), (1, 0))),
        _case("64->64 4000x1 9x1 s2 p4", 64, 64, (4000, 1), (9, 1), strides=(2, 1), pads=((4, 0), (4, 0))),
        _case("pointwise 128->256 1024x1 1x1", 128, 256, (1024, 1), (1, 1)),
        _case("depthwise 64 1000x1 31x1 p15", 64, 64, (1000, 1), (31, 1), pads=((15, 0), (15, 0)), groups=64),
        _case("backward 256->128 250x1 8x1 s4 p2", 256, 128, (250, 1), (8, 1), strides=(4, 1),
              pads=((2, 0), (2, 0)), direction="BACKWARD"),
        _case("silero 129->128 1x4 1x3 p1", 129, 128, (1, 4), (1, 3), pads=((0, 1), (0, 1))),
        _case("silero 128->64 1x4 1x3 s2 p1", 128, 64, (1, 4), (1, 3), strides=(1, 2), pads=((0, 1), (0, 1))),
        _case("silero stft 1->258 1x832 1x256 s128", 1, 258, (1, 832), (1, 256), strides=(1, 128)),
        _case("rapidocr_rec 480->60 1x40 1x3 p1", 480, 60, (1, 40), (1, 3), pads=((0, 1), (0, 1))),
        _case("rapidocr_rec 60->120 1x40 1x1", 60, 120, (1, 40), (1, 1)),
        _case("256->512 1x512 1x5", 256, 512, (1, 512), (1, 5)),
        _case("64->64 1x28x28 1x3x3 p1", 64, 64, (1, 28, 28), (1, 3, 3), pads=((0, 1, 1), (0, 1, 1))),
        _case("64->64 28x28x1 3x3x1 p1", 64, 64, (28, 28, 1), (3, 3, 1), pads=((1, 1, 0), (1, 1, 0))),
        _case("64->64 28x1x28 3x1x3 p1", 64, 64, (28, 1, 28), (3, 1, 3), pads=((1, 0, 1), (1, 0, 1))),
        _case("256->256 1x1x512 1x1x5", 256, 256, (1, 1, 512), (1, 1, 5)),
        _case("256->256 1x512x1 1x5x1", 256, 256, (1, 512, 1), (1, 5, 1)),
        _case("256->256 512x1x1 5x1x1", 256, 256, (512, 1, 1), (5, 1, 1)),
    ]
    if common.SMOKE:
        out = [dict(c, cin=max(c["cin"] // 32, 2), cout=max(c["cout"] // 32, 2),
                    groups=1 if c["groups"] == 1 else max(c["cin"] // 32, 2),
                    spatial=tuple(min(s, 40) for s in c["spatial"])) for c in out if max(c["window"]) <= 40]
    return out


def _attrs(c):
    return dict(direction=c["direction"], strides=c["strides"], start_padding=c["start"], end_padding=c["end"],
                group_count=c["groups"])


def _kind(c):
    d = len(c["spatial"])
    return squeezed.squeeze_kind((1, c["cin"]) + c["spatial"], (1, 1) + c["window"], np.float32, True, 1, c["strides"],
                                 (1,) * d, c["start"], c["end"], (0,) * d)


def run_case(report, c, batch, dtype, direction, budget_s, rng):
    forward = c["direction"] == "FORWARD"
    x_shape = (batch, c["cin"]) + c["spatial"]
    w_shape = ((c["cout"], c["cin"] // c["groups"]) if forward else (c["cin"], c["cout"] // c["groups"])) + c["window"]
    d = len(c["spatial"])
    facts = (x_shape, w_shape, np.dtype(dtype), forward, c["groups"], c["strides"], (1,) * d, c["start"], c["end"],
             (0,) * d)
    cpu_forms.time_point(report, "squeezed", SWITCH, _attrs(c), x_shape, w_shape, int(np.prod(w_shape[1:])), dtype,
                         direction, budget_s, rng, batch=batch, shape=c["label"], kind=squeezed.squeeze_kind(*facts))


def main():
    _, rest = common.arguments()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    cpu_forms.options(ap, "1,4")
    ap.add_argument("--kinds", default=",".join(squeezed.KINDS), help="the kinds to run, comma-separated")
    args = ap.parse_args(rest)
    report = common.Report("convolution", "paired with the convolution as written (dmljax.bench.timing."
                                          "time_paired: alternating repetitions, median ratio), host clock")
    cpu_forms.sweep(report, args, cases, run_case, "squeezed_cpu", "squeezed",
                    kept=lambda c: _kind(c) in args.kinds.split(","))
    report.write()


if __name__ == "__main__":
    main()
