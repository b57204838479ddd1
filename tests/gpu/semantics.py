"""Semantics on a GPU: every operator's GPU result against the CPU's and the float64 reference.

    python tests/gpu/semantics.py [OPERATOR ...]      (DML or short names; default: every operator)

on a machine with a GPU, from the repository root (GPU_CHECK_ON_CPU=1: a dry run of this script's
own code, CPU against CPU).

For every registered operator with a reference (each attribute set of its record in
tests/reference/<family>/<module>.py, plus the extra attributes in CASES), on random inputs plus specials
(NaN, ±inf, ±0, FLOAT32 denormals and the smallest normals), in FLOAT32 and FLOAT16, and in INT32, INT16, INT8, UINT32,
UINT16 and UINT8 where the operator takes them (random values over the whole range plus 0, ±1 and
the type's extremes: zero divisors, INT_MIN / -1, shifts by the width and more): the GPU result
against the CPU result (bit-identical where the operator is exact; within the record's ULP budget
otherwise) and against the float64 (or exact integer) reference. Prints one line per case and a
summary; exits 1 on any failure. Not a pytest module: CI has no GPU, and pytest only imports this
file. Needs only this checkout (not ../shared).
"""

import os
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

import jax  # noqa: E402
import numpy as np  # noqa: E402

import dmljax  # noqa: E402
from dmljax import DataType  # noqa: E402
from tests import catalog  # noqa: E402
from tests.compare import assert_matches, ulp_distance  # noqa: E402
from tests.reference.record import Attrs  # noqa: E402

REFERENCES = catalog.references()

SPECIALS32 = np.array([np.nan, np.inf, -np.inf, 0.0, -0.0, 1e-40, -1e-40, 1e-45, 3e38, -3e38, 1.0, -1.0], np.float32)

CHECKED_TYPES = (DataType.FLOAT32, DataType.FLOAT16, DataType.INT32, DataType.INT16, DataType.INT8,
                 DataType.UINT32, DataType.UINT16, DataType.UINT8)
"""The types checked where an operator's newest table lists them (64-bit types need x64 mode)."""

# Attribute sets checked besides each record's own (the reference takes the same keywords).
CASES = [
    ("DML_OPERATOR_ELEMENT_WISE_THRESHOLD", {"min": -0.25, "scale_bias": (0.75, 0.125)}),
    ("DML_OPERATOR_ELEMENT_WISE_CONSTANT_POW", {"exponent": 0.5}),
    ("DML_OPERATOR_ELEMENT_WISE_CONSTANT_POW", {"exponent": -2.5, "scale_bias": (2.0, 1.0)}),
]


ELEMENTS = {"resample": 1 << 10}
"""Families whose float64 references build dense per-axis interpolation matrices (outputs x
inputs): their inputs here are smaller than the others' 2^16 elements."""


def cases():
    """(operator, Attrs, numpy dtype, shape) for every registered operator with a reference and
    every checked type its newest table lists, each attribute set of its record (resolved for the
    shape: REDUCE's every-axis sets, SPLIT's sizes, CAST's output type), then CASES."""
    out = []
    for name, op in dmljax.registry().items():
        ref = REFERENCES.get(name)
        if ref is None:
            continue
        spec = op.spec
        n = ELEMENTS.get(spec.family, 1 << 16)
        shape = ref.case_shape(catalog.vector_shape(spec.support[0].tensors[catalog.main_tensor(spec)].dims, n))
        types = catalog.newest_types(spec)
        for dt in CHECKED_TYPES:
            if dt in types:
                extra = [Attrs(kw) for n, kw in CASES if n == name]
                out += [(name, attrs, dt.dtype, shape) for attrs in (*catalog.newest_sets(spec, ref, dt, shape), *extra)]
    return out


def _plain(spec, ref) -> bool:
    """Whether the inputs can be drawn here with specials: one array per input, all of one shape
    (not indices, a tensor array or a generator's none)."""
    return bool(spec.inputs) and ref.make_inputs is None and not any(t.array for t in spec.inputs)


def inputs(spec, ref, dtype, rng, n=None):
    """The inputs, of the fewest dimensions the newest table allows (or the shape the reference
    maps them to: VALUE_SCALE_2D's three channels)."""
    n = n or ELEMENTS.get(spec.family, 1 << 16)
    shape = ref.case_shape(catalog.vector_shape(spec.support[0].tensors[catalog.main_tensor(spec)].dims, n))
    return [x.reshape(shape) for x in _flat_inputs(spec, ref, dtype, rng, int(np.prod(shape)))]


def _flat_inputs(spec, ref, dtype, rng, n):
    outs = []
    for t in spec.inputs:
        dtype = np.dtype(dtype)
        if ref.role(t.dml_name) == "condition":
            outs.append(rng.choice(np.array([0, 1, 255], np.uint8), n))
            continue
        if np.issubdtype(dtype, np.integer):
            info = np.iinfo(dtype)
            x = rng.integers(int(info.min), int(info.max), n, dtype=dtype, endpoint=True)
            x[n // 2:] = rng.integers(max(int(info.min), -40), 41, n - n // 2).astype(dtype)  # small values too
            specials = np.array(sorted({0, 1, int(info.max), int(info.min), int(info.max) - 1}
                                       | ({-1, int(info.min) + 1} if info.min < 0 else {2})), dtype=object)
            k = len(specials)
            x[:k] = specials.astype(dtype)
            x[k: 2 * k] = rng.permutation(x[:k])
            pairs = np.repeat(specials, k) if len(outs) == 0 else np.tile(specials, k)  # every pair of two inputs
            x[2 * k: 2 * k + k * k] = pairs.astype(dtype)
            outs.append(x)
            continue
        x = (rng.standard_normal(n) * 10).astype(dtype)
        specials = SPECIALS32.astype(dtype) if dtype == np.float32 else np.clip(SPECIALS32, -6e4, 6e4).astype(dtype)
        k = len(SPECIALS32)
        pairs = np.repeat(specials, k) if len(outs) == 0 else np.tile(specials, k)  # every pair
        # as many of them as the reference's shape holds (a shape hook may give fewer elements)
        filler = np.concatenate([specials, rng.permutation(specials), pairs])[:n]
        x[:len(filler)] = filler
        if dtype == np.float32:
            d = min(1000, n // 4)
            x[n - d:] = (rng.standard_normal(d) * 1e-39).astype(np.float32)  # denormals
            # normals just above the flush boundary, where a result computed without a flush
            # of its own (a clamp, ELU's scales >= 1) must still hold no denormal
            tiny = np.finfo(np.float32).tiny
            e = min(1000, n // 8)
            x[n - d - e: n - d] = (rng.choice([-1, 1], e) * rng.uniform(1, 4, e) * tiny).astype(np.float32)
        outs.append(x)
    return outs


def _compare(spec, ref, attrs, args, on_gpu, on_cpu, candidates, exact, first, line, output=0):
    """One output: GPU against the reference, then GPU against CPU (bit-identical where the
    operator is exact; within the record's budget otherwise)."""
    out_dt = DataType.from_dtype(on_gpu.dtype)
    sizes = np.shape(args[0]) if args and not isinstance(args[0], list) else None
    # further outputs: indices (exact) or values (the record's budget: ADAM_OPTIMIZER's moments)
    budget = catalog.budget(spec, attrs, out_dt, sizes=sizes, args=args) if first or not exact else 0
    magnitude = catalog.output_magnitude(ref, args, attrs, output)
    assert_matches(on_gpu, candidates, out_dt, budget, "GPU vs reference", flush=not exact, magnitude=magnitude)
    if out_dt.is_float:
        both_nan = np.isnan(on_gpu) & np.isnan(on_cpu)
        d = ulp_distance(np.where(both_nan, 0, on_gpu).astype(on_gpu.dtype),
                         np.where(both_nan, 0, on_cpu).astype(on_cpu.dtype))
        bits_equal = int((on_gpu.view(np.uint8) == on_cpu.view(np.uint8)).all())
        same = int((d == 0).sum())
        print(f"{line} ok: GPU==CPU on {same}/{d.size} elements (max {int(d.max())} ULP, budget {budget}); "
              f"bit-identical arrays: {bool(bits_equal)}")
        if magnitude is not None:
            # a budget counted in ULP of the terms (LOG_SOFTMAX, REDUCE's SUM): GPU and CPU each
            # within it of the reference (above), so within twice it of each other
            assert_matches(on_gpu, [on_cpu.astype(np.float64)], out_dt, 2 * budget, "GPU vs CPU", magnitude=magnitude,
                           flush=not exact)
        elif not catalog.fusable(spec, attrs):
            # With a ScaleBias, x * Scale + Bias may be fused on one backend and not on the
            # other (XLA's CPU backend fuses under jit, its GPU backend does not); DirectML
            # allows both, and each was checked against both candidates above.
            # each within budget of the reference; an accumulation's order may differ between them
            limit = 2 * budget if ref.accumulates else budget
            assert d.max() <= limit, f"GPU and CPU differ by {int(d.max())} ULP"
    elif catalog.fusable(spec, attrs):
        # An integer ScaleBias is x * Scale + Bias in FLOAT32, fused or not by the backend before
        # it is truncated: both candidates were checked against the reference above.
        same = int((on_gpu == on_cpu).sum())
        print(f"{line} ok: GPU==CPU on {same}/{on_gpu.size} elements (a multiply-add, fused on one "
              "backend: each checked against both candidates)")
    else:
        assert np.array_equal(on_gpu, on_cpu), f"GPU and CPU differ on {int((on_gpu != on_cpu).sum())} elements"
        print(f"{line} ok: GPU and CPU bit-identical")


PAIRED_QUANTIZATION = ("DML_OPERATOR_ELEMENT_WISE_QUANTIZE_LINEAR", "DML_OPERATOR_QUANTIZE")


def paired_quantization(gpu, cpu, rng) -> int:
    """FLOAT16 to INT8, UINT8, INT4 and UINT4 (values in pairs on the GPU:
    linear_quantization.paired_quantized) for every FLOAT16 value, each against 64 scales (random
    positive and negative ones, FLOAT16 denormals and extremes, 0, +-inf and NaN) and zero points
    at the type's ends: ELEMENT_WISE_QUANTIZE_LINEAR (8 bits) with a scale and zero point per
    element, and QUANTIZE with one a row (64 rows), then an odd row length (elements one at a
    time); and FLOAT32 to INT4 and UINT4 (in pairs too) for 2^20 random values with specials and
    denormals against the same scales; the GPU's result against the CPU's, bit for bit. Returns the
    failures."""
    every = np.arange(65536, dtype=np.uint16).view(np.float16)
    finite = np.arange(1, 0x7C00, dtype=np.uint16).view(np.float16)
    scales = np.concatenate([rng.choice(finite, 40), -rng.choice(finite, 10),
                             np.array([1, 0.5, 3, 6e-8, 65504, 0.1, 0.05, 1 / 3, 0, -0.0, np.inf, -np.inf, np.nan],
                                      np.float16), rng.choice(finite, 1)]).astype(np.float16)
    x = np.tile(every, (len(scales), 1))
    failures = 0
    for it, zps in (("INT8", (3, -128, 127)), ("UINT8", (0, 255)), ("INT4", (1, -8, 7)), ("UINT4", (0, 15))):
        dt = DataType[it]
        for zp in zps:
            s_full = np.repeat(scales[:, None], x.shape[1], 1)
            z_full = np.full(x.shape, zp, dt.dtype)
            calls = [] if dt.bits == 4 else [  # ELEMENT_WISE_QUANTIZE_LINEAR: 8 bits
                ("ELEMENT_WISE_QUANTIZE_LINEAR", jax.jit(lambda x, s, z: dmljax.element_wise_quantize_linear(x, s, z)),
                 (x, s_full, z_full))]
            calls += [
                ("QUANTIZE, a scale a row", jax.jit(lambda x, s, z, it=it: dmljax.quantize(
                    x, [s, z], quantization_type="SCALE_ZERO_POINT", output_data_type=it)),
                 (x, scales[:, None], np.full((len(scales), 1), zp, dt.dtype))),
                ("QUANTIZE, odd rows", jax.jit(lambda x, s, z, it=it: dmljax.quantize(
                    x, [s, z], quantization_type="SCALE_ZERO_POINT", output_data_type=it)),
                 (x[:, :-1].reshape(-1, 65535)[:, :4095], scales[:, None], np.full((len(scales), 1), zp, dt.dtype))),
            ]
            for label, f, args in calls:
                on_gpu = np.asarray(f(*jax.device_put(args, gpu))).astype(np.int32)
                on_cpu = np.asarray(f(*jax.device_put(args, cpu))).astype(np.int32)
                bad = np.argwhere(on_gpu != on_cpu)
                line = f"FLOAT16 -> {it} zero point {zp:4d}, every FLOAT16 value, {label}"
                if len(bad):
                    failures += 1
                    i = tuple(bad[0])
                    print(f"{line} FAIL: {len(bad)} differ, e.g. x {args[0][i]!r}: GPU {on_gpu[i]}, CPU {on_cpu[i]}")
                else:
                    print(f"{line}: bit for bit")
    special = np.array([np.nan, np.inf, -np.inf, 0, -0.0, 1e-40, -1e-45, 3e38, 0.025, -0.075], np.float32)
    x32 = np.concatenate([special, (rng.standard_normal(1 << 20) * 4).astype(np.float32)])[: 1 << 20].reshape(64, -1)
    for it, zp in (("INT4", -3), ("UINT4", 8)):
        dt = DataType[it]
        f = jax.jit(lambda x, s, z, it=it: dmljax.quantize(x, [s, z], quantization_type="SCALE_ZERO_POINT",
                                                           output_data_type=it))
        args = (x32, scales[: len(x32)].astype(np.float32)[:, None], np.full((len(x32), 1), zp, dt.dtype))
        on_gpu = np.asarray(f(*jax.device_put(args, gpu))).astype(np.int32)
        on_cpu = np.asarray(f(*jax.device_put(args, cpu))).astype(np.int32)
        bad = int((on_gpu != on_cpu).sum())
        line = f"FLOAT32 -> {it} zero point {zp:4d}, 2^20 random values and specials, QUANTIZE, a scale a row"
        failures += bool(bad)
        print(f"{line} FAIL: {bad} differ" if bad else f"{line}: bit for bit")
    return failures


XLA_TANH = ("DML_OPERATOR_ELEMENT_WISE_TANH", "DML_OPERATOR_ACTIVATION_TANH", "DML_OPERATOR_ACTIVATION_SCALED_TANH")
"""Operators whose FLOAT32 formula takes XLA's own tanh on CUDA (trigonometry._tanh_f32)."""


def xla_tanh(gpu, patterns: int = 1 << 32) -> int:
    """XLA's FLOAT32 tanh on the GPU, which TANH and SCALED_TANH take there, against float64 for
    every FLOAT32 bit pattern with a normal or infinite input (denormals are flushed before it):
    within TANH's 6 ULP and a relative error under 2.72 * 2^-23 (the bound SCALED_TANH's 7-ULP
    budget rests on: trigonometry._tanh_f32), tanh(-0) = -0, +-1 at +-inf, NaN for NaN (the first
    ``patterns`` bit patterns: a dry run takes fewer). Returns the failures."""
    jnp = jax.numpy
    with jax.enable_x64(True), jax.default_device(gpu):
        @jax.jit
        def chunk(start):  # 2^26 bit patterns from start, on the GPU: (largest ULP error, relative, its x)
            x = jax.lax.bitcast_convert_type(start + jnp.arange(1 << 26, dtype=np.uint32), np.float32)
            normal = (jnp.abs(x) >= np.float32(2.0**-126)) & jnp.isfinite(x)
            y = jnp.tanh(x).astype(np.float64)
            r = jnp.tanh(x.astype(np.float64))
            size = jnp.maximum(jnp.abs(r), 2.0**-126)
            ulp = jnp.exp2(jnp.floor(jnp.log2(size)) - 23)  # FLOAT32's ULP at the exact value
            err = jnp.where(normal, jnp.abs(y - r) / ulp, 0.0)
            rel = jnp.where(normal, jnp.abs(y - r) / size, 0.0)
            return jnp.max(err), jnp.max(rel), x[jnp.argmax(err)]
        worst, worst_x, rel = 0.0, 0.0, 0.0
        for start in range(0, patterns, 1 << 26):
            e, r, xw = (float(v) for v in jax.device_get(chunk(np.uint32(start))))
            worst, worst_x = (e, xw) if e > worst else (worst, worst_x)
            rel = max(rel, r)
        special = np.asarray(jax.jit(jnp.tanh)(np.array([-0.0, np.inf, -np.inf, np.nan], np.float32)))
    ok_special = (np.signbit(special[0]) and special[0] == 0 and special[1] == 1 and special[2] == -1
                  and np.isnan(special[3]))
    inputs = "every FLOAT32 input" if patterns == 1 << 32 else f"{patterns} bit patterns"
    line = (f"XLA's FLOAT32 tanh, {inputs}: largest error {worst:.3f} ULP (at {worst_x!r}), "
            f"relative {rel / 2.0**-23:.3f} * 2^-23")
    if worst <= 6 and rel <= 2.72 * 2.0**-23 and ok_special:
        print(f"{line}: within TANH's 6 ULP and SCALED_TANH's bound; -0, +-inf and NaN kept")
        return 0
    print(f"{line} FAIL (budget 6 ULP, 2.72 * 2^-23 relative; specials {special.tolist()})")
    return 1


def main():
    only = set(sys.argv[1:])  # operator names (DML or short) to check; none: all
    gpu = [d for d in jax.devices() if d.platform != "cpu"]
    if os.environ.get("GPU_CHECK_ON_CPU"):  # a dry run of this script's own code, CPU against CPU
        gpu = jax.devices("cpu")
    cpu = jax.devices("cpu")[0]
    print(f"jax {jax.__version__}; devices: {jax.devices()}")
    if not gpu:
        print("no GPU: nothing to compare")
        return 0
    rng = np.random.default_rng(0)
    failures = 0
    todo = [c for c in cases() if not only or c[0] in only or c[0][13:] in only]
    for name, attrs, dtype, shape in todo:
        op = dmljax.get_operator(name)
        spec, ref = op.spec, REFERENCES[name]
        kwargs = dict(attrs.dml)
        types = catalog.tensor_types(spec, spec.support[0].level, DataType.from_dtype(np.dtype(dtype)))
        if _plain(spec, ref) and all(types.get(t.dml_name) == types[catalog.main_tensor(spec)] for t in spec.inputs):
            args = inputs(spec, ref, dtype, rng)  # one type for every input: drawn here with specials
        else:
            args = catalog.inputs_for(spec, ref, types, shape, rng, attrs)
        f = jax.jit(lambda *a: op(*a, **kwargs))
        on_gpu = jax.tree.map(np.asarray, f(*jax.device_put(args, gpu[0])))
        on_cpu = jax.tree.map(np.asarray, f(*jax.device_put(args, cpu)))
        several = isinstance(on_gpu, tuple)
        ref_kwargs = dict(attrs.ref_kwargs)
        if ref.output_type_arg:  # CAST: the reference takes the chosen output type
            ref_kwargs.update({k: v for k, v in kwargs.items() if k.endswith("_data_type")})
        want = ref.fn(*args, **ref_kwargs)
        line = f"{name[13:]:28s} {str(kwargs)[:40]:40s} {np.dtype(dtype).name:8s}"
        try:
            for k, (g, c) in enumerate(zip(*((on_gpu, on_cpu) if several else ((on_gpu,), (on_cpu,))))):
                cands = [np.asarray(w[k]) if several else w for w in want]
                exact = ref.selects(attrs) if k == 0 else np.asarray(cands[0]).dtype != np.float64
                _compare(spec, ref, attrs, args, g, c, cands, exact, k == 0, f"{line}{f' output {k}' if several else ''}",
                         output=k)
        except AssertionError as e:
            failures += 1
            print(f"{line} FAIL: {str(e)[:400]}")
    checked = len(todo)
    if not only or only & (set(PAIRED_QUANTIZATION) | {n[13:] for n in PAIRED_QUANTIZATION}):
        failures += paired_quantization(gpu[0], cpu, rng)
        checked += 1
    if not only or only & (set(XLA_TANH) | {n[13:] for n in XLA_TANH}):
        failures += xla_tanh(gpu[0])
        checked += 1
    print(f"{checked - failures} passed, {failures} failed")
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
