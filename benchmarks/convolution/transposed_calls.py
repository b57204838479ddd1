"""Which cuDNN call each form of a transposed convolution with strides compiles to on a GPU, and
its device time: dmljax's input-dilated form (every kernel and form off), dmljax as its rules
stand, lax's FLOAT16 call (the filter reversed last, the operands' type out), and, for FLOAT16,
lax's call asked for FLOAT32 sums (``preferred_element_type``, DirectML's FLOAT32 accumulation).

    python benchmarks/convolution/transposed_calls.py

Two of resnet50.py's transposed shapes at batch 128 (a 2 x 2 and a 4 x 4 window at stride 2),
NCHW and NHWC memory, FLOAT16 and FLOAT32, forward, backward-data and backward-filter. Each line
lists the compiled program's custom-call targets (``__cudnn$convBackwardInput``: cuDNN's
transposed convolution; ``__cudnn$convForward``: a convolution of the spread input); times are
device time (CUPTI kernel durations, two input sets), in ms. Printed, not written: the output is
committed as results/h200/convolution/transposed_calls.txt. ``SMOKE=1``: batch 2."""

from __future__ import annotations

import re
import sys
from pathlib import Path

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
import common  # noqa: E402
import resnet50  # noqa: E402

SHAPES = ("up 512->256 28 2x2 s2", "up 256->128 32 4x4 s2 p1")


def targets(compiled) -> list[str]:
    """The compiled program's custom-call targets."""
    return sorted(set(re.findall(r'custom_call_target="([^"]+)"', compiled.as_text())))


def lax_float32_sums(c, layout):
    """lax's transposed call (one group), asked for FLOAT32 sums of its operands."""
    dn = ("NHWC", "HWIO", "NHWC") if layout == "NHWC" else ("NCHW", "OIHW", "NCHW")
    s, p, k = c["stride"], c["pad"], c["k"]

    def conv(x, w):
        oihw = jnp.transpose(w, (3, 2, 0, 1)) if layout == "NHWC" else w
        t = oihw.swapaxes(0, 1)[:, :, ::-1, ::-1]
        t = jnp.transpose(t, (2, 3, 1, 0)) if layout == "NHWC" else t
        return lax.conv_general_dilated(x, t, (1, 1), [(k - 1 - p, k - 1 - p)] * 2, lhs_dilation=(s, s),
                                        dimension_numbers=dn, preferred_element_type=jnp.float32)
    return conv


def main() -> None:
    batch = 2 if common.SMOKE else 128
    print(f"{common.device_name()}; jax {jax.__version__}; batch {batch}; ms (device time on a GPU, the host clock elsewhere)", flush=True)
    cases = [c for c in resnet50.GROUPS["transposed"]() if c["label"] in SHAPES]
    rng = np.random.default_rng(0)
    for dtype in (np.float16, np.float32):
        for c in cases:
            sets = resnet50._data(rng, c, batch, dtype)
            for layout in ("NCHW", "NHWC"):
                args = resnet50._in_layout(sets, layout)
                variants = {"dmljax_xla": (resnet50._dmljax(c, layout), "xla"),
                            "dmljax_rule": (resnet50._dmljax(c, layout), "rule"),
                            "lax": (resnet50._lax(c, layout, dtype), None)}
                if dtype == np.float16:
                    variants["lax_f32_result"] = (lax_float32_sums(c, layout), None)
                for direction in resnet50.DIRECTIONS:
                    calls = []
                    for name, (fn, form) in variants.items():
                        if name == "lax_f32_result" and direction != "fwd":
                            continue  # its cotangent would be FLOAT32
                        f = resnet50._direction(fn, direction)
                        compiled = (jax.jit(f).lower(*args[0]).compile() if form is None
                                    else resnet50._compile(f, args[0], form))
                        print(np.dtype(dtype).name, layout, c["label"], direction, name, targets(compiled), flush=True)
                        calls.append((name, lambda i, compiled=compiled, args=args: compiled(*args[i])))
                    t = common.times(calls)
                    print("   ", ", ".join(f"{k} {v['s'] * 1e3:.4f}" for k, v in t.items()), flush=True)


if __name__ == "__main__":
    main()
