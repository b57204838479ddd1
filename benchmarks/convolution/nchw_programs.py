"""FLOAT16 convolutions of ResNet-50 with NCHW memory (batch 128): lax's program as XLA compiles
it (cuDNN with the channels innermost, the input and output transposed around it) against the same
program compiled with ``xla_gpu_force_conv_nchw`` (cuDNN reading NCHW memory as it lies, as torch
runs a contiguous tensor), and torch, forward and both gradients (FLOAT32 sums rounded once to
FLOAT16, as DirectML's FLOAT16 convolution). Whether a program of NCHW memory (an operator called
on its own, dmljax.packed_memory) should ask XLA for NCHW convolutions.

    python benchmarks/convolution/nchw_programs.py      (on a CUDA GPU with torch)

Prints one line a shape and direction: each side's device time (CUPTI kernel durations,
benchmarks/common.py; torch by CUDA events), the ratios, and whether the two programs' outputs are
the same bits."""

import sys
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parents[2])]

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402

import common  # noqa: E402
import resnet50  # noqa: E402  (its torch timing of a case: cuDNN, benchmark mode, 20 calls)

SHAPES = [(64, 64, 56, 3, 1), (128, 128, 28, 3, 1), (256, 256, 14, 3, 1), (512, 512, 7, 3, 1),
          (128, 128, 56, 3, 2), (256, 256, 28, 3, 2), (512, 512, 14, 3, 2), (3, 64, 224, 7, 2),
          (256, 64, 56, 1, 1), (512, 128, 28, 1, 1)]
"""(input channels, output channels, input size, window, stride)."""


def main():
    import torch  # noqa: PLC0415  (the comparison needs it)
    rng = np.random.default_rng(0)
    print(f"{common.environment()['device']}; jax {jax.__version__}, torch {torch.__version__}; batch 128, FLOAT16")
    for cin, cout, hw, k, s in SHAPES:
        p = k // 2
        x = [jnp.asarray(rng.standard_normal((128, cin, hw, hw)).astype(np.float16)) for _ in range(2)]
        w = [jnp.asarray((rng.standard_normal((cout, cin, k, k)) / np.sqrt(cin * k * k)).astype(np.float16))
             for _ in range(2)]

        def conv(a, b):
            return lax.conv_general_dilated(a, b, (s, s), [(p, p)] * 2,
                                            preferred_element_type=jnp.float32).astype(jnp.float16)
        o = conv(x[0], w[0]).shape
        dy = [jnp.asarray(rng.standard_normal(o).astype(np.float16)) for _ in range(2)]
        directions = {"fwd": lambda a, b, t: conv(a, b),
                      "bwd_data": lambda a, b, t: jax.vjp(lambda u: conv(u, b), a)[1](t)[0],
                      "bwd_filter": lambda a, b, t: jax.vjp(lambda v: conv(a, v), b)[1](t)[0]}
        calls = []
        for d, f in directions.items():
            lowered = jax.jit(f).lower(x[0], w[0], dy[0])
            for name, program in (("xla", lowered.compile()),
                                  ("nchw", lowered.compile({"xla_gpu_force_conv_nchw": True}))):
                calls.append((f"{d} {name}", lambda i, c=program: c(x[i], w[i], dy[i])))
        t = common.times(calls)
        by = dict(calls)
        case = dict(cin=cin, cout=cout, size=hw, k=k, stride=s, pad=p, groups=1, transposed=False,
                    output_padding=0)
        torch_ms = {d: v * 1e3 for (_, d), v in resnet50._torch_times(case, 128, np.float16, ["NCHW"]).items()}
        for d in directions:
            a, b = t[f"{d} xla"]["s"] * 1e3, t[f"{d} nchw"]["s"] * 1e3
            same = bool(np.array_equal(np.asarray(by[f"{d} xla"](0)), np.asarray(by[f"{d} nchw"](0))))
            print(f"{cin}->{cout} {hw} {k}x{k} s{s} {d:10s} xla {a:.4f} nchw {b:.4f} torch {torch_ms[d]:.4f} ms; "
                  f"nchw/xla {b / a:.2f} nchw/torch {b / torch_ms[d]:.2f} xla/torch {a / torch_ms[d]:.2f}; "
                  f"bit-equal {same}", flush=True)


if __name__ == "__main__":
    main()
