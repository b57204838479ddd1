"""CONVOLUTION's BACKWARD direction with strides (transposed convolutions) on the CPU: the phase
form (dmljax/_src/kernels/convolution_phases.py) against XLA's input-dilated convolution, timed
in pairs in one process, and the CPU entries of that module's RULE the figures give.

    python benchmarks/convolution/transposed.py [--out DIR] [--batches 1,4,8] [--train-batches 1]
        [--dtypes float32,float16] [--directions fwd,train] [--budget-s 3]
    (SMOKE=1: small shapes)

Cases: the strided shapes of benchmarks/convolution/resnet50.py's transposed group (decoders'
upsampling: 2 x 2 windows at stride 2, 4 x 4 at stride 2 with padding 1), a 3 x 3 window at
stride 2 with padding 1 and OutputPadding 1 (phases of uneven tap counts), a depthwise 4 x 4 at
stride 2, a 1-D upsampling by 4 (window 8, padding 2) and a 3-D one (2 x 2 x 2 at stride 2), at
each batch. Directions: ``fwd`` dmljax.convolution's value (at ``--batches``); ``train`` its value
and both gradients (jax.vjp by the input and the filter; at ``--train-batches``: XLA's gradients
of the input-dilated convolution take seconds a call here). Each variant is jitted with the form forced
(``force_kernels``, a private switch for measuring the rule) or switched off
(``dmljax.use_kernels(False, "convolution_phases")``); ``dmljax.bench.timing.time_paired`` times
them in alternating repetitions (the machine is shared: a slow spell hits both) and reports the
median ratio of the phase form's time to XLA's with its quartiles. The rule: "phases" for a kind
and type where the points' ratios (both directions) have a geometric mean below 1 and none is
above 1.1 (a tie within the machine's noise), else "xla". Writes
transposed_cpu.json and .md (default benchmarks/results/<device>/convolution).
"""

import argparse
import sys
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parent), str(Path(__file__).resolve().parents[1]),
                str(Path(__file__).resolve().parents[2])]

import numpy as np  # noqa: E402

import common  # noqa: E402
import cpu_forms  # noqa: E402
from dmljax._src.kernels import convolution_phases as phases  # noqa: E402

SWITCH = phases.CONVOLUTION_PHASES.name


def _case(label, cin, cout, spatial, k, stride, pad=0, output_padding=0, groups=1):
    d = len(spatial)
    return {"label": label, "cin": cin, "cout": cout, "spatial": tuple(spatial), "window": (k,) * d,
            "strides": (stride,) * d, "pads": (pad,) * d, "output_padding": (output_padding,) * d, "groups": groups}


def cases():
    """resnet50.py's strided transposed shapes, and the other geometries the rule's kinds cover."""
    from resnet50 import _transposed  # the GPU benchmark's transposed group (its strided shapes)

    out = [_case(c["label"], c["cin"], c["cout"], (c["size"],) * 2, c["k"], c["stride"], c["pad"])
           for c in _transposed() if c["stride"] > 1]
    out += [_case("up 128->64 32 3x3 s2 p1 op1", 128, 64, (32, 32), 3, 2, 1, 1),
            _case("depthwise 64 56 4x4 s2 p1", 64, 64, (56, 56), 4, 2, 1, groups=64),
            _case("1-D 256->128 1000 k8 s4 p2", 256, 128, (1000,), 8, 4, 2),
            _case("3-D 64->32 16 2x2x2 s2", 64, 32, (16, 16, 16), 2, 2)]
    if common.SMOKE:
        out = [dict(c, cin=max(c["cin"] // 32, 2), cout=max(c["cout"] // 32, 2),
                    groups=1 if c["groups"] == 1 else max(c["cin"] // 32, 2),
                    spatial=tuple(min(s, 8) for s in c["spatial"])) for c in out]
    return out


def _attrs(c):
    return dict(direction="BACKWARD", strides=c["strides"], start_padding=c["pads"], end_padding=c["pads"],
                output_padding=c["output_padding"], group_count=c["groups"])


def run_case(report, c, batch, dtype, direction, budget_s, rng):
    x_shape = (batch, c["cin"]) + c["spatial"]
    w_shape = (c["cin"], c["cout"] // c["groups"]) + c["window"]
    facts = (x_shape, w_shape, np.dtype(dtype), False, c["groups"], c["strides"], (1,) * len(c["strides"]),
             c["pads"], c["pads"], c["output_padding"])
    cpu_forms.time_point(report, "phases", SWITCH, _attrs(c), x_shape, w_shape,
                         w_shape[0] // c["groups"] * int(np.prod(c["window"])), dtype, direction, budget_s, rng,
                         batch=batch, shape=c["label"], kind=phases.phase_kind(*facts))


def main():
    _, rest = common.arguments()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    cpu_forms.options(ap, "1,4,8")
    args = ap.parse_args(rest)
    report = common.Report("convolution", "paired with XLA's input-dilated convolution (dmljax.bench.timing."
                                          "time_paired: alternating repetitions, median ratio), host clock")
    cpu_forms.sweep(report, args, cases, run_case, "transposed_cpu", "phases")
    report.write()


if __name__ == "__main__":
    main()
