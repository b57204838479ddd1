"""Fuzzing the public surface: every registered operator, and ``dmljax.compile_operator``, called
with random and malformed tensors, attributes, descriptors, feature levels and flags.

The calls are built from each operator's record (``op.spec``), so an operator added to the
registry is fuzzed without being named here. Each example is labelled by construction, by an
oracle written from the records and DirectML's rules (not from the validation code):

* valid: the call must return arrays of the shape and dtype the record gives its outputs;
* invalid: it must raise ``dmljax.ValidationError`` naming the operator;
* a wrong call signature (a required attribute left out, an unknown keyword): Python's TypeError.

Nothing else may escape (no OverflowError, RecursionError, MemoryError, JAX's TypeError, ...),
and a message is at most ``MAX_MESSAGE`` characters. Most calls go through ``jax.eval_shape``
(shapes up to 2^33 elements cost nothing); small ones also run for real, at top level and inside
``jax.jit``/``jax.vmap``.

Seeds are fixed (``derandomize=True``). The examples per test: 3 in the fast tier, for half of
the operators (a fixed hash picks them; the README's command must stay within 6 minutes on two
cores: 25 examples took 95 s of CPU there at 161 operators), 20 for every operator in the slow
tier (tests/tiers.py), or ``DMLJAX_FUZZ_EXAMPLES`` (a nightly-size run is
``DMLJAX_FUZZ_EXAMPLES=5000``; every public surface has run at 1,500 or more).
"""

from __future__ import annotations

import fractions
import math
import os
from typing import Any

import jax
import jax.numpy as jnp
import ml_dtypes
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

import dmljax
from dmljax import DataType, FeatureLevel, FusedActivation, ScalarUnion, ScaleBias
from dmljax._src.fused import FUSABLE, FUSED_OUTPUT_TYPES
from dmljax._src.errors import quote
from dmljax._src.spec import INFERRED, REQUIRED, SameDataType, SameSizes
from tests import tiers
from tests.doubles import BadHash, BadRepr, FakeArray, RaisingArray

EXAMPLES = int(os.environ.get("DMLJAX_FUZZ_EXAMPLES", "0")) or tiers.by_tier(3, 20)
"""Examples an operator (or surface) a test draws: 3 in the fast tier, 20 in the slow one (hypothesis
derandomized: the same ones each run; DMLJAX_FUZZ_EXAMPLES sets another count for a longer run)."""
pytestmark = pytest.mark.fuzz
MAX_MESSAGE = 2000
SETTINGS = settings(max_examples=EXAMPLES, derandomize=True, deadline=None, database=None,
                    suppress_health_check=list(HealthCheck))

OPS = dmljax.registry()
MAX_ELEMENTS = 2**32 - 1
F32_OVERFLOW = 2**128 - 2**103  # the least magnitude a float32 rounds to infinity from
CONCRETE_LIMIT = 64  # elements: arrays this small are also made and run for real

VALID = "valid"
INVALID = "invalid"
SIGNATURE = "signature"  # Python's TypeError for missing or unexpected arguments
EITHER = "either"  # validity the oracle cannot judge (an operator's extra checks): no crash


# ------------------------------------------------------------------------------- nasty values
def _self_list():
    x = [1.0]
    x.append(x)
    return x


def _self_dict():
    d = {"Scale": 1.0}
    d["Bias"] = d
    return d


def _deep_tuple(n=5000):
    t = ()
    for _ in range(n):
        t = (t,)
    return t


NASTY: list[Any] = [
    10**400, -10**400, 10**5000, 2**64, 2**128, F32_OVERFLOW, F32_OVERFLOW - 1, 2**31, -2**31 - 1, 7, 0,
    1e39, -1e39, math.inf, -math.inf, math.nan, -0.0, 5e-324, 1e-40, 3.4028235e38, 0.5,
    "1.5", "", "nan", "x" * 5000, np.str_("1.5"), b"\x00" * 8, bytearray(8),
    np.longdouble("1e4000"), np.longdouble("1.5"), np.longdouble(2**60) + np.longdouble(0.5),
    np.float64(1e300), np.float16(1), np.float32(-0.0), np.int64(7), np.uint64(2**64 - 1), np.int8(-3),
    np.complex64(1 + 1j), 1 + 2j, True, False, np.bool_(True), None, fractions.Fraction(1, 3),
    [], [1.0], [1.0, 2.0], (1.0, 2.0, 3.0), (0.5, math.nan), {}, {"Scale": 1.0}, {"Scale": 1.0, "Bias": 2.0},
    {"Scale": 1.0, "Bias": 2.0, "X": 0}, {1: 2, "a": 3}, {"Bytes": 8}, {"Bytes": 10**12}, {"Bytes": "abcdefgh"},
    {"Bytes": [0] * 8}, {"Bytes": [256] + [0] * 7}, {"Bytes": b"\x01" * 8}, {"Float32": 1.0}, {"UInt8": 300},
    {"Int9": 1}, {"Type": "ACTIVATION_ELU"}, {"Type": "ACTIVATION_ELU", "Desc": []}, {"Type": 1},
    {"Type": "ACTIVATION_ELU", "Desc": np.zeros(2)}, {"Type": "ACTIVATION_ELU", "Desc": ""},
    _self_list(), _self_dict(), _deep_tuple(), list(range(10**4)),
    np.ma.masked_array([1.0], mask=[True]), np.ma.masked, np.array(1.0), np.zeros(3), np.zeros(()),
    jnp.ones(()), FakeArray(), RaisingArray(), BadRepr(), BadHash(), object(), int, np.float32,
    ScaleBias(1.0, 2.0), ScaleBias("a", 1.0), ScalarUnion("FLOAT32", 1.0), ScalarUnion("UINT8", 3),
    ScalarUnion("FLOAT16", 0.1), FusedActivation("ACTIVATION_ELU", alpha=0.5), FusedActivation("ACTIVATION_RELU"),
    FusedActivation("ACTIVATION_ELU", beta=1.0), FusedActivation("NOT_AN_OPERATOR"), FusedActivation("ACTIVATION_ELU", alpha=[1]),
    DataType.FLOAT32, DataType.UINT8, "FLOAT32", "uint8", "DML_TENSOR_DATA_TYPE_INT32", "BFLOAT16", 9, 13, 99,
    np.dtype(np.float32), FeatureLevel.FL_2_0, "ELEMENT_WISE_CLIP", "ACTIVATION_SCALED_ELU",
]


class Case(tuple):
    """A generated case; its repr (what hypothesis prints for a failing example) is safe on the
    values that have no working repr of their own."""

    def __repr__(self):
        return "Case(" + ", ".join(_show(v) for v in self) + ")"


def _show(v) -> str:
    if isinstance(v, dict):
        return "{" + ", ".join(f"{_show(k)}: {_show(x)}" for k, x in v.items()) + "}"
    if isinstance(v, tuple) and len(v) == 2 and isinstance(v[1], np.dtype):
        return f"array{v[0]}:{v[1]}"
    return quote(v)


def pick(values):
    """One of ``values`` by index (hypothesis would hash and compare the values themselves,
    which BadHash and the self-referential containers do not allow)."""
    return st.sampled_from(range(len(values))).map(_Item(values))


class _Item:
    """values[i], with a repr that does not print the values (hypothesis prints the strategy)."""

    def __init__(self, values):
        self.values = list(values)

    def __call__(self, i):
        return self.values[i]

    def __repr__(self):
        return f"<one of {len(self.values)} values>"


def nasty():
    return pick(NASTY)


# --------------------------------------------------------------------- the oracle (from the records)
def is_real(v) -> bool:
    return isinstance(v, (int, float, np.integer, np.floating, fractions.Fraction)) and not isinstance(
        v, (bool, np.bool_))


def float_attr_ok(v) -> bool:
    """A DirectML FLOAT: a real number whose float32 rounding is finite (or that is infinite)."""
    if not is_real(v):
        return False
    if isinstance(v, (float, np.floating)):
        if not np.isfinite(v):
            return True
        with np.errstate(over="ignore"):
            return bool(np.isfinite(np.float32(v)))
    return abs(fractions.Fraction(int(v)) if isinstance(v, (int, np.integer)) else v) < F32_OVERFLOW


def float_attr_value(v) -> float:
    return float(v)


def scale_bias_ok(v) -> bool:
    if v is None:
        return True
    if isinstance(v, dict):
        return set(v) == {"Scale", "Bias"} and float_attr_ok(v["Scale"]) and float_attr_ok(v["Bias"])
    if isinstance(v, (tuple, list)):
        return len(v) == 2 and all(float_attr_ok(x) for x in v)
    return False


def data_type_of(v) -> DataType | None:
    """What DataType a MinMaxDataType-like value names (an independent reading of the spellings)."""
    if isinstance(v, DataType):
        return v
    if isinstance(v, str):
        key = v.strip().upper().removeprefix("DML_TENSOR_DATA_TYPE_")
        return DataType.__members__.get(key)
    if isinstance(v, int) and not isinstance(v, bool):
        return next((d for d in DataType if d.value == v), None)
    if isinstance(v, np.dtype):
        return DataType.from_dtype(v)
    if isinstance(v, type):  # np.float32, jnp.int8, and Python's int and float as NumPy reads them
        try:
            return DataType.from_dtype(np.dtype(v))
        except TypeError:
            return None
    return None


def union_ok(v, dt: DataType) -> bool:
    """A DML_SCALAR_UNION read as dt: a number the type holds (integers exactly and in range;
    floats rounded, finite unless infinite), a one-member mapping or a ScalarUnion of dt."""
    if dt in (DataType.UINT4, DataType.INT4):
        return False  # DML_SCALAR_UNION has no 4-bit reading
    if isinstance(v, ScalarUnion):
        return v.data_type is dt
    if isinstance(v, dict):
        if len(v) != 1:
            return False
        (k, x), = v.items()
        if not isinstance(k, str):
            return False
        if k.lower() == "bytes":
            return (isinstance(x, (bytes, bytearray)) and len(x) == 8) or (
                isinstance(x, (list, tuple)) and len(x) == 8
                and all(isinstance(b, int) and not isinstance(b, bool) and 0 <= b <= 255 for b in x))
        names = {"int8": "INT8", "uint8": "UINT8", "int16": "INT16", "uint16": "UINT16", "int32": "INT32",
                 "uint32": "UINT32", "int64": "INT64", "uint64": "UINT64", "float32": "FLOAT32", "float64": "FLOAT64"}
        return names.get(k.lower()) == dt.name and union_ok(x, dt)
    if not is_real(v):
        return False
    if dt.is_integer:
        q = exact(v) if not isinstance(v, (float, np.floating)) or np.isfinite(v) else None
        if q is None or q.denominator != 1:
            return False
        info = np.iinfo(dt.dtype)
        return int(info.min) <= q <= int(info.max)
    if isinstance(v, (float, np.floating)) and not np.isfinite(v):
        return True
    big = np.finfo(dt.dtype).max
    ulp = big - np.nextafter(big, dt.dtype.type(0))
    threshold = exact(big) + exact(ulp) / 2  # from here on, the type rounds to infinity
    return abs(exact(v)) < threshold


def exact(v) -> fractions.Fraction:
    if isinstance(v, (int, np.integer)):
        return fractions.Fraction(int(v))
    if isinstance(v, fractions.Fraction):
        return v
    return fractions.Fraction(*v.as_integer_ratio())


def fused_ok(v, out_dt: DataType | None, level: FeatureLevel) -> bool | None:
    """A fused activation for ELEMENT_WISE_ADD1: an implemented activation that may be fused into
    it and exists at the call's feature level, NULL tensors, valid members; only with a
    FLOAT32/FLOAT16 output. None: either (the activation's own checks judge its members)."""
    if v is None:
        return True
    fusable = {n for n, hosts in FUSABLE.items() if hosts is None and n in OPS}
    if isinstance(v, str):
        typ, desc = v, {}
    elif isinstance(v, FusedActivation):
        typ, desc = v.type, dict(v.attrs)
    elif isinstance(v, dict):
        if "Type" not in v or not set(v) <= {"Type", "Desc"} or not isinstance(v["Type"], str):
            return False
        desc = v.get("Desc")
        if desc is None:
            desc = {}
        if not isinstance(desc, dict):
            return False
        typ = v["Type"]
    else:
        return False
    try:
        name = dmljax.canonical_name(typ)
    except dmljax.ValidationError:
        return False
    if name not in fusable or out_dt not in FUSED_OUTPUT_TYPES:
        return False
    act = OPS[name].spec
    if act.introduced > level:  # CELU, say, is DML_FEATURE_LEVEL_3_0's: not fusable at 2.0
        return False
    members = {}
    for p in act.params:
        members[p.dml_name] = p
        members[p.arg] = p
    seen = set()
    for k, x in desc.items():
        if k in ("InputTensor", "OutputTensor", "input", "output"):
            if x is not None:
                return False
            continue
        p = members.get(k)
        if p is None or p.dml_name in seen:
            return False
        seen.add(p.dml_name)
        if p.type != "FLOAT" or not float_attr_ok(x):
            return False
    if not all(p.dml_name in seen or p.default is not REQUIRED for p in act.params):
        return False
    # what the activation's page says beyond the tables (SOFTPLUS's Steepness >= 1 before
    # DML_FEATURE_LEVEL_6_4, say): its own checks judge the members given
    return None if act.extra_checks and seen else True


# ------------------------------------------------------------------------------ strategies
DML_DTYPES = [t.dtype for t in DataType if t not in (DataType.UINT4, DataType.INT4)]
OTHER_DTYPES = [np.dtype(np.bool_), np.dtype(ml_dtypes.bfloat16), np.dtype(np.complex64),
                np.dtype(ml_dtypes.float8_e4m3fn), np.dtype(">f4"), np.dtype(ml_dtypes.int4)]

LEVELS_VALID = list(FeatureLevel) + ["2.1", "2_1", "DML_FEATURE_LEVEL_3_0", " fl_5_0 ", 0x6400, None]
LEVELS_INVALID = ["9.9", "", "2.2", 2.1, 3, [1], 10**400, "x" * 3000, object(), b"2.1", np.int64(0x2100), True]


def rarely(draw, n: int) -> bool:
    """True about once in ``n`` draws (on the largest value: hypothesis favours 0)."""
    return draw(st.integers(0, n - 1)) == n - 1


@st.composite
def shapes(draw, dims=(1, 8)):
    """A shape of ``dims`` dimensions mostly (0 to 9 otherwise), with sizes 1 to 4 mostly, a
    zero size now and then, and huge sizes (only ever made as ShapeDtypeStructs)."""
    ndim = draw(st.integers(*dims)) if not rarely(draw, 8) else draw(st.integers(0, 9))
    out = []
    for _ in range(ndim):
        kind = draw(st.integers(0, 24))
        out.append(0 if kind == 0 else draw(st.integers(5, 70000)) if kind <= 2 else draw(st.integers(1, 4)))
    return tuple(out)


def fill(shape, dtype) -> np.ndarray:
    """A small concrete array with awkward values (zero, negatives, NaN, infinity, denormals)."""
    n = math.prod(shape)
    pattern = np.array([0.0, 1.0, -1.0, 3.0, -7.0, 0.5, math.nan, math.inf, -math.inf, -0.0, 1e-40, 255.0, 1e5])
    vals = np.resize(pattern, n)
    with np.errstate(all="ignore"):
        if np.dtype(dtype).kind in "iub":
            vals = np.nan_to_num(vals, nan=0, posinf=2, neginf=-2).astype(np.int64)
        return vals.astype(dtype).reshape(shape)


@st.composite
def op_call(draw, name):
    """A call of the operator ``name``: (inputs, kwargs, how, x64, expected outcome, expected
    outputs). Each part is valid most of the time, so that about a third of the calls are."""
    spec = OPS[name].spec
    x64 = draw(st.booleans())
    outcome = VALID

    def spoil(kind=INVALID):
        nonlocal outcome
        if kind == SIGNATURE or outcome == SIGNATURE:
            outcome = SIGNATURE
        elif kind == EITHER and outcome == VALID:
            outcome = EITHER
        elif kind == INVALID and outcome in (VALID, EITHER):
            outcome = INVALID

    # Feature level: the argument (valid or not), or left to the default (the newest).
    if rarely(draw, 12):
        level_arg = draw(pick(LEVELS_INVALID))
        spoil()
        level = FeatureLevel.newest()
    else:
        level_arg = draw(st.sampled_from(LEVELS_VALID))
        level = FeatureLevel.parse(level_arg) if level_arg is not None else FeatureLevel.newest()
    row = spec.support_at(level)
    if row is None:
        spoil()

    # How the call is made.
    how = draw(st.sampled_from(["eval_shape", "eval_shape", "vmap", "direct", "jit"]))

    # Tensors: a base shape, per-group data types (the page's SameDataType groups), mismatches.
    first = (spec.inputs or spec.outputs)[0].dml_name  # a generator: its output's dimension counts
    base = draw(shapes(row.tensors[first].dims if row else (1, 8)))
    groups: dict[str, int] = {}
    for c in spec.constraints:
        if isinstance(c, SameDataType):
            ins = [n for n in c.tensors if spec.tensor(n).kind == "input"]
            for n in ins:
                groups[n] = groups.get(ins[0], len(groups))
    group_dtype: dict[int, np.dtype] = {}
    inputs: dict[str, Any] = {}
    sigs: dict[str, tuple[tuple[int, ...], np.dtype]] = {}
    for t in spec.inputs:
        if t.optional and draw(st.booleans()):
            inputs[t.dml_name] = None
            continue
        if rarely(draw, 20):
            inputs[t.dml_name] = draw(nasty().filter(lambda v: not isinstance(v, (np.ndarray, jax.Array)))
                                      | st.just(jax.ShapeDtypeStruct((2,), np.float32)))
            spoil()
            continue
        allowed = list(row.tensors[t.dml_name].data_types) if row else list(DataType)[:11]
        g = groups.get(t.dml_name)
        if g is not None and g in group_dtype and not rarely(draw, 12):
            dtype = group_dtype[g]
        elif not rarely(draw, 8):
            dtype = draw(st.sampled_from(allowed)).dtype if allowed else np.dtype(np.float32)
        else:
            dtype = draw(st.sampled_from(DML_DTYPES + OTHER_DTYPES))
        if g is not None:
            group_dtype.setdefault(g, dtype)
        shape = base if not rarely(draw, 12) else draw(shapes())
        sigs[t.dml_name] = (shape, np.dtype(dtype))
        if rarely(draw, 25):
            inputs[t.dml_name] = np.ma.masked_array(np.zeros((1,) * len(shape), dtype))
            spoil()
        else:
            inputs[t.dml_name] = sigs[t.dml_name]  # made into an array below

    # Tensor validity, from the record: types, dimension counts, sizes, 64-bit mode, constraints.
    for name, (shape, dtype) in sigs.items():
        dt = DataType.from_dtype(dtype)
        if dt is None or row is None or dt not in row.tensors[name].data_types:
            spoil()
        elif dt.needs_x64 and not x64:
            spoil()
        lo, hi = row.tensors[name].dims if row else (1, 8)
        if not lo <= len(shape) <= hi or 0 in shape or math.prod(shape) > MAX_ELEMENTS:
            spoil()
    for c in spec.constraints:
        present = [n for n in c.tensors if n in sigs]
        if isinstance(c, SameDataType) and len({sigs[n][1] for n in present}) > 1:
            spoil()
        if isinstance(c, SameSizes) and len({sigs[n][0] for n in present}) > 1:
            spoil()

    # Outputs: Sizes and DataType from the constraints or the caller's choice.
    kwargs: dict[str, Any] = {}
    expected = []
    for t in spec.outputs:
        shape = dt = None
        for c in spec.constraints:
            src = next((n for n in c.tensors if n in sigs), None)
            if src is None or t.dml_name not in c.tensors:
                continue
            if isinstance(c, SameSizes):
                shape = sigs[src][0]
            else:
                dt = DataType.from_dtype(sigs[src][1])
        if t.default_data_type is not None:
            constrained = dt  # the DataType a SameDataType constraint gives it (DIAGONAL_MATRIX1's), or None
            choice = draw(st.sampled_from([None, "name", "member", "dml", "dtype", "nasty"]))
            allowed = list(row.tensors[t.dml_name].data_types) if row else [DataType.FLOAT32]
            choice_dt = draw(st.sampled_from(allowed))
            if choice is None and t.default_data_type is REQUIRED:
                dt = None
                spoil(SIGNATURE)  # CAST's output_data_type has no default
            elif choice is None:
                dt = constrained if t.default_data_type is INFERRED else t.default_data_type
            elif choice == "nasty":
                raw = draw(nasty())
                kwargs[t.data_type_arg] = raw
                dt = data_type_of(raw)
                if isinstance(raw, type) or isinstance(raw, FeatureLevel):
                    dt = None
            else:
                kwargs[t.data_type_arg] = {"name": choice_dt.name, "member": choice_dt, "dml": choice_dt.dml_name,
                                           "dtype": choice_dt.dtype}[choice]
                dt = choice_dt
            if choice is not None and constrained is not None and dt is not constrained:
                spoil()  # the caller's DataType against the constraint's: refused, never overridden
        if t.sizes_arg:  # the caller's Sizes (SLICE_GRAD's, ONE_HOT's): the record's checks judge them
            kwargs[t.sizes_kwarg] = draw(st.one_of(
                st.just(tuple(base)), st.lists(st.integers(-2, 5), max_size=9).map(tuple), nasty()))
            shape = None
            spoil(EITHER)
        if getattr(spec, "infer_outputs", None) is not None and (shape is None or dt is None):
            spoil(EITHER)  # the record computes this output (REDUCE's axes, GEMM's M x N): not judged here
        elif dt is None or row is None or dt not in row.tensors[t.dml_name].data_types or (dt.needs_x64 and not x64):
            spoil()
        if shape is not None and row is not None:
            lo, hi = row.tensors[t.dml_name].dims
            if not lo <= len(shape) <= hi:
                spoil()
        expected.append((shape, dt))

    # Attributes, each from its kind's strategy: valid values, or nasty ones judged by the oracle.
    out_dt = expected[0][1] if expected else None
    for p in spec.params:
        target = sigs.get(p.converted_to) if p.converted_to and p.converted_to in sigs else None
        if p.converted_to and spec.tensor(p.converted_to).kind == "output":
            target_dt = out_dt
        else:
            target_dt = DataType.from_dtype(target[1]) if target else None
        mode = draw(st.sampled_from(["valid"] * 5 + ["omit", "nasty"]))
        if mode == "omit":
            if p.default is REQUIRED:
                spoil(SIGNATURE)
            continue
        if p.type == "FLOAT":
            if mode == "valid":
                v = draw(st.one_of(st.floats(width=32), st.integers(-2**31, 2**31),
                                   st.floats(width=32).map(np.float32), st.floats(width=16).map(np.float16),
                                   st.integers(-2**100, 2**100), st.floats(allow_nan=False, max_value=3.4e38, min_value=-3.4e38)))
            else:
                v = draw(nasty())
            ok = float_attr_ok(v)
            if ok and target_dt is not None and target_dt.is_integer and math.isnan(float_attr_value(v)):
                ok = False
        elif p.type == "DML_SCALE_BIAS":
            if mode == "valid":
                f = st.floats(width=32)
                v = draw(st.one_of(st.none(), st.tuples(f, f), st.tuples(f, f).map(list),
                                   st.builds(ScaleBias, f, f), st.builds(lambda a, b: {"Scale": a, "Bias": b}, f, f)))
            else:
                v = draw(nasty())
            ok = scale_bias_ok(v)
        elif p.type == "DML_SCALAR_UNION":
            if mode == "valid" and target_dt is not None and target_dt.bits >= 8:
                info = target_dt.dtype
                if target_dt.is_integer:
                    lim = np.iinfo(info)
                    num = st.integers(int(lim.min), int(lim.max))
                    v = draw(st.one_of(num, num.map(lambda i: info.type(i)),
                                       st.integers(-2**53, 2**53).filter(lambda i: lim.min <= i <= lim.max).map(float),
                                       num.map(lambda i: {target_dt.name.title().replace("Uint", "UInt"): i}),
                                       num.map(lambda i: ScalarUnion(target_dt, i)),
                                       st.integers(int(lim.min), int(lim.max)).map(
                                           lambda i: {"Bytes": list(np.asarray(i, info).tobytes().ljust(8, b"\0"))})))
                else:
                    width = {2: 16, 4: 32, 8: 64}[info.itemsize]
                    num = st.floats(width=width)
                    v = draw(st.one_of(num, num.map(lambda x: ScalarUnion(target_dt, x)),
                                       st.integers(-2048, 2048),
                                       num.map(lambda x: {"Bytes": np.asarray(x, info).tobytes().ljust(8, b"\0")})))
            else:
                v = draw(nasty() | st.integers(-2**70, 2**70) | st.floats())
            ok = union_ok(v, target_dt) if target_dt is not None else False
        elif p.type == "DML_TENSOR_DATA_TYPE":
            if mode == "valid" and target_dt is not None:
                v = draw(st.sampled_from([None, target_dt, target_dt.name, target_dt.name.lower(), target_dt.dml_name,
                                          target_dt.value, target_dt.dtype]))
            else:
                v = draw(nasty())
            ok = v is None or (data_type_of(v) is not None and data_type_of(v) is target_dt)
            if isinstance(v, bool):
                ok = False
        elif p.type == "DML_OPERATOR_DESC*":
            fusable = sorted(n for n, hosts in FUSABLE.items() if hosts is None and n in OPS)
            if mode == "valid" and fusable:
                name = draw(st.sampled_from(fusable))
                act = OPS[name].spec
                attrs = {q.dml_name: draw(st.floats(width=32)) for q in act.params if draw(st.booleans())}
                form = draw(st.sampled_from(["object", "dict", "name", "none"]))
                v = {"object": lambda: FusedActivation(name, **attrs),
                     "dict": lambda: {"Type": name, "Desc": attrs},
                     "name": lambda: name, "none": lambda: None}[form]()
            else:
                v = draw(nasty())
            ok = fused_ok(v, out_dt, level)
        else:  # a kind without a strategy here (UINT, INT, BOOL, arrays, enums): nasty values only
            v = draw(nasty())
            ok = None
        kwargs[p.arg] = v
        if ok is None:
            spoil(EITHER)
        elif not ok:
            spoil()
    if spec.extra_checks:  # what the page says beyond the tables (SOFTMAX's effective rank too)
        spoil(EITHER)

    if spec.math:
        half = draw(pick([None, True, False] * 4 + [1, 0, np.bool_(True), "True"]))
        if half is not None:
            kwargs["allow_half_precision_computation"] = half
            if not isinstance(half, bool):
                spoil()
    elif rarely(draw, 20):
        kwargs["allow_half_precision_computation"] = False  # not a parameter of this operator
        spoil(SIGNATURE)
    if level_arg is not None:
        kwargs["feature_level"] = level_arg
    if rarely(draw, 30):
        kwargs["not_a_parameter"] = 1
        spoil(SIGNATURE)
    return Case((inputs, kwargs, how, x64, outcome, expected))


def _names_the_operator(e: dmljax.ValidationError, spec) -> None:
    assert e.operator == spec.python_name and e.enum_name == spec.enum_name, str(e)[:300]
    assert len(str(e)) <= MAX_MESSAGE, len(str(e))
    assert e.violations, str(e)


def run_call(spec, op, inputs, kwargs, how, x64):
    """Make the call as ``how`` says; arrays of at most CONCRETE_LIMIT elements are concrete,
    larger ones go through jax.eval_shape as ShapeDtypeStructs. Returns (outputs, batch)."""
    names = [t.dml_name for t in spec.inputs]
    sig_inputs = {n: v for n, v in inputs.items() if isinstance(v, tuple) and len(v) == 2
                  and isinstance(v[1], np.dtype)}
    # NumPy cannot make an array whose nonzero sizes multiply past its index type, even empty
    small = all(math.prod(s) <= CONCRETE_LIMIT and math.prod(d for d in s if d) < 2**40
                for s, _ in sig_inputs.values())
    with jax.enable_x64(x64):
        # 64-bit NumPy arrays without 64-bit mode stay NumPy constants (a ShapeDtypeStruct or a
        # jit argument would be narrowed by JAX itself before dmljax sees it).
        narrowing = not x64 and any(np.dtype(d).itemsize == 8 for _, d in sig_inputs.values())
        # byte-swapped dtypes: JAX refuses them as arguments, so they stay NumPy constants too
        narrowing = narrowing or any(not np.dtype(d).isnative for _, d in sig_inputs.values())
        if how in ("direct", "jit") and not small:
            how = "eval_shape"
        if narrowing and small and how in ("eval_shape", "vmap", "jit"):
            how = "direct"
        if narrowing and not small:
            how = "broadcast"  # too large to make: zero-stride NumPy arrays, refused on their type
        concrete = {n: fill(*sig_inputs[n]) for n in sig_inputs} if how in ("direct", "jit") else {}
        if how == "broadcast":
            if max(math.prod(d for d in s if d) for s, _ in sig_inputs.values()) > 2**24:
                return None, ()  # a wrongly accepted call would compute this many elements
            concrete = {n: np.broadcast_to(np.zeros((), d), s) for n, (s, d) in sig_inputs.items()}
            how = "direct"

        def value(n):
            v = inputs[n]
            return concrete[n] if n in concrete else v

        if how in ("direct", "jit"):
            # outputs sized by attributes (FILL_VALUE_CONSTANT's Sizes, TILE's repeats, PADDING's
            # pads) can be far larger than the inputs: their shapes first, and only small ones made
            # for real (a valid call for 2^31 elements is the caller's to make, not this test's: at
            # 1,000 examples an operator a worker was killed at 18 GB making one)
            try:
                shapes = jax.eval_shape(lambda: op(*[value(n) for n in names], **kwargs))
            except Exception:  # noqa: BLE001  (the real call below raises it again, to be judged)
                shapes = None
            if shapes is not None and any(math.prod(o.shape) > CONCRETE_LIMIT
                                          for o in jax.tree_util.tree_leaves(shapes)):
                return shapes, ()
        if how == "direct":
            return op(*[value(n) for n in names], **kwargs), ()
        if how == "jit":
            arr = [n for n in names if n in concrete]
            fn = jax.jit(lambda *xs: op(*[dict(zip(arr, xs)).get(n, inputs[n]) for n in names], **kwargs))
            return fn(*[concrete[n] for n in arr]), ()
        arr = [n for n in names if n in sig_inputs]
        if not arr:
            how = "eval_shape"  # vmap needs an array argument
        batch = (2,) if how == "vmap" else ()
        structs = [jax.ShapeDtypeStruct(batch + sig_inputs[n][0], sig_inputs[n][1]) for n in arr]

        def f(*xs):
            return op(*[dict(zip(arr, xs)).get(n, inputs[n]) for n in names], **kwargs)

        if how == "vmap":
            f = jax.vmap(f)
        return jax.eval_shape(f, *structs), batch


@pytest.mark.parametrize("name", tiers.fast_sample(list(OPS), keep=len(OPS) // 2, key="fuzz_operator"))
def test_fuzz_operator(name):
    op = OPS[name]
    spec = op.spec

    @SETTINGS
    @given(op_call(name))
    def check(call):
        inputs, kwargs, how, x64, outcome, expected = call
        try:
            out, batch = run_call(spec, op, inputs, kwargs, how, x64)
        except dmljax.ValidationError as e:
            _names_the_operator(e, spec)
            assert outcome in (INVALID, EITHER), f"refused a valid call ({how}, x64={x64}): {e}"
            return
        except TypeError as e:
            text = str(e)
            assert outcome == SIGNATURE and text.startswith(f"{spec.python_name}: "), f"{how}: {type(e).__name__}: {text[:500]}"
            assert any(w in text for w in ("missing a required", "unexpected keyword", "got an unexpected",
                                           "too many positional")), text
            return
        if out is None:  # too large to make without 64-bit mode: the call was not made
            return
        assert outcome in (VALID, EITHER), f"accepted an invalid call ({how}, x64={x64}, {kwargs!r:.300})"
        outs = out if isinstance(out, tuple) else (out,)
        assert len(outs) == len(expected)
        for o, (shape, dt) in zip(outs, expected):
            if shape is not None:
                assert tuple(o.shape) == batch + tuple(shape), (o, shape)
            if dt is not None:
                assert np.dtype(o.dtype) == dt.dtype, (o, dt)

    check()


# ------------------------------------------------------------------------ compile_operator
JSON_NASTY = [None, True, 1.5, -1, 0, 2**32, 10**400, "x", "nan", "FLOAT32", [], [1], [[1]], [0], [1.5],
              ["2"], {}, {"a": 1}, [math.inf], [-1], [2**32], [1] * 9, list(range(2000)), _self_list(),
              _self_dict(), {"Type": "DML_TENSOR_TYPE_BUFFER"}, {"Type": 1, "Desc": {}}, BadRepr(),
              np.zeros(2), np.int64(3), np.float32(2.0)]


def tensor_desc(draw, dt: DataType, sizes):
    d: dict[str, Any] = {"DataType": draw(st.sampled_from([dt.name, dt.dml_name, dt.name.lower()])),
                         "Sizes": list(sizes)}
    if draw(st.booleans()):
        d["DimensionCount"] = len(sizes)
    if draw(st.integers(0, 3)) == 0:
        strides, step = [], 1
        for s in reversed(sizes):
            strides.append(step)
            step *= s
        d["Strides"] = strides[::-1]
    if draw(st.integers(0, 5)) == 0:
        d["Flags"] = draw(st.sampled_from([0, "NONE", "DML_TENSOR_FLAG_NONE", []]))
    if draw(st.integers(0, 5)) == 0:
        d["TotalTensorSizeInBytes"] = 0
    if draw(st.integers(0, 5)) == 0:
        d["GuaranteedBaseOffsetAlignment"] = draw(st.sampled_from([0, 16, 256]))
    if draw(st.integers(0, 5)) == 0:
        d = {"Type": "DML_TENSOR_TYPE_BUFFER", "Desc": d}
    return d


@st.composite
def compile_call(draw, name):
    """A desc built valid from the record (a supported DataType, dimension count and packed
    layout; valid attributes in their JSON forms), then mutated zero or more times. Returns
    (desc, feature_level, half, outcome)."""
    spec = OPS[name].spec
    level = draw(st.sampled_from([FeatureLevel.newest()] + [s.level for s in spec.support]))
    row = spec.support_at(level)
    outcome = VALID
    group = {t.dml_name: i for i, t in enumerate(spec.tensors)}
    for c in spec.constraints:
        if isinstance(c, SameDataType):
            for n in c.tensors:
                group[n] = group[c.tensors[0]]
    chosen: dict[int, DataType] = {}
    types: dict[str, DataType] = {}
    for t in spec.tensors:
        g = group[t.dml_name]
        if g not in chosen:
            allowed = [d for d in row.tensors[t.dml_name].data_types if not d.needs_x64]
            chosen[g] = draw(st.sampled_from(allowed or list(row.tensors[t.dml_name].data_types)))
            if not allowed:
                outcome = INVALID
        types[t.dml_name] = chosen[g]
    lo = max(row.tensors[t.dml_name].dims[0] for t in spec.tensors)
    hi = min(row.tensors[t.dml_name].dims[1] for t in spec.tensors)
    ndim = draw(st.integers(lo, hi))
    sizes = draw(st.lists(st.integers(1, 3), min_size=ndim, max_size=ndim))
    desc: dict[str, Any] = {t.dml_name: tensor_desc(draw, types[t.dml_name], sizes) for t in spec.tensors}
    dt = types[spec.outputs[0].dml_name] if spec.outputs[0].default_data_type is None else types[(spec.inputs or spec.outputs)[-1].dml_name]
    for p in spec.params:
        if p.type == "FLOAT":
            v = draw(st.one_of(st.floats(-1e6, 1e6, width=32), st.sampled_from(["nan", "inf", "-inf"])))
            if dt.is_integer and v == "nan":
                v = 0.5
            if p.converted_to and dt.is_integer and p.dml_name == "Max":
                v = 1e6
        elif p.type == "DML_SCALE_BIAS":
            v = draw(st.sampled_from([None, {"Scale": 2.0, "Bias": -1.0}, [0.5, 0.25]]))
        elif p.type == "DML_SCALAR_UNION":
            v = {"Min": 0, "Max": 1}.get(p.dml_name, 0)
        elif p.type == "DML_TENSOR_DATA_TYPE":
            v = draw(st.sampled_from([None, dt.name])) if p.nullable else dt.name
        elif p.type == "DML_OPERATOR_DESC*":
            v = draw(st.sampled_from([None, {"Type": "ACTIVATION_ELU", "Alpha": 0.5},
                                      {"Type": "DML_OPERATOR_ACTIVATION_SCALED_ELU", "Desc": {}}]))
            if v is not None and dt not in FUSED_OUTPUT_TYPES:
                v = None
        elif p.enum is not None:  # a desc names every enum member: full or short name, or value
            member = draw(st.sampled_from(list(p.enum)))
            v = draw(st.sampled_from([member.dml_name, member.name, int(member)]))
        elif p.default is not REQUIRED:
            v = p.default  # a desc names every member: the documented default (DIAGONAL_MATRIX's Offset 0)
        else:
            outcome = EITHER
            v = draw(pick(JSON_NASTY))
        if v is None and p.nullable:
            continue
        desc[p.dml_name] = v
    if (spec.extra_checks or spec.infer_outputs) and outcome == VALID:
        outcome = EITHER  # what the page says beyond the tables, or outputs the record computes (REDUCE's axes)

    # Mutations: each definitely invalid, or of unknown effect (EITHER). A member made definitely
    # invalid is left alone afterwards (a later mutation could repair it).
    poisoned: set = set()
    for _ in range(draw(st.sampled_from([0, 0, 0, 1, 1, 2, 3]))):
        kind = draw(st.sampled_from(["drop", "unknown", "nasty_member", "nasty_field", "zero_size",
                                     "bad_type", "strides", "huge", "dims"]))
        keys = sorted(k for k in desc if k not in poisoned)
        tensors = [t.dml_name for t in spec.tensors if t.dml_name not in poisoned
                   and isinstance(desc.get(t.dml_name), dict) and "Desc" not in desc[t.dml_name]]
        if kind in ("zero_size", "bad_type", "huge", "dims") and tensors:
            victim = draw(st.sampled_from(tensors))
            poisoned.add(victim)
            tensors = [victim]
        if kind == "drop":
            k = draw(st.sampled_from(keys)) if keys else None
            if k is not None:
                required = any(t.dml_name == k and not t.optional for t in spec.tensors) or any(
                    p.dml_name == k and not p.nullable for p in spec.params)  # a desc has every member
                del desc[k]
                outcome = INVALID if required else outcome
        elif kind == "unknown":
            k = draw(st.sampled_from(["Bogus", "inputTensor", "X" * 500, "Min ", ""]))
            desc[k] = 1
            poisoned.add(k)
            outcome = INVALID
        elif kind == "nasty_member" and keys:
            desc[draw(st.sampled_from(keys))] = draw(pick(JSON_NASTY))
            outcome = EITHER if outcome == VALID else outcome
        elif kind == "nasty_field":
            tnames = tensors
            if tnames:
                field = draw(st.sampled_from(["DataType", "Sizes", "Strides", "Flags", "DimensionCount",
                                              "TotalTensorSizeInBytes", "GuaranteedBaseOffsetAlignment", "Bogus", "Type"]))
                desc[draw(st.sampled_from(tnames))][field] = draw(pick(JSON_NASTY))
                outcome = EITHER if outcome == VALID else outcome
        elif kind == "zero_size":
            tnames = [n for n in tensors if isinstance(desc[n].get("Sizes"), list) and desc[n]["Sizes"]]
            if tnames:
                d = desc[draw(st.sampled_from(tnames))]
                d["Sizes"] = [0] + d["Sizes"][1:]
                outcome = INVALID
        elif kind == "bad_type":
            tnames = tensors
            if tnames:
                desc[draw(st.sampled_from(tnames))]["DataType"] = draw(st.sampled_from(["BFLOAT16", "BOOL", "FLOAT", 0, 14]))
                outcome = INVALID
        elif kind == "strides":
            tnames = [n for n in tensors if isinstance(desc[n].get("Sizes"), list)]
            if tnames:
                d = desc[draw(st.sampled_from(tnames))]
                d["Strides"] = draw(st.lists(st.integers(0, 2**33), min_size=0, max_size=len(d["Sizes"]) + 1))
                d.pop("TotalTensorSizeInBytes", None)
                outcome = EITHER if outcome == VALID else outcome
        elif kind == "huge":
            tnames = tensors
            if tnames:
                d = desc[draw(st.sampled_from(tnames))]
                d["Sizes"] = [65536, 65536] + [1] * draw(st.integers(0, 2))
                d.pop("DimensionCount", None)
                d.pop("Strides", None)
                outcome = INVALID
        elif kind == "dims":
            tnames = tensors
            if tnames:
                d = desc[draw(st.sampled_from(tnames))]
                d["Sizes"] = [1] * draw(st.sampled_from([0, 9, 12]))
                d.pop("DimensionCount", None)
                d.pop("Strides", None)
                outcome = INVALID
    fl = draw(pick([level, level.version, level.dml_name, level.value] * 2 + [None, "9.9", 2.0, [6]]))
    if fl in ("9.9", 2.0, [6]):
        outcome = INVALID
    elif fl is None and level is not FeatureLevel.newest():
        outcome = EITHER if outcome == VALID else outcome
    half = draw(pick([False, True] * 4 + [1, None]))
    if not isinstance(half, bool):
        outcome = INVALID
    return Case((desc, fl, half, outcome))


@pytest.mark.parametrize("name", tiers.fast_sample(list(OPS), keep=len(OPS) // 2, key="fuzz_compile_operator"))
def test_fuzz_compile_operator(name):
    spec = OPS[name].spec
    type_names = [name, spec.short_name, spec.python_name, spec.value]

    @SETTINGS
    @given(compile_call(name), st.sampled_from(type_names))
    def check(call, type_name):
        desc, fl, half, outcome = call
        try:
            compiled = dmljax.compile_operator(type_name, desc, feature_level=fl,
                                               allow_half_precision_computation=half)
        except dmljax.ValidationError as e:
            assert len(str(e)) <= MAX_MESSAGE, len(str(e))
            assert e.violations
            if e.enum_name != "DML_OPERATOR_TYPE":
                assert e.enum_name == spec.enum_name, str(e)[:300]
            assert outcome in (INVALID, EITHER), f"refused a valid desc: {e}"
            return
        assert outcome in (VALID, EITHER), f"accepted an invalid desc {desc!r:.500} at {fl!r}"
        assert isinstance(compiled, dmljax.CompiledOperator)
        for t in spec.outputs:
            d = compiled.tensor_descs[t.dml_name]
            assert d is not None and DataType.from_dtype(d.data_type.dtype) is d.data_type

    check()


@SETTINGS
@given(st.one_of(pick(JSON_NASTY + NASTY), st.text(max_size=30), st.integers()),
       st.one_of(pick(JSON_NASTY + NASTY), st.dictionaries(st.text(max_size=12), pick(JSON_NASTY), max_size=4)))
def test_fuzz_compile_operator_any_type_and_desc(type_name, desc):
    """Anything at all as the operator type and the desc: a ValidationError or an operator."""
    try:
        dmljax.compile_operator(type_name, desc)
    except dmljax.ValidationError as e:
        assert len(str(e)) <= MAX_MESSAGE and e.violations


# ------------------------------------------------------------------ CompiledOperator bindings
SCALARS = {"TrainingStepTensor": [1, 1, 1, 1]}
"""Tensors a page asks to be scalars (ADAM_OPTIMIZER's step: "all Sizes equal to 1")."""


def _packed_desc(spec):
    """A small valid desc of every tensor (the first supported non-64-bit DataType, Sizes [1, 1,
    2, 2]) with the attributes every operator here accepts, or None."""
    row = spec.support_at(FeatureLevel.newest())
    group = {t.dml_name: i for i, t in enumerate(spec.tensors)}
    for c in spec.constraints:
        if isinstance(c, SameDataType):
            for n in c.tensors:
                group[n] = group[c.tensors[0]]
    if spec.infer_outputs is not None or any(t.sizes_arg or t.array for t in spec.tensors):
        return None  # outputs shaped otherwise than [1, 1, 2, 2], or tensor arrays: not this desc
    chosen, desc = {}, {}
    for t in spec.tensors:
        g = group[t.dml_name]
        if g not in chosen:
            chosen[g] = next(d for d in row.tensors[t.dml_name].data_types if not d.needs_x64)
        desc[t.dml_name] = {"DataType": chosen[g].name, "Sizes": SCALARS.get(t.dml_name, [1, 1, 2, 2])}
    for p in spec.params:
        if p.type in ("FLOAT", "DML_SCALAR_UNION"):
            desc[p.dml_name] = {"Max": 1}.get(p.dml_name, 0)
        elif p.type == "DML_TENSOR_DATA_TYPE":
            desc[p.dml_name] = desc[spec.outputs[0].dml_name]["DataType"]
        elif p.default is REQUIRED:
            return None
        elif p.type in ("BOOL", "UINT") and p.default is not None:  # a desc names every such member
            desc[p.dml_name] = p.default
        elif p.enum is not None and p.default is not None:  # a desc names every enum member
            desc[p.dml_name] = p.default.dml_name
    return desc


COMPILED = {}
for _name, _op in OPS.items():
    _d = _packed_desc(_op.spec)
    if _d is not None:
        COMPILED[_name] = dmljax.compile_operator(_name, _d)


@st.composite
def bindings(draw, name):
    """Bindings for a compiled operator: right-sized buffers of the tensor's type or of bytes, at
    offsets, or wrong ones; returns (bindings, outcome)."""
    compiled = COMPILED[name]
    out, outcome = {}, VALID
    for point in compiled.bind_points:
        d = compiled.tensor_descs[point]
        kind = draw(st.sampled_from(["typed"] * 4 + ["bytes", "jax", "offset", "short", "nasty", "missing", "2d"]))
        n = d.total_tensor_size_in_bytes
        if kind == "typed":
            out[point] = np.zeros(d.element_count, d.data_type.dtype)
        elif kind == "jax":
            out[point] = jnp.zeros(d.element_count, d.data_type.dtype)
        elif kind == "bytes":
            out[point] = np.zeros(n, np.uint8)
        elif kind == "offset":
            off = draw(st.sampled_from([16, 32, 1, 3, -16, 10**30, 10**400, 1.0, True, "16", None]))
            out[point] = dmljax.BufferBinding(np.zeros(n + 64, np.uint8), off) if draw(st.booleans()) else (
                np.zeros(n + 64, np.uint8), off)
            if off not in (16, 32) or isinstance(off, bool):
                outcome = INVALID
        elif kind == "short":
            out[point] = np.zeros(max(n - 1, 0), np.uint8)
            outcome = INVALID
        elif kind == "nasty":
            out[point] = draw(nasty())
            outcome = EITHER if outcome == VALID else outcome
        elif kind == "missing":
            outcome = INVALID
        else:
            out[point] = np.zeros((1, n), np.uint8)
            outcome = INVALID
    if rarely(draw, 10):
        out[draw(st.sampled_from(["Bogus", "InputTensr", ""]))] = np.zeros(4, np.float32)
        outcome = INVALID
    return Case((out, outcome))


@pytest.mark.skipif(not COMPILED, reason="no operator compiles from the default desc")
@SETTINGS
@given(st.sampled_from(sorted(COMPILED)).flatmap(lambda n: st.tuples(st.just(n), bindings(n))))
def test_fuzz_compiled_operator_bindings(case):
    """Buffers bound to a compiled operator: it runs, or refuses them with a ValidationError."""
    name, (binds, outcome) = case
    compiled = COMPILED[name]
    try:
        results = compiled(binds)
    except dmljax.ValidationError as e:
        assert len(str(e)) <= MAX_MESSAGE and e.violations
        assert outcome in (INVALID, EITHER), f"refused valid bindings: {e}"
        return
    assert outcome in (VALID, EITHER), "accepted invalid bindings"
    for point, value in results.items():
        bound = binds[point]
        buf = bound[0] if isinstance(bound, tuple) else bound
        assert value.shape == buf.shape and value.dtype == buf.dtype
