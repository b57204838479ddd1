"""Data movement (CAST, JOIN, SPLIT, GATHER, GATHER_ELEMENTS, SCATTER_ND, TILE, PADDING, SLICE1)
against the formula a jax.numpy user would write, side by side in one run.

    python benchmarks/data_movement/data_movement.py [--out DIR] [GROUP ...]   (SMOKE=1: small shapes)

Groups (default: all): ``cast`` (FLOAT32 <-> FLOAT16, FLOAT32 <-> INT32, UINT8 -> FLOAT32 against
``astype``; 2^28 elements), ``join_split`` (two halves joined and split on either axis against
jnp.concatenate / jnp.split; 2^28 elements), ``gather_scatter`` (2^24 rows of 4 elements taken or
set at random positions against jnp.take, jnp.take_along_axis and ``x.at[i].set(u)``),
``tile_pad_slice`` (TILE 2 x 2 against jnp.tile; PADDING by 64 on each side of both axes in every
mode against jnp.pad, EDGE also with the kernels off (``dmljax.use_kernels(False, "padding")``:
XLA's slices and broadcasts); SLICE1 of every other row, reversed, against ``x[::-1][::2]``;
2^26 elements as rows of 1,024). FLOAT32 and FLOAT16 (CAST: the pairs named).

For each case: the time per call of a device copy of the input, dmljax's operator and the jnp
formula, each in jit (device time where the backend records it: benchmarks/common.py), their
ratio, and dmljax's bandwidth as a fraction of the copy's ((bytes read + written) / time against
the copy's 2 x input bytes / time). Writes <group>.json and <group>.md for each group run to DIR
(default: benchmarks/results/<device>/data_movement).
"""

import sys
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parents[2])]

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import common  # noqa: E402
import dmljax  # noqa: E402

TOTAL = 2 ** 16 if common.SMOKE else 2 ** 28
ROWS = 2 ** 12 if common.SMOKE else 2 ** 24
"""GATHER/SCATTER's rows of 4."""


def cast_cases(rng):
    shape = (TOTAL // 1024, 1024)
    for src, dst in ((np.float32, np.float16), (np.float16, np.float32), (np.float32, np.int32),
                     (np.int32, np.float32), (np.uint8, np.float32)):
        if np.issubdtype(src, np.floating):
            xs = [jnp.asarray((rng.standard_normal(shape, dtype=np.float32) * 100).astype(src)) for _ in range(2)]
        else:
            xs = [jnp.asarray(rng.integers(0, 100, shape).astype(src)) for _ in range(2)]
        name = dmljax.DataType.from_dtype(np.dtype(dst)).name
        yield (f"CAST to {name}", src, xs, jax.jit(lambda x, n=name: dmljax.cast(x, output_data_type=n)),
               jax.jit(lambda x, d=dst: x.astype(d)))


def join_split_cases(rng):
    for dtype in (np.float32, np.float16):
        shape = (TOTAL // 2048, 1024)
        pairs = [[jnp.asarray(rng.standard_normal(shape, dtype=np.float32).astype(dtype)) for _ in range(2)]
                 for _ in range(2)]
        for axis in (0, 1):
            yield (f"JOIN of 2 on axis {axis}", dtype, pairs, jax.jit(lambda p, a=axis: dmljax.join(p, axis=a)),
                   jax.jit(lambda p, a=axis: jnp.concatenate(p, axis=a)))
        whole = [jnp.concatenate(p, axis=1) for p in pairs]
        for axis in (0, 1):
            n = whole[0].shape[axis]
            sizes = tuple(tuple(n // 2 if i == axis else s for i, s in enumerate(whole[0].shape)) for _ in range(2))
            yield (f"SPLIT in 2 on axis {axis}", dtype, whole,
                   jax.jit(lambda x, a=axis, s=sizes: dmljax.split(x, axis=a, outputs_sizes=s)),
                   jax.jit(lambda x, a=axis, h=n // 2: tuple(jnp.split(x, [h], axis=a))))


def gather_scatter_cases(rng):
    for dtype in (np.float32, np.float16):
        table = [jnp.asarray(rng.standard_normal((ROWS, 4), dtype=np.float32).astype(dtype)) for _ in range(2)]
        idx = [jnp.asarray(rng.integers(0, ROWS, (1, ROWS)).astype(np.int32)) for _ in range(2)]
        yield ("GATHER rows of 4", dtype, list(zip(table, idx)),
               jax.jit(lambda a: dmljax.gather(a[0], a[1], axis=0, index_dimensions=1)),
               jax.jit(lambda a: jnp.take(a[0], a[1][0], axis=0)))
        perm = [jnp.asarray(rng.permutation(ROWS).astype(np.int32)) for _ in range(2)]
        upd = [jnp.asarray(rng.standard_normal((ROWS, 4), dtype=np.float32).astype(dtype)) for _ in range(2)]
        yield ("SCATTER_ND rows of 4", dtype, list(zip(table, perm, upd)),
               jax.jit(lambda a: dmljax.scatter_nd(a[0], a[1][:, None], a[2], input_dimension_count=2,
                                                   indices_dimension_count=2)),
               jax.jit(lambda a: a[0].at[a[1]].set(a[2])))
        yield ("GATHER_ELEMENTS rows of 4", dtype,
               [(t, jnp.broadcast_to(p[:, None], (ROWS, 4))) for t, p in zip(table, perm)],
               jax.jit(lambda a: dmljax.gather_elements(a[0], a[1], axis=0)),
               jax.jit(lambda a: jnp.take_along_axis(a[0], a[1], axis=0)))


def tile_pad_slice_cases(rng):
    for dtype in (np.float32, np.float16):
        xs = [jnp.asarray(rng.standard_normal((TOTAL // 4096, 1024), dtype=np.float32).astype(dtype))
              for _ in range(2)]
        yield ("TILE 2 x 2", dtype, xs, jax.jit(lambda x: dmljax.tile(x, repeats=(2, 2))),
               jax.jit(lambda x: jnp.tile(x, (2, 2))))
        for mode, np_mode in (("CONSTANT", "constant"), ("EDGE", "edge"), ("REFLECTION", "reflect"),
                              ("SYMMETRIC", "symmetric"), ("WRAP", "wrap")):
            def padded(x, m=mode):
                return dmljax.padding(x, padding_mode=m, start_padding=(64, 64), end_padding=(64, 64))

            twin = jax.jit(lambda x, m=np_mode: jnp.pad(x, ((64, 64), (64, 64)), mode=m))
            yield f"PADDING {mode} 64 each side", dtype, xs, jax.jit(padded), twin
            if mode == "EDGE":
                with dmljax.use_kernels(False, "padding"):
                    off = common.compiled(padded, xs[0])
                yield f"PADDING {mode} 64 each side, kernel off", dtype, xs, off, twin
        yield ("SLICE1 every other row, reversed", dtype, xs,
               jax.jit(lambda x: dmljax.slice1(x, input_window_offsets=(0, 0), input_window_sizes=x.shape,
                                               input_window_strides=(-2, 1))),
               jax.jit(lambda x: x[::-1][::2]))


GROUPS = {"cast": cast_cases, "join_split": join_split_cases, "gather_scatter": gather_scatter_cases,
          "tile_pad_slice": tile_pad_slice_cases}


def main():
    chosen = [a for a in common.arguments()[1] if a in GROUPS] or list(GROUPS)
    report = common.Report("data_movement", "per-call time (benchmarks/common.py), two input sets; bandwidth = "
                           "(input + output bytes) / time against the copy's 2 x input bytes / time")
    common.against_jnp(report, GROUPS, chosen)
    report.write()


if __name__ == "__main__":
    main()
