"""The near-exact value a vendor's result is measured from: an operator's own formula evaluated
again in float64 on the same inputs (docs/semantics.md#the-reference defines each budget against
the float64 value, rounded once).

``float64_outputs(call)`` takes one operator call recorded outside a trace (``op.record_calls``:
its arrays, statics and result) and runs the operator's undecorated formula under JAX's 64-bit
mode, with Pallas kernels off, on the inputs
widened to float64 and with the same validated statics, except that a floating-point output
data type among them is widened to FLOAT64 as well. The formulas key their rounding on the
arrays' dtypes (``numerics.load`` and ``store``: FLOAT32 denormals flushed, FLOAT16 computed in
FLOAT32 and rounded), so in float64 those steps fall away and what is left is the formula's value
to float64 accuracy. Where that is not faithful to DirectML's definition (a formula that rounds on
purpose, a flush of a FLOAT32 denormal), dmljax's own result lies beyond its budget of the value,
and ``distance.compare`` judges that element against dmljax's result instead (its sanity check);
where the formula cannot run in float64 at all, or keeps computing in the output's own type, the
whole output falls back to dmljax's result, with the reason.
"""

from __future__ import annotations

import jax
import numpy as np

from dmljax._src.dtypes import DataType
from dmljax._src.kernel_seam import use_kernels
from dmljax._src.op import OperatorCall, output_names
from dmljax._src.registry import get_operator
from dmljax._src.spec import OpSpec

__all__ = ["computes", "float64_outputs", "describe", "NARROW_FLOATS", "BIT_EXACT"]

BIT_EXACT = "selects or moves values: bit-exact"
"""The reason an operator that does not compute has no float64 value (nor needs one)."""

NARROW_FLOATS = (np.dtype(np.float16), np.dtype(np.float32))
"""The output types a float64 value is more exact than (a FLOAT64 output is judged against
dmljax's own FLOAT64 result: there is no wider evaluation)."""


def computes(spec: OpSpec) -> bool:
    """Whether an operator's float results are math with a budget (float64 evaluation applies):
    a math operator, or one with a nonzero ULP budget. The others select or move values and are
    bit-exact against dmljax's own result."""
    return bool(spec.math or any(spec.ulp.values()) or spec.ulp_half or spec.ulp_growth is not None)


def _widen(x):
    """Inside the trace: a FLOAT16 or FLOAT32 input as float64 (a tensor array item by item), so
    that XLA fuses the conversion into the formula and no widened copy of an input is kept."""
    if x is None:
        return None
    if isinstance(x, (list, tuple)):
        return [_widen(v) for v in x]
    return x.astype(np.float64) if np.dtype(x.dtype) in NARROW_FLOATS else x


def _widen_static(v):
    return DataType.FLOAT64 if isinstance(v, DataType) and v.is_float else v


def float64_outputs(call: OperatorCall) -> list[tuple[np.ndarray | None, str]]:
    """One (float64 value or None, reason when None) per output of ``call``, in its order. None
    for an output that is not FLOAT16 or FLOAT32, for an operator that only moves or selects
    values, and for every output when the formula fails in float64 or computes in another type."""
    spec = call.spec
    if call.arrays is None:
        return [(None, "the operator ran inside a trace, on no concrete values")] * len(output_names(call.call))
    outs = call.out if isinstance(call.out, tuple) else (call.out,)
    dtypes = [np.dtype(o.dtype) for o in outs]
    if not computes(spec):
        return [(None, BIT_EXACT if d in NARROW_FLOATS else "") for d in dtypes]
    statics = tuple((k, _widen_static(v)) for k, v in call.statics)
    formula = get_operator(spec.enum_name).formula
    try:
        with jax.enable_x64(True), use_kernels(False):
            wide = jax.jit(lambda *a: formula(*_widen(list(a)), **dict(statics)))(*call.arrays)
            wide = [np.asarray(w) for w in (wide if isinstance(wide, tuple) else (wide,))]
    except Exception as e:  # noqa: BLE001  (a formula written for FLOAT16/FLOAT32 can fail in many ways)
        why = f"its formula does not run in float64 ({type(e).__name__}: {' '.join(str(e).split())[:160]})"
        return [(None, why)] * len(outs)
    result = []
    for o, d, w in zip(outs, dtypes, wide):
        if d not in NARROW_FLOATS:
            result.append((None, "the output is FLOAT64: there is no wider evaluation" if d == np.float64 else ""))
        elif w.dtype != np.float64 or w.shape != tuple(o.shape):
            result.append((None, f"its formula computes this output in {w.dtype} {list(w.shape)} from float64 "
                                 "inputs"))
        else:
            result.append((w, ""))
    return result


def describe(operators: str, wide: np.ndarray | None, why: str) -> str:
    """What a tensor's distances are measured from, for the report: the float64 value of the
    ``operators``' formula, or dmljax's result and why."""
    if wide is not None:
        return f"the float64 value of {operators}'s formula"
    if why == BIT_EXACT:
        return f"dmljax's result ({operators} {why})"
    return f"dmljax's result (no float64 evaluation for {operators}: {why})" if why else "dmljax's result"
