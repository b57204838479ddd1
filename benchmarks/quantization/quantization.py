"""The quantized operators against what a user would write in jax.numpy (and torch's integer
product, where torch sees a GPU), side by side in one run.

    python benchmarks/quantization/quantization.py [--out DIR] [GROUP ...]   (SMOKE=1: small shapes, any machine)
    python benchmarks/quantization/quantization.py int4_gemm int4_gemm_blocks   (the 4-bit GEMM alone)

Groups (default: all):
- ``integer_gemm``: MATRIX_MULTIPLY_INTEGER, INT8 x INT8 -> INT32, M = N = K = 8192 (2048 on a
  CPU), without and with zero points, against ``jnp.matmul(a, b, preferred_element_type=int32)``
  and ``torch._int_mm``. Goal: at least 0.95x jnp's speed, within 1.2x torch's time.
- ``requantized``: QUANTIZED_LINEAR_MATRIX_MULTIPLY at the same size and QUANTIZED_LINEAR_CONVOLUTION
  (batch 32, 256 -> 256 channels, 14 x 14, 3 x 3, padding 1; batch 4 on a CPU) against the
  integer product alone (MATRIX_MULTIPLY_INTEGER, CONVOLUTION_INTEGER). Goal: at most 1.1x the
  integer product's time, the requantization fused.
- ``int4_gemm``: MatMulNBits' pattern, DEQUANTIZE of INT4 weights (4096 x 4096, one FLOAT16 scale
  per block of 32 along K) then GEMM with FLOAT16 activations of batch 1 to 16 (1024 x 1024 on a
  CPU): ``dmljax.dequantize_gemm`` (the fused kernel on a GPU, dmljax/_src/kernels/dequantize_gemm.py)
  with the weights {K, N} and {N, K} (MatMulNBits' layout, with zero points), beside the two
  operators unfused, the jnp twin and FLOAT16 GEMM of the same shape with FLOAT16 weights; the
  fused result's distance from the unfused one in FLOAT16 ULP. Goal: faster than the FLOAT16 GEMM,
  where reading the weights dominates.
- ``int4_gemm_blocks`` (a GPU only; about 2 minutes): the kernel's settings (SPLIT_K x BLOCK_N x
  BLOCK_K x warps, pruned: ``_candidates``) for both weight layouts at batch 1, the fastest of each
  timed again at batch 1 and 16 (some at 4 stages too) beside FLOAT16 GEMM, the unfused pair and
  ``dmljax.dequantize_gemm`` as the module routes it: what the kernel module's SETTINGS and
  FASTER_UP_TO are set from (its last lines say what to set them to).
- ``elementwise``: ELEMENT_WISE_QUANTIZE_LINEAR and QUANTIZE from FLOAT32 and FLOAT16 to INT8 and
  UINT8, ELEMENT_WISE_DEQUANTIZE_LINEAR and DEQUANTIZE from INT8, QUANTIZE and DEQUANTIZE of INT4,
  over 2^24 and 2^26 elements (2^20 and 2^24 on a CPU), per-tensor scales and zero points
  broadcast, as bandwidth (bytes read + written / time) against a device copy of a FLOAT32 array
  of the same element count (``x + 0`` would be folded: the copy is ``jnp.copy(x) * 1``), and each
  quantization's time against its jnp twin's (``jnp.clip(jnp.round(x / s) + zp, Min, Max)``), and
  the rounded quotient's two ways side by side (the FLOAT64 one the CPU takes, the FLOAT32 one
  a GPU takes: dmljax/_src/linear_quantization.py), each saturated to INT8. On
  a CPU each figure is the median of 5 rounds that time every case in turn. Goal: at least 90% of
  the copy's bandwidth.
- ``elementwise_blocks`` (a GPU only): the element-wise kernels' settings
  (kernels/elementwise_quantization.py: elements and warps a program), each kernel called directly
  at the largest size beside the copy: what BLOCK, WARPS, NIBBLE_BLOCKS and NIBBLE_WARPS are set
  from.

Per-call time (device time where the backend records it: benchmarks/common.py), two input sets.
Writes <group>.json and <group>.md for each group run to DIR (default:
benchmarks/results/<device>/quantization).
"""

import concurrent.futures
import dataclasses
import itertools
import os
import re
import sys
import time
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parents[2])]

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402

import common  # noqa: E402
import dmljax  # noqa: E402
from dmljax._src import linear_quantization, numerics  # noqa: E402  (the quotient's two paths)
from dmljax._src.kernels import dequantize_gemm as int4_kernel  # noqa: E402  (its constants, swept)
from dmljax._src.kernels import elementwise_quantization as ew_kernel  # noqa: E402  (its constants, swept)

GPU = jax.devices()[0].platform == "gpu"
N = 256 if common.SMOKE else (8192 if GPU else 2048)
CONV = (2, 16, 16, 8) if common.SMOKE else ((32, 256, 256, 14) if GPU else (4, 256, 256, 14))  # batch, in, out, size
NBITS_K = 256 if common.SMOKE else (4096 if GPU else 1024)
BLOCK = 32
BATCHES = (1, 4, 8, 16)
ELEMENTWISE_SIZES = (1 << 12,) if common.SMOKE else ((1 << 24, 1 << 26) if GPU else (1 << 20, 1 << 24))
ROUNDS = 1 if common.SMOKE or GPU else 5  # device times are steady; a shared CPU's host clock is not
I32 = jnp.int32


def main():
    _, groups = common.arguments()
    groups = groups or ["integer_gemm", "requantized", "int4_gemm", "int4_gemm_blocks", "elementwise",
                        "elementwise_blocks"]
    report = common.Report("quantization", "per-call time (benchmarks/common.py), two input sets")
    rng = np.random.default_rng(0)
    for g in groups:
        report.group = g
        {"integer_gemm": integer_gemm, "requantized": requantized, "int4_gemm": int4_gemm,
         "int4_gemm_blocks": int4_gemm_blocks, "elementwise": elementwise,
         "elementwise_blocks": elementwise_blocks}[g](rng, report)
    report.write()


def _ints(rng, shape, dtype=np.int8):
    info = np.iinfo(dtype)
    return jnp.asarray(rng.integers(info.min, info.max + 1, shape, dtype=np.int64).astype(dtype))


def _point(report, group, name, v, base=None, **fields):
    ratio = "" if base is None else f"  {v['s'] / base['s']:.3f}x"
    report.point(f"{group:28s} {name:50s} {v['s'] * 1e3:9.4f} ms{ratio}", group=group, variant=name,
                 ms=v["s"] * 1e3, kernels=v["kernels_per_call"], method=v["method"], **fields)


# ---------------------------------------------------------------------------------- integer GEMM
def integer_gemm(rng, report):
    sets = [(_ints(rng, (N, N)), _ints(rng, (N, N))) for _ in range(2)]
    zp = [jnp.asarray(np.int8(3)), jnp.asarray(np.int8(-5))]
    variants = [
        ("dmljax.matrix_multiply_integer", jax.jit(lambda a, b: dmljax.matrix_multiply_integer(a, b))),
        ("dmljax.matrix_multiply_integer zero points", jax.jit(lambda a, b: dmljax.matrix_multiply_integer(
            a, b, jnp.broadcast_to(zp[0], (N, 1)), jnp.broadcast_to(zp[1], (1, N))))),
        ("jnp.matmul preferred_element_type=int32", jax.jit(lambda a, b: jnp.matmul(a, b, preferred_element_type=I32))),
    ]
    t = common.times([(name, lambda i, f=f: f(*sets[i % 2])) for name, f in variants])
    base = t["jnp.matmul preferred_element_type=int32"]
    for name, v in t.items():
        _point(report, f"INT8 {N}^3", name, v, base, tops=2 * N ** 3 / v["s"] / 1e12)
    a, b = (np.asarray(x) for x in sets[0])
    rows = min(64, N)
    want = a[:rows].astype(np.int64) @ b.astype(np.int64)
    got = np.asarray(variants[0][1](*sets[0]))[:rows]
    report.line(f"exact against int64 on the first {rows} rows: {bool((got == want).all())}")
    line = _torch_int_mm(a, b)
    if line:
        report.line(line)


def _torch_int_mm(a, b) -> str | None:
    try:
        import torch
    except ImportError:
        return None
    if not torch.cuda.is_available():
        return None
    ta, tb = torch.from_numpy(a).cuda(), torch.from_numpy(b).cuda()
    ms = common.torch_ms(lambda: torch._int_mm(ta, tb), calls=20)
    return (f"torch._int_mm INT8 {N}^3: {ms:.4f} ms (CUDA events over 20 calls, torch {torch.__version__}); "
            f"{2 * N ** 3 / ms / 1e9:.0f} TOPS")


# ---------------------------------------------------------------------------------- requantized
def requantized(rng, report):
    f32 = np.float32
    sets = [(_ints(rng, (N, N)), _ints(rng, (N, N))) for _ in range(2)]

    def scalar(v, dtype, shape):
        return jnp.broadcast_to(jnp.asarray(np.asarray(v, dtype)), shape)

    mm = [("dmljax.matrix_multiply_integer", jax.jit(lambda a, b: dmljax.matrix_multiply_integer(a, b))),
          ("dmljax.quantized_linear_matrix_multiply", jax.jit(lambda a, b: dmljax.quantized_linear_matrix_multiply(
              a, scalar(0.02, f32, (1, 1)), b, scalar(0.01, f32, (1, 1)), scalar(0.5, f32, (1, 1)),
              scalar(1, np.int8, (1, 1)), scalar(-2, np.int8, (1, 1)), scalar(4, np.int8, (1, 1))))),
          ("jnp twin (int32 product, FLOAT32 requantization)", jax.jit(lambda a, b: jnp.clip(jnp.round(
              (jnp.matmul(a, b, preferred_element_type=I32) - 0).astype(f32) * f32(0.02 * 0.01 / 0.5)) + 4,
              -128, 127).astype(jnp.int8)))]
    t = common.times([(name, lambda i, f=f: f(*sets[i % 2])) for name, f in mm])
    base = t["dmljax.matrix_multiply_integer"]
    for name, v in t.items():
        _point(report, f"matmul INT8 {N}^3", name, v, base)
    n, ci, co, s = CONV
    xs = [(_ints(rng, (n, ci, s, s)), _ints(rng, (co, ci, 3, 3))) for _ in range(2)]
    geometry = dict(strides=(1, 1), dilations=(1, 1), start_padding=(1, 1), end_padding=(1, 1), group_count=1)
    conv = [("dmljax.convolution_integer", jax.jit(lambda x, w: dmljax.convolution_integer(x, None, w, **geometry))),
            ("dmljax.quantized_linear_convolution", jax.jit(lambda x, w: dmljax.quantized_linear_convolution(
                x, scalar(0.02, f32, (1, 1, 1, 1)), scalar(0, np.int8, (1, 1, 1, 1)), w, scalar(0.01, f32, (1, 1, 1, 1)),
                None, None, scalar(0.5, f32, (1, 1, 1, 1)), scalar(4, np.int8, (1, 1, 1, 1)), **geometry))),
            ("lax twin (INT8 convolution, FLOAT32 result)", jax.jit(lambda x, w: lax.conv_general_dilated(
                x, w, (1, 1), ((1, 1), (1, 1)), preferred_element_type=jnp.float32)))]  # cuDNN: no INT32 result
    t = common.times([(name, lambda i, f=f: f(*xs[i % 2])) for name, f in conv])
    base = t["dmljax.convolution_integer"]
    for name, v in t.items():
        _point(report, f"conv INT8 {n}x{ci}x{s}x{s} -> {co} 3x3", name, v, base)


# ---------------------------------------------------------------------------------- int4 GEMM
SCALE = "DML_QUANTIZATION_TYPE_SCALE"
SCALE_ZP = "DML_QUANTIZATION_TYPE_SCALE_ZERO_POINT"


def _int4_weights(rng, k, n):
    """INT4 weights {K, N} with scales {K / BLOCK, N}, and UINT4 weights {N, K} (MatMulNBits'
    layout) with scales and zero points {N, K / BLOCK}."""
    w = jnp.asarray(rng.integers(-8, 8, (k, n)).astype(jnp.int4))
    scale = jnp.asarray((rng.random((k // BLOCK, n)) * 0.02 + 0.01).astype(np.float16))
    wt = jnp.asarray(rng.integers(0, 16, (n, k)).astype(jnp.uint4))
    scale_t = jnp.asarray((rng.random((n, k // BLOCK)) * 0.02 + 0.01).astype(np.float16))
    zp_t = jnp.asarray(rng.integers(0, 16, (n, k // BLOCK)).astype(jnp.uint4))
    return w, scale, wt, scale_t, zp_t


def _ulp16(a, b) -> int:
    """The largest distance of two FLOAT16 arrays in units in the last place (as integers on a
    line through 0)."""
    def line(v):
        i = np.asarray(v).view(np.int16).astype(np.int64)
        return np.where(i < 0, -(i & 0x7FFF), i)
    return int(np.abs(line(a) - line(b)).max())


WEIGHT_SETS = 2 if common.SMOKE or not GPU else 8
"""Weight sets the 4-bit groups rotate through, call after call, for the "from memory" figures:
on a GPU 8 (FLOAT16: 256 MiB, INT4: 64 MiB with scales and zero points more, each over an H200's
60 MB of L2), as a model's layers read their weights from device memory once a token. One set
alone stays in L2 from call to call (the "one set" figures)."""


ROTATIONS = (("one set", 1), (f"{WEIGHT_SETS} sets", WEIGHT_SETS))
"""(label, sets): the one set kept in L2, and WEIGHT_SETS sets rotated."""


def int4_gemm(rng, report):
    k = n = NBITS_K
    sets = [_int4_weights(rng, k, n) for _ in range(WEIGHT_SETS)]
    w16s = [jnp.asarray(rng.standard_normal((k, n)).astype(np.float16)) for _ in range(WEIGHT_SETS)]
    budget = dmljax.gemm.spec.budget(dmljax.DataType.FLOAT16, (1, k))
    fused = jax.jit(lambda x, w, s: dmljax.dequantize_gemm(x, w, [s], quantization_type=SCALE))
    unfused = jax.jit(lambda x, w, s: dmljax.gemm(x, dmljax.dequantize(w, [s], quantization_type=SCALE)))
    fused_t = jax.jit(lambda x, w, s, z: dmljax.dequantize_gemm(x, w, [s, z], quantization_type=SCALE_ZP,
                                                                trans_b="TRANSPOSE"))
    unfused_t = jax.jit(lambda x, w, s, z: dmljax.gemm(
        x, dmljax.dequantize(w, [s, z], quantization_type=SCALE_ZP), trans_b="TRANSPOSE"))
    twin = jax.jit(lambda x, w, s: jnp.matmul(x, w.astype(jnp.float16) * jnp.repeat(s, BLOCK, axis=0),
                                              preferred_element_type=jnp.float32).astype(jnp.float16))
    gemm16, matmul16 = jax.jit(lambda x, w: dmljax.gemm(x, w)), jax.jit(jnp.matmul)
    variants = [  # (name, call of X and a weight set's index)
        ("dmljax.dequantize_gemm INT4 (fused)", lambda x, i: fused(x, *sets[i][:2])),
        ("dmljax.dequantize INT4 + dmljax.gemm", lambda x, i: unfused(x, *sets[i][:2])),
        ("dmljax.dequantize_gemm UINT4 {N, K} + zero points", lambda x, i: fused_t(x, *sets[i][2:])),
        ("dmljax.dequantize UINT4 {N, K} + dmljax.gemm", lambda x, i: unfused_t(x, *sets[i][2:])),
        ("jnp twin: INT4 -> FLOAT16 * scale, matmul", lambda x, i: twin(x, *sets[i][:2])),
        ("dmljax.gemm FLOAT16 weights", lambda x, i: gemm16(x, w16s[i])),
        ("jnp.matmul FLOAT16 weights", lambda x, i: matmul16(x, w16s[i])),
    ]
    for batch in BATCHES:
        xs = [jnp.asarray(rng.standard_normal((batch, k)).astype(np.float16)) for _ in range(2)]
        for label, count in ROTATIONS:
            t = common.times([(name, lambda i, f=f, c=count: f(xs[i % 2], i % c)) for name, f in variants],
                             n_sets=max(2, count))
            base = t["dmljax.gemm FLOAT16 weights"]
            for name, v in t.items():
                _point(report, f"batch {batch:2d}, {label:7s}, K = N = {k}", name, v, base, batch=batch,
                       weight_sets=count)
        d = _ulp16(variants[0][1](xs[0], 0), variants[1][1](xs[0], 0))
        d_t = _ulp16(variants[2][1](xs[0], 0), variants[3][1](xs[0], 0))
        report.point(f"batch {batch:2d}: fused against unfused, at most {d} and {d_t} FLOAT16 ULP apart "
                     f"(GEMM's budget at K = {k}: {budget:g} ULP of the terms' magnitude)",
                     batch=batch, variant="fused - unfused (ULP)", ulp=d, ulp_transposed=d_t)


SWEEP = dict(split_k=(1, 2, 4, 8, 16), block_n=(16, 32, 64, 128, 256), block_k=(32, 64, 128, 256, 512), warps=(2, 4, 8))
"""The settings ``int4_gemm_blocks`` draws from (at 3 stages; 4 stages for the fastest few), pruned
by ``_candidates``."""
PROGRAMS = (128, 1024)
"""The fewest and most programs (output column blocks x slices of K) a setting may give at the
sweep's weights: below 128 an H200's 132 SMs idle; above 1024 a program has little to do."""
MIN_TILES = 2
"""The fewest tiles of K a slice of a split K may hold (fewer: the loop has nothing to pipeline)."""
SMALL_TILE = 8192
"""2 warps are tried only where a program's weight tile (BLOCK_N x BLOCK_K elements) is at most
this (a larger one needs the 4 warps' registers)."""
FINALISTS, WITH_4_STAGES = 6, 3
"""Per layout, the fastest settings at batch 1 that are timed again at batch 1 and 16 beside the
references, and how many of them are timed at 4 stages too."""
GRID_LINES = 12
"""The grid's fastest settings a layout printed (all of them are in the JSON)."""
COMPILE_BUDGET_S = 90
"""Compiling the grid stops starting new settings after this (those left are reported)."""
COMPILE_THREADS = min(8, os.cpu_count() or 1)
"""Settings compiled side by side (XLA's compiler releases Python's lock)."""


def _candidates(n: int, k: int, trans: bool) -> list:
    """The grid's settings for a layout at weights of N x K, pruned: BLOCK_N at least 32 with the
    weights {K, N} (a program's product is BLOCK_N / 2 columns wide, and Triton's at least 16);
    each SPLIT_K only where it gives that many slices of at least MIN_TILES tiles; PROGRAMS; 2
    warps only for a tile of at most SMALL_TILE elements, 8 only for one of at least that. In SMOKE
    runs, the first four unpruned."""
    out = []
    for split, bn, bk, warps in itertools.product(*SWEEP.values()):
        if not trans and bn < 32 or warps < 4 and bn * bk > SMALL_TILE or warps > 4 and bn * bk < SMALL_TILE:
            continue
        settings = int4_kernel.Settings(bn, bk, split_k=split, warps=warps, stages=3)
        per, count = int4_kernel.slices(k, settings)
        programs = -(-n // bn) * count
        if common.SMOKE or (count == split and (split == 1 or per >= MIN_TILES)
                            and PROGRAMS[0] <= programs <= PROGRAMS[1]):
            out.append(settings)
    # the module's settings first, then nearest 4 programs an SM, so that a budget cut leaves the outliers
    out.sort(key=lambda st: (abs(np.log2(-(-n // st.block_n) * st.split_k / 512)), st.warps != 4))
    module = int4_kernel.SETTINGS[int4_kernel.layout(trans)]
    return [module] + [st for st in (out[:3] if common.SMOKE else out) if st != module]


def _compile_all(jobs, budget_s: float) -> dict:
    """``{key: compiled function, or the reason it is missing}`` for ``jobs`` ``(key, fn, args)``,
    compiled side by side; a job not started within ``budget_s`` is left out."""
    deadline = time.monotonic() + budget_s

    def build(fn, args):
        if time.monotonic() > deadline:
            return "not compiled: the group's compile budget ran out"
        try:
            return common.compiled(fn, *args)
        except Exception as e:  # noqa: BLE001  (a setting Triton cannot compile is reported, the sweep goes on)
            return f"did not compile: {str(e).splitlines()[0][:200]}"

    with concurrent.futures.ThreadPoolExecutor(COMPILE_THREADS) as pool:
        futures = [(key, pool.submit(build, fn, args)) for key, fn, args in jobs]
        return {key: f.result() for key, f in futures}


def int4_gemm_blocks(rng, report):
    """The kernel's settings swept at batch 1 (the kernel pads X's rows to 16: batch 1 and 16 do
    the same work but for X's loads), the fastest of each layout timed again at batch 1 and 16,
    some at 4 stages too, beside FLOAT16 GEMM, the unfused pair and ``dmljax.dequantize_gemm`` as
    the module routes it."""
    if not GPU and not common.SMOKE:
        report.line("int4_gemm_blocks: the kernel's settings are timed on a GPU only")
        return
    started = time.monotonic()
    k = n = NBITS_K
    sets = [_int4_weights(rng, k, n) for _ in range(WEIGHT_SETS)]  # rotated: the weights read from memory
    w16s = [jnp.asarray(rng.standard_normal((k, n)).astype(np.float16)) for _ in range(WEIGHT_SETS)]
    layouts = {"{K, N}": (False, [st[:2] for st in sets]), "{N, K}": (True, [st[2:] for st in sets])}
    rotated = max(2, WEIGHT_SETS)
    for name, (trans, _) in layouts.items():
        report.line(f"the module's settings, {name}: {int4_kernel.SETTINGS[name].describe()}; taken by "
                    f"dmljax.dequantize_gemm up to {int4_kernel.FASTER_UP_TO[name]} rows")
    xs = {b: [jnp.asarray(rng.standard_normal((b, k)).astype(np.float16)) for _ in range(2)] for b in (1, 16)}

    def kernel(trans, settings):
        return lambda x, *wsz: int4_kernel.dequantize_gemm_rows(x, *wsz, trans_b=trans, out_dtype=jnp.float16,
                                                                settings=settings, interpret=not GPU)

    lists = [[(name, st) for st in _candidates(n, k, trans)] for name, (trans, _) in layouts.items()]
    grid = [pair for pairs in itertools.zip_longest(*lists) for pair in pairs if pair]  # the layouts in turn
    built = _compile_all([((name, st, 1), kernel(layouts[name][0], st), (xs[1][0],) + layouts[name][1][0])
                          for name, st in grid], COMPILE_BUDGET_S)
    report.line(f"grid: {len(grid)} settings at batch 1 ({sum(not isinstance(v, str) for v in built.values())} "
                f"compiled, {COMPILE_THREADS} side by side) in {time.monotonic() - started:.0f} s")
    for (name, st, _), v in built.items():
        if isinstance(v, str):
            report.line(f"{name} {st.describe()}: {v}")

    def timed(keys, batch):
        calls = [(key, lambda i, f=built[key], a=layouts[key[0]][1]: f(xs[batch][i % 2], *a[i % len(a)]))
                 for key in keys if not isinstance(built.get(key), str)]
        return {key: v["s"] for key, v in common.times(calls, n_sets=rotated).items()}

    t1 = timed([key for key in built], 1)
    shown = dict.fromkeys(layouts, 0)
    for (name, st, _), s in sorted(t1.items(), key=lambda kv: (kv[0][0], kv[1])):
        shown[name] += 1  # every setting in the JSON, the fastest GRID_LINES of each layout printed
        text = f"grid, batch  1, {name} {st.describe():50s} {s * 1e3:9.4f} ms" if shown[name] <= GRID_LINES else None
        report.point(text, group="grid", batch=1, layout=name, ms=s * 1e3, **dataclasses.asdict(st))
    finals = {}
    for name in layouts:
        ranked = [st for (lay, st, _), _s in sorted(t1.items(), key=lambda kv: kv[1]) if lay == name]
        finals[name] = list(dict.fromkeys(ranked[:FINALISTS] + [dataclasses.replace(st, stages=4)
                                                                for st in ranked[:WITH_4_STAGES]]))
    jobs = [((name, st, b), kernel(layouts[name][0], st), (xs[b][0],) + layouts[name][1][0])
            for b in (1, 16) for name in layouts for st in finals[name] if (name, st, b) not in built]
    built.update(_compile_all(jobs, COMPILE_BUDGET_S))
    references = {
        "FLOAT16 GEMM (dmljax.gemm, FLOAT16 weights {K, N})": (jax.jit(lambda x, w: dmljax.gemm(x, w)),
                                                               [(w,) for w in w16s]),
        "{K, N}: dmljax.dequantize + dmljax.gemm": (jax.jit(lambda x, w, s: dmljax.gemm(
            x, dmljax.dequantize(w, [s], quantization_type=SCALE))), layouts["{K, N}"][1]),
        "{N, K}: dmljax.dequantize + dmljax.gemm": (jax.jit(lambda x, w, s, z: dmljax.gemm(
            x, dmljax.dequantize(w, [s, z], quantization_type=SCALE_ZP), trans_b="TRANSPOSE")), layouts["{N, K}"][1]),
        "{K, N}: dmljax.dequantize_gemm (the module's route)": (jax.jit(lambda x, w, s: dmljax.dequantize_gemm(
            x, w, [s], quantization_type=SCALE)), layouts["{K, N}"][1]),
        "{N, K}: dmljax.dequantize_gemm (the module's route)": (jax.jit(lambda x, w, s, z: dmljax.dequantize_gemm(
            x, w, [s, z], quantization_type=SCALE_ZP, trans_b="TRANSPOSE")), layouts["{N, K}"][1]),
    }
    best = {}
    for batch in (1, 16):
        calls = [(ref, lambda i, f=f, a=a: f(xs[batch][i % 2], *a[i % len(a)])) for ref, (f, a) in references.items()]
        keys = [(name, st, batch) for name in layouts for st in finals[name]
                if not isinstance(built.get((name, st, batch)), str)]
        calls += [(key, lambda i, f=built[key], a=layouts[key[0]][1]: f(xs[batch][i % 2], *a[i % len(a)]))
                  for key in keys]
        timing = common.times(calls, n_sets=rotated)
        t = {key: v["s"] for key, v in timing.items()}
        gemm16 = t[next(iter(references))]
        where = f"batch {batch:2d}, K = N = {k}"
        for ref in references:
            _point(report, where, ref, timing[ref], timing[next(iter(references))], batch=batch)
        for name in layouts:
            ranked = sorted((key for key in keys if key[0] == name), key=t.get)
            for key in ranked:
                st = key[1]
                report.point(f"{where:28s} {name} {st.describe():50s} {t[key] * 1e3:9.4f} ms  "
                             f"{t[key] / gemm16:.3f}x FLOAT16 GEMM", group="final", batch=batch, layout=name,
                             ms=t[key] * 1e3, of_gemm16=t[key] / gemm16, **dataclasses.asdict(st))
            if ranked:
                unfused = t[f"{name}: dmljax.dequantize + dmljax.gemm"]
                best.setdefault(name, []).append((batch, ranked[0][1], t[ranked[0]], unfused, gemm16))
    for name, rows in best.items():
        for batch, st, s, unfused, gemm16 in rows:
            report.line(f"fastest {name} at batch {batch:2d}: {st.describe()}: {s * 1e3:.4f} ms, "
                        f"{s / gemm16:.2f}x FLOAT16 GEMM ({gemm16 * 1e3:.4f} ms), {s / unfused:.2f}x the unfused "
                        f"pair ({unfused * 1e3:.4f} ms)")
        st = min(rows, key=lambda r: r[2])[1]
        faster = [batch for batch, _, s, unfused, _ in rows if s < unfused]
        report.line(f"for dmljax/_src/kernels/dequantize_gemm.py: SETTINGS[{name!r}] = {st!r}; faster than the "
                    f"unfused pair at batch "
                    f"{faster or 'none'} of (1, 16)")
    report.line(f"int4_gemm_blocks took {time.monotonic() - started:.0f} s")


# ---------------------------------------------------------------------------------- element-wise
def _pairs_cast(a):
    """FLOAT16 to INT8 with the elements read in pairs as 32-bit words and written in pairs as 16-bit
    ones (the values of ``a.astype(int8)`` where they are in range): the bandwidth XLA's GPU code
    reaches for this pattern of bytes, where the plain conversion reads one FLOAT16 at a time."""
    w = lax.bitcast_convert_type(a.reshape(-1, 2), jnp.uint32)
    low, high = (lax.bitcast_convert_type(h.astype(jnp.uint16), jnp.float16).astype(jnp.int32).astype(jnp.uint32)
                 for h in (w & 0xFFFF, w >> 16))
    return lax.bitcast_convert_type(((low & 255) | ((high & 255) << 8)).astype(jnp.uint16), jnp.int8).reshape(a.shape)


def _elementwise_cases(rng, n):
    """(name, function, input sets, bytes moved per element) at ``n`` elements."""
    x32 = [jnp.asarray(rng.standard_normal(n).astype(np.float32)) for _ in range(2)]
    x16 = [jnp.asarray(v.astype(jnp.float16)) for v in x32]
    q = [_ints(rng, (n,)) for _ in range(2)]
    q4 = [jnp.asarray(rng.integers(-8, 8, n).astype(jnp.int4)) for _ in range(2)]
    cases = [("copy FLOAT32", jax.jit(lambda a: jnp.copy(a) * 1), x32, 8)]  # (the multiply keeps it a kernel)
    # the plain conversion between each pair of types below: the same bytes read and written by XLA's
    # own conversion (not the device's limit for FLOAT16 inputs: see the cast by pairs)
    for x, ft, fb in ((x32, "FLOAT32", 4), (x16, "FLOAT16", 2)):
        for it in ("INT8", "UINT8"):
            cases.append((f"cast {ft} -> {it}", jax.jit(lambda a, dt=jnp.dtype(it.lower()): a.astype(dt)), x, fb + 1))
    cases += [("cast FLOAT32 -> INT4", jax.jit(lambda a: a.astype(jnp.int4)), x32, 4.5),
              ("cast INT8 -> FLOAT32", jax.jit(lambda a: a.astype(jnp.float32)), q, 5),
              ("cast INT4 -> FLOAT32", jax.jit(lambda a: a.astype(jnp.float32)), q4, 4.5)]
    for x, ft, fb in ((x32, "FLOAT32", 4), (x16, "FLOAT16", 2)):
        f = x[0].dtype.type
        for it, lo, hi, zp in (("INT8", -128, 127, 3), ("UINT8", 0, 255, 128)):
            dt = jnp.dtype(it.lower())
            s_full = jnp.broadcast_to(f(0.05), (n,))
            z_full = jnp.broadcast_to(jnp.asarray(zp, dt), (n,))
            s1, z1 = jnp.full((1,), 0.05, f), jnp.full((1,), zp, dt)
            cases += [
                (f"dmljax.element_wise_quantize_linear {ft} -> {it}", jax.jit(
                    lambda a, s=s_full, z=z_full: dmljax.element_wise_quantize_linear(a, s, z)), x, fb + 1),
                (f"dmljax.quantize {ft} -> {it}", jax.jit(lambda a, s=s1, z=z1, it=it: dmljax.quantize(
                    a, [s, z], quantization_type="DML_QUANTIZATION_TYPE_SCALE_ZERO_POINT", output_data_type=it)),
                 x, fb + 1),
                (f"jnp twin: quantize {ft} -> {it}", jax.jit(
                    lambda a, lo=lo, hi=hi, zp=zp, dt=dt: jnp.clip(jnp.round(a.astype(jnp.float32) / jnp.float32(0.05))
                                                                  + zp, lo, hi).astype(dt)), x, fb + 1),
            ]
    s32, z8 = jnp.broadcast_to(jnp.float32(0.05), (n,)), jnp.broadcast_to(jnp.int8(3), (n,))
    s1, z1 = jnp.full((1,), 0.05, jnp.float32), jnp.full((1,), 3, jnp.int8)

    def saturated(r):
        return lax.min(numerics.max_num(r + 3, -128.0), jnp.float32(127)).astype(jnp.int8)

    cases += [  # the two ways of the rounded quotient, whichever the platform picks
        ("the FLOAT64 path (the CPU's and CUDA's) FLOAT32 -> INT8", jax.jit(lambda a: saturated(
            jnp.round(linear_quantization.divide(numerics.flush_denormals(a), s32)))), x32, 5),
        ("the FLOAT32 path (a TPU's) FLOAT32 -> INT8", jax.jit(lambda a: saturated(
            linear_quantization.rounded_quotient(a, s32, False))), x32, 5),
    ]
    cases += [
        ("dmljax.element_wise_dequantize_linear INT8 -> FLOAT32", jax.jit(
            lambda a: dmljax.element_wise_dequantize_linear(a, s32, z8)), q, 5),
        ("dmljax.dequantize INT8 -> FLOAT32", jax.jit(lambda a: dmljax.dequantize(
            a, [s1, z1], quantization_type="DML_QUANTIZATION_TYPE_SCALE_ZERO_POINT")), q, 5),
        ("jnp twin: dequantize INT8 -> FLOAT32", jax.jit(
            lambda a: (a.astype(jnp.int32) - 3).astype(jnp.float32) * jnp.float32(0.05)), q, 5),
        ("dmljax.quantize FLOAT32 -> INT4", jax.jit(lambda a: dmljax.quantize(
            a, [s1], quantization_type="DML_QUANTIZATION_TYPE_SCALE", output_data_type="INT4")), x32, 4.5),
        ("dmljax.quantize FLOAT16 -> INT4", jax.jit(lambda a: dmljax.quantize(
            a, [s1.astype(jnp.float16)], quantization_type="DML_QUANTIZATION_TYPE_SCALE", output_data_type="INT4")),
         x16, 2.5),
        ("cast FLOAT16 -> INT8 by pairs (32-bit words in, 16-bit out)", jax.jit(_pairs_cast), x16, 3),
        ("dmljax.dequantize INT4 -> FLOAT32", jax.jit(lambda a: dmljax.dequantize(
            a, [s1], quantization_type="DML_QUANTIZATION_TYPE_SCALE")), q4, 4.5),
        ("dmljax.dequantize INT4 -> FLOAT16", jax.jit(lambda a: dmljax.dequantize(
            a, [s1.astype(jnp.float16)], quantization_type="DML_QUANTIZATION_TYPE_SCALE")), q4, 2.5),
    ]
    return cases


def elementwise_blocks(rng, report):
    """The element-wise kernels' settings (kernels/elementwise_quantization.py: elements a program
    and warps) at the largest size, each called directly, beside the FLOAT32 copy: what BLOCK,
    WARPS and NIBBLE_BLOCKS are set from."""
    if not GPU and not common.SMOKE:
        report.line("elementwise_blocks: the kernels' settings are timed on a GPU only")
        return
    n = ELEMENTWISE_SIZES[-1]
    x32 = [jnp.asarray(rng.standard_normal(n).astype(np.float32)) for _ in range(2)]
    x16 = [v.astype(jnp.float16) for v in x32]
    q4 = [jnp.asarray(rng.integers(-8, 8, n).astype(jnp.int4)) for _ in range(2)]
    s16, s32, z8 = jnp.full((1,), 0.05, jnp.float16), jnp.full((1,), 0.05, jnp.float32), jnp.full((1,), 3, jnp.int8)
    report.line(f"the module's settings: BLOCK {ew_kernel.BLOCK}, WARPS {ew_kernel.WARPS}, NIBBLE_BLOCKS "
                f"{ew_kernel.NIBBLE_BLOCKS}, NIBBLE_WARPS {ew_kernel.NIBBLE_WARPS}")
    saved = ew_kernel.BLOCK, ew_kernel.WARPS, ew_kernel.NIBBLE_BLOCKS, ew_kernel.NIBBLE_WARPS
    cases = [("copy FLOAT32", jax.jit(lambda a: jnp.copy(a) * 1), x32, 8)]
    try:
        for block, warps in itertools.product((1024, 2048, 4096, 8192, 16384), (2, 4, 8, 16)):
            if warps * 32 * 4 > block or n % block:  # fewer than 4 elements a thread, or no whole blocks
                continue
            ew_kernel.BLOCK, ew_kernel.WARPS = block, warps
            ew_kernel.NIBBLE_BLOCKS, ew_kernel.NIBBLE_WARPS = (block,), warps
            q = jax.jit(lambda a: ew_kernel.quantize_half(a, s16, z8, jnp.int8, interpret=not GPU))
            d = jax.jit(lambda a: ew_kernel.dequantize_nibbles(a, s32, None, interpret=not GPU))
            # compiled now, while the module's constants hold these settings
            cases += [(f"quantize_half FLOAT16 -> INT8, {block} elements, {warps} warps", q.lower(x16[0]).compile(),
                       x16, 3),
                      (f"dequantize_nibbles INT4 -> FLOAT32, {block} elements, {warps} warps",
                       d.lower(q4[0]).compile(), q4, 4.5)]
    finally:
        ew_kernel.BLOCK, ew_kernel.WARPS, ew_kernel.NIBBLE_BLOCKS, ew_kernel.NIBBLE_WARPS = saved
    t = common.times([(name, lambda i, f=f, a=a: f(a[i % 2])) for name, f, a, _ in cases])
    copy_bw = 8 * n / t["copy FLOAT32"]["s"]
    for name, _, _, bytes_per in cases:
        v = t[name]
        bw = bytes_per * n / v["s"]
        report.point(f"2^{n.bit_length() - 1} {name:62s} {v['s'] * 1e3:9.4f} ms  {bw / copy_bw:6.1%} of the copy's",
                     variant=name, elements=n, ms=v["s"] * 1e3, of_copy=bw / copy_bw, method=v["method"])


def elementwise(rng, report):
    report.line(f"per-call time: the median of {ROUNDS} rounds, each timing every case in turn (the copy "
                "first); bandwidth = bytes read + written per element x elements / time, against the FLOAT32 "
                "copy's 8 bytes per element, and against the plain cast between the same types (the same bytes "
                "moved by XLA's own conversion; from FLOAT16, XLA reads one element at a time, and the cast by "
                "pairs shows the device's bandwidth for those bytes)")
    for n in ELEMENTWISE_SIZES:
        cases = _elementwise_cases(rng, n)
        rounds = [common.times([(name, lambda i, f=f, a=a: f(a[i % 2])) for name, f, a, _ in cases])
                  for _ in range(ROUNDS)]
        t = {name: dict(rounds[0][name], s=float(np.median([r[name]["s"] for r in rounds]))) for name, *_ in cases}
        copy_bw = 8 * n / t["copy FLOAT32"]["s"]
        for name, _, _, bytes_per in cases:
            v = t[name]
            bw = bytes_per * n / v["s"]
            twin = t.get(re.sub(r"^dmljax\.(element_wise_quantize_linear|quantize) ", "jnp twin: quantize ", name))
            vs_twin = f"  {v['s'] / twin['s']:5.2f}x the twin's time" if twin and twin is not v else ""
            size = "2^" + str(n.bit_length() - 1)
            types = re.search(r"(\w+) -> (\w+)", name)
            cast = t.get(f"cast {types[1]} -> {types[2]}") if types and not name.startswith("cast") else None
            vs_cast = f"  {cast['s'] / v['s']:6.1%} of the cast's" if cast else ""
            report.point(f"{size:6s} {name:58s} {v['s'] * 1e3:9.4f} ms  {bw / 1e9:8.1f} GB/s  "
                         f"{bw / copy_bw:6.1%} of the copy's{vs_cast}{vs_twin}", variant=name, elements=n,
                         ms=v["s"] * 1e3, gbps=bw / 1e9, of_copy=bw / copy_bw,
                         of_cast=(cast["s"] / v["s"]) if cast else None,
                         of_twin_time=(v["s"] / twin["s"]) if vs_twin else None,
                         kernels=v["kernels_per_call"], method=v["method"])


if __name__ == "__main__":
    main()
