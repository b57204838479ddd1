"""H100 figures for issue 11's operators against jax.numpy, side by side in one run.

    python benchmarks/issue11_gpu.py OUT_DIR [GROUP ...]

Groups: arg, reduce, cast, join_split, gather_scatter, movement, top_k, scan (default: all that exist).
Tensors of 2^28 elements (REDUCE_TOTAL overrides) in FLOAT32 and FLOAT16, or 2^24 rows for
GATHER/SCATTER; device-side kernel time (CUPTI through jax.profiler, 20 calls, two input sets) of a
copy of the input, dmljax's operator in jit and the jax.numpy formula a user would write, in jit.
For each point: time(dmljax) / time(jnp), and dmljax's bandwidth as a fraction of the copy's
(bytes read + written per second; a reduction writes almost nothing, so its figure is its read
bandwidth against the copy's read + write bandwidth, the device's memory bandwidth). Writes
results.json and results.md.
"""

from __future__ import annotations

import json
import os
import sys
import time
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402

import dmljax  # noqa: E402
from benchmarks.kernel_checks import compiled_with, compiled_with_each  # noqa: E402
from dmljax._src import pad_kernels, scan_kernels, select_kernels, threshold_kernels  # noqa: E402
from dmljax._src.enums import PaddingMode  # noqa: E402
from dmljax._src.ops.arg_extreme import arg_extreme  # noqa: E402
from dmljax._src.ops.padding import pad  # noqa: E402
from dmljax._src.ops.cumulative import tally  # noqa: E402
from dmljax._src.ops.top_k import top_k_along  # noqa: E402
from dmljax.bench.timing import jax_device_times  # noqa: E402

TOTAL = int(os.environ.get("REDUCE_TOTAL", 2 ** 28))
ROWS = int(os.environ.get("GATHER_ROWS", 2 ** 24))


def _nbytes(tree) -> int:
    return sum(int(np.prod(x.shape)) * np.dtype(x.dtype).itemsize for x in jax.tree.leaves(tree))


def reduce_cases(rng):
    for dtype in (np.float32, np.float16):
        shape = (TOTAL // 1024, 1024)
        xs = [jnp.asarray(rng.standard_normal(shape, dtype=np.float32).astype(dtype)) for _ in range(2)]
        for axis in (1, 0):
            for f, jf in (("SUM", jnp.sum), ("MAX", jnp.max), ("AVERAGE", jnp.mean), ("MIN", jnp.min),
                          ("L2", lambda x, axis, keepdims: jnp.sqrt(jnp.sum(x * x, axis=axis, keepdims=keepdims)))):
                yield (f"REDUCE {f} axis {axis}", dtype, xs,
                       jax.jit(lambda x, f=f, a=axis: dmljax.reduce(x, function=f, axes=(a,))),
                       jax.jit(lambda x, jf=jf, a=axis: jf(x, axis=a, keepdims=True)))


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
            sizes = [tuple(n // 2 if i == axis else s for i, s in enumerate(whole[0].shape))] * 2
            yield (f"SPLIT in 2 on axis {axis}", dtype, whole,
                   jax.jit(lambda x, a=axis, s=tuple(sizes): dmljax.split(x, axis=a, outputs_sizes=s)),
                   jax.jit(lambda x, a=axis, h=n // 2: tuple(jnp.split(x, [h], axis=a))))


def gather_scatter_cases(rng):
    for dtype in (np.float32, np.float16):
        table = [jnp.asarray(rng.standard_normal((ROWS, 4), dtype=np.float32).astype(dtype)) for _ in range(2)]
        idx = [jnp.asarray(rng.integers(0, ROWS, (1, ROWS)).astype(np.int32)) for _ in range(2)]
        args = [(t, i) for t, i in zip(table, idx)]
        yield ("GATHER 2^24 rows of 4", dtype, args,
               jax.jit(lambda a: dmljax.gather(a[0], a[1], axis=0, index_dimensions=1)),
               jax.jit(lambda a: jnp.take(a[0], a[1][0], axis=0)))
        perm = [jnp.asarray(rng.permutation(ROWS).astype(np.int32)) for _ in range(2)]
        upd = [jnp.asarray(rng.standard_normal((ROWS, 4), dtype=np.float32).astype(dtype)) for _ in range(2)]
        sargs = [(t, p, u) for t, p, u in zip(table, perm, upd)]
        yield ("SCATTER_ND 2^24 rows of 4", dtype, sargs,
               jax.jit(lambda a: dmljax.scatter_nd(a[0], a[1][:, None], a[2], input_dimension_count=2,
                                                   indices_dimension_count=2)),
               jax.jit(lambda a: a[0].at[a[1]].set(a[2])))
        yield ("GATHER_ELEMENTS 2^24 x 4", dtype, [(t, jnp.broadcast_to(p[:, None], (ROWS, 4))) for t, p in zip(table, perm)],
               jax.jit(lambda a: dmljax.gather_elements(a[0], a[1], axis=0)),
               jax.jit(lambda a: jnp.take_along_axis(a[0], a[1], axis=0)))


def scan_cases(rng):
    for dtype in (np.float32, np.float16):
        shape = (TOTAL // 1024, 1024)
        xs = [jnp.asarray(rng.standard_normal(shape, dtype=np.float32).astype(dtype)) for _ in range(2)]
        ps = [jnp.asarray(np.exp2(rng.uniform(-0.01, 0.01, shape)).astype(dtype)) for _ in range(2)]
        # (operator, its exclusivity member, jnp's scan, inputs, whether a product, the kernel switch)
        for name, op, excl, scan, ins, product, switch in (
                ("CUMULATIVE_SUMMATION", dmljax.cumulative_summation, "has_exclusive_sum", jnp.cumsum, xs, False, "ENABLED"),
                ("CUMULATIVE_PRODUCT", dmljax.cumulative_product, "has_exclusive_product", jnp.cumprod, ps, True,
                 "PRODUCT_ENABLED")):
            yield (f"{name} rows of 1024", dtype, ins, jax.jit(lambda x, op=op: op(x, axis=1)),
                   jax.jit(lambda x, scan=scan: scan(x, axis=1)))
            for direction, exclusive in ((1, False), (0, True), (1, True)):
                yield (f"{name} rows of 1024 {'reverse' if direction else 'forward'}"
                       f"{' exclusive' if exclusive else ''}", dtype, ins,
                       jax.jit(lambda x, op=op, d=direction, e=exclusive, excl=excl: op(
                           x, axis=1, axis_direction=d, **{excl: e})),
                       jax.jit(lambda x, d=direction, scan=scan: scan(x[:, ::-1], axis=1)[:, ::-1] if d else scan(x, axis=1)))
            xla = compiled_with(scan_kernels, lambda x, product=product: tally(x, 1, False, False, product, False), ins[0],
                                **{switch: False})
            yield (f"{name} rows of 1024 (XLA path)", dtype, ins, xla, jax.jit(lambda x, scan=scan: scan(x, axis=1)))
            for n in (128, 8192, 65536):  # (65,536: both tallies carried block to block)
                rows = [x.reshape(-1, n) for x in ins]
                yield (f"{name} rows of {n}", dtype, rows, jax.jit(lambda x, op=op: op(x, axis=1)),
                       jax.jit(lambda x, scan=scan: scan(x, axis=1)))
                if n > 1024:  # the carried rows' other direction
                    yield (f"{name} rows of {n} reverse", dtype, rows,
                           jax.jit(lambda x, op=op: op(x, axis=1, axis_direction=1)),
                           jax.jit(lambda x, scan=scan: scan(x[:, ::-1], axis=1)[:, ::-1]))


def movement_cases(rng):
    for dtype in (np.float32, np.float16):
        shape = (TOTAL // 1024 // 4, 1024)
        xs = [jnp.asarray(rng.standard_normal(shape, dtype=np.float32).astype(dtype)) for _ in range(2)]
        yield ("TILE 2 x 2", dtype, xs, jax.jit(lambda x: dmljax.tile(x, repeats=(2, 2))),
               jax.jit(lambda x: jnp.tile(x, (2, 2))))
        yield ("TILE 2 x 2 as concatenations", dtype, xs,  # another formulation, for the record
               jax.jit(lambda x: jnp.concatenate([jnp.concatenate([x, x], axis=1)] * 2, axis=0)),
               jax.jit(lambda x: jnp.tile(x, (2, 2))))
        yield ("TILE 2 x 2 as a broadcast", dtype, xs,
               jax.jit(lambda x: jnp.broadcast_to(x[None, :, None, :], (2, x.shape[0], 2, x.shape[1])).reshape(
                   2 * x.shape[0], 2 * x.shape[1])),
               jax.jit(lambda x: jnp.tile(x, (2, 2))))
        for mode, np_mode in (("CONSTANT", "constant"), ("EDGE", "edge"), ("REFLECTION", "reflect"),
                              ("SYMMETRIC", "symmetric"), ("WRAP", "wrap")):
            def padded(x, m=mode):
                return dmljax.padding(x, padding_mode=m, start_padding=(64, 64), end_padding=(64, 64))

            def jnp_padded(x, m=np_mode):
                return jnp.pad(x, ((64, 64), (64, 64)), mode=m)

            yield f"PADDING {mode} 64 each side", dtype, xs, jax.jit(padded), jax.jit(jnp_padded)
            # the same call by the other path (the formula itself: the operator keeps its compiled
            # callable): EDGE by XLA's slices, the other copying modes by pad_kernels' kernel
            if mode == "EDGE":
                yield (f"PADDING {mode} 64 each side, XLA's slices", dtype, xs,
                       compiled_with(pad_kernels, lambda x, m=mode: pad(x, PaddingMode[m], None, (64, 64), (64, 64)),
                                     xs[0], ENABLED=False), jax.jit(jnp_padded))
            elif mode != "CONSTANT":
                every = (PaddingMode.EDGE, PaddingMode.REFLECTION, PaddingMode.SYMMETRIC, PaddingMode.WRAP)
                yield (f"PADDING {mode} 64 each side, the kernel", dtype, xs,
                       compiled_with(pad_kernels, lambda x, m=mode: pad(x, PaddingMode[m], None, (64, 64), (64, 64)),
                                     xs[0], MODES=every), jax.jit(jnp_padded))
        yield ("SLICE1 every other row, reversed", dtype, xs,
               jax.jit(lambda x: dmljax.slice1(x, input_window_offsets=(0, 0), input_window_sizes=x.shape,
                                               input_window_strides=(-2, 1))),
               jax.jit(lambda x: x[::-1][::2]))


def top_k_cases(rng):
    for dtype in (np.float32, np.float16):
        shape = (TOTAL // 32768 // 4, 32768)
        xs = [jnp.asarray(rng.standard_normal(shape, dtype=np.float32).astype(dtype)) for _ in range(2)]
        for k in (1, 8, 16, 32, 256):
            yield (f"TOP_K rows of 32768, k {k}", dtype, xs, jax.jit(lambda x, k=k: dmljax.top_k(x, axis=1, k=k)),
                   jax.jit(lambda x, k=k: jax.lax.top_k(x, k)))
        for k in (8, 256):
            xla = compiled_with_each({select_kernels: {"ENABLED": False}, threshold_kernels: {"ENABLED": False}},
                                     lambda x, k=k: top_k_along(x, 1, k, True, np.uint32), xs[0])
            yield (f"TOP_K rows of 32768, k {k} (XLA path)", dtype, xs, xla, jax.jit(lambda x, k=k: jax.lax.top_k(x, k)))
        ys = [x.reshape(-1, 1024) for x in xs]
        yield ("TOP_K rows of 1024, k 8", dtype, ys, jax.jit(lambda x: dmljax.top_k(x, axis=1, k=8)),
               jax.jit(lambda x: jax.lax.top_k(x, 8)))


def arg_cases(rng):
    for dtype in (np.float32, np.float16):
        shape = (TOTAL // 1024, 1024)
        xs = [jnp.asarray(rng.standard_normal(shape, dtype=np.float32).astype(dtype)) for _ in range(2)]
        yield ("ARGMAX rows of 1024", dtype, xs, jax.jit(lambda x: dmljax.argmax(x, axes=(1,))),
               jax.jit(lambda x: jnp.argmax(x, axis=1, keepdims=True).astype(jnp.uint32)))
        for name, types in (("XLA path", ()), ("kernel", (np.dtype(np.float32), np.dtype(np.float16)))):
            f = compiled_with(select_kernels, lambda x: arg_extreme(x, (1,), True, False, np.uint32), xs[0],
                              ARG_TYPES=types)
            yield (f"ARGMAX rows of 1024 ({name})", dtype, xs, f,
                   jax.jit(lambda x: jnp.argmax(x, axis=1, keepdims=True).astype(jnp.uint32)))
        yield ("ARGMAX first axis", dtype, xs, jax.jit(lambda x: dmljax.argmax(x, axes=(0,))),
               jax.jit(lambda x: jnp.argmax(x, axis=0, keepdims=True).astype(jnp.uint32)))
        yield ("ARGMIN first axis, DECREASING", dtype, xs,
               jax.jit(lambda x: dmljax.argmin(x, axes=(0,), axis_direction="DECREASING")),
               jax.jit(lambda x: (x.shape[0] - 1 - jnp.argmin(x[::-1], axis=0, keepdims=True)).astype(jnp.uint32)))
        xla = compiled_with(select_kernels, lambda x: arg_extreme(x, (0,), True, False, np.uint32), xs[0], ENABLED=False)
        yield ("ARGMAX first axis (XLA path)", dtype, xs, xla,
               jax.jit(lambda x: jnp.argmax(x, axis=0, keepdims=True).astype(jnp.uint32)))
        for width, rows, seg, warps in ((128, 8, 256, 1), (256, 8, 512, 2), (128, 4, 512, 1), (64, 8, 512, 1),
                                        (128, 8, 1024, 1), (128, 16, 512, 2)):
            f = compiled_with(select_kernels, lambda x: arg_extreme(x, (0,), True, False, np.uint32), xs[0],
                              COLUMN_WIDTH=width, COLUMN_ROWS=rows, COLUMN_SEGMENT=seg, COLUMN_WARPS=warps)
            yield (f"ARGMAX first axis (columns {width}, rows {rows}, segment {seg}, warps {warps})", dtype, xs, f,
                   jax.jit(lambda x: jnp.argmax(x, axis=0, keepdims=True).astype(jnp.uint32)))


GROUPS = {"arg": arg_cases, "movement": movement_cases, "top_k": top_k_cases, "scan": scan_cases, "reduce": reduce_cases, "cast": cast_cases, "join_split": join_split_cases,
          "gather_scatter": gather_scatter_cases}


def main():
    out_dir = sys.argv[1] if len(sys.argv) > 1 else "."
    chosen = sys.argv[2:] or list(GROUPS)
    os.makedirs(out_dir, exist_ok=True)
    rng = np.random.default_rng(0)
    copy = jax.jit(lambda x: jax.tree.map(lambda v: v.copy(), x))
    lines = [f"{time.strftime('%Y-%m-%dT%H:%M:%SZ', time.gmtime())}; jax {jax.__version__}; {jax.devices()[0]}"]
    print(lines[0], flush=True)
    points = []
    for group in chosen:
        try:
            for name, dtype, inputs, f_dml, f_jnp in GROUPS[group](rng):
                try:
                    jax.block_until_ready((f_dml(inputs[0]), f_jnp(inputs[0])))  # compiles; an API slip shows here
                    t = jax_device_times([("copy", lambda i: copy(inputs[i % 2])),
                                          ("dmljax", lambda i, f=f_dml: f(inputs[i % 2])),
                                          ("jnp", lambda i, f=f_jnp: f(inputs[i % 2]))], 2)
                except Exception:  # noqa: BLE001  (one case's failure is reported, the run goes on)
                    lines.append(f"{name}: FAILED {traceback.format_exc(limit=2)[-300:]}")
                    print(lines[-1], flush=True)
                    continue
                if not t:
                    continue
                ms = {k: v["s"] * 1e3 for k, v in t.items()}
                moved_in = _nbytes(inputs[0])
                moved = moved_in + _nbytes(jax.eval_shape(f_dml, inputs[0]))
                frac = (moved / ms["dmljax"]) / (2 * moved_in / ms["copy"])
                rec = {"op": name, "group": group, "dtype": np.dtype(dtype).name, "ms": ms, "bytes_moved": moved,
                       "copy_fraction": frac, "kernels": {k: v["kernels_per_call"] for k, v in t.items()}}
                points.append(rec)
                lines.append(f"{name:30s} {np.dtype(dtype).name:7s}: copy {ms['copy']:.3f} ms, dmljax {ms['dmljax']:.3f}, "
                             f"jnp {ms['jnp']:.3f}: time(dmljax)/time(jnp) {ms['dmljax'] / ms['jnp']:.3f}, "
                             f"bandwidth {frac:.2f} of copy's, kernels {rec['kernels']['dmljax']}/{rec['kernels']['jnp']}")
                print(lines[-1], flush=True)
        except Exception:  # noqa: BLE001
            lines.append(f"group {group}: FAILED {traceback.format_exc(limit=3)[-400:]}")
            print(lines[-1], flush=True)
    with open(os.path.join(out_dir, "results.json"), "w") as fh:
        json.dump({"points": points, "jax": jax.__version__, "device": str(jax.devices()[0]),
                   "method": ("CUPTI kernel durations via jax.profiler, 20 calls, 2 input sets; 2^28 elements "
                              "(2^24 rows for GATHER/SCATTER); bandwidth = (input + output bytes) / time against "
                              "the copy's 2 x input bytes / time")}, fh, indent=1)
    with open(os.path.join(out_dir, "results.md"), "w") as fh:
        fh.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
