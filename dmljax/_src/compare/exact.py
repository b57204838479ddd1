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

``float64_outputs(call, chunked=True)`` (the ONNX comparison) leaves an element-wise operator's
value unevaluated: a :class:`Float64Chunks` evaluates the formula over a range of the flattened
positions when ``distance.compare`` reaches it, so the whole float64 tensor (8 bytes an element)
never exists. ``element_wise`` decides from the record which operators qualify; the others are
evaluated over the whole tensor as before.
"""

from __future__ import annotations

import math

import jax
import numpy as np

from dmljax._src.compare.distance import exact_chunk
from dmljax._src.dtypes import DataType
from dmljax._src.kernel_seam import use_kernels
from dmljax._src.op import OperatorCall, output_names
from dmljax._src.registry import get_operator
from dmljax._src.spec import OpSpec

__all__ = ["computes", "element_wise", "float64_outputs", "Float64Chunks", "describe", "NARROW_FLOATS",
           "BIT_EXACT"]

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


def element_wise(spec: OpSpec) -> bool:
    """Whether each element of the operator's output depends only on its inputs' elements at
    the same position, decided from the record: an operator of the catalog's element-wise
    families (``element_wise_*``) or of its activations that DirectML lets run in place
    (``in_place``: the output bound over an input, which each output element can overwrite only
    because it reads that input at its own position alone), with no output Sizes of its own.
    Every operator of those families that computes is in place except SOFTMAX, LOG_SOFTMAX (and
    their ``*1`` forms), which normalize rows, and VALUE_SCALE_2D, whose bias depends on an
    element's channel; the comparisons, IF, IS_NAN and the other operators of those families
    that are not in place select or compare values and have no float64 value."""
    return ((spec.family.startswith("element_wise_") or spec.family == "activation") and spec.in_place
            and not any(t.sizes_arg for t in spec.outputs))


class Float64Chunks:
    """The float64 value of one output of an element-wise operator call, evaluated a range of
    its flattened (row-major) positions at a time: ``range(start, stop)`` runs the formula in
    float64 on the inputs' elements at those positions (an input of fewer elements broadcast to
    the output's shape) and gives a float64 array of ``stop - start`` elements, the same values
    as the whole tensor's evaluation at those positions. ``shape`` and ``dtype`` are those of
    the whole value, which never exists at once."""

    dtype = np.dtype(np.float64)

    def __init__(self, fn, arrays: tuple, shape: tuple[int, ...], index: int):
        self._fn, self._arrays, self._index = fn, arrays, index
        self.shape = tuple(shape)
        self.size = math.prod(self.shape)
        self._kept: tuple[int, int, np.ndarray] | None = None

    def keep(self, start: int, stop: int) -> None:
        """Evaluate ``range(start, stop)`` now (compiling the formula for that length: a formula
        that cannot run in float64 fails here) and hand it out once when asked for."""
        self._kept = (start, stop, self.range(start, stop))

    def range(self, start: int, stop: int) -> np.ndarray:
        stop = min(stop, self.size)
        if self._kept is not None and self._kept[:2] == (start, stop):
            value, self._kept = self._kept[2], None
            return value
        parts = [_flat_range(x, self.shape, start, stop) for x in self._arrays]
        with jax.enable_x64(True), use_kernels(False):
            out = self._fn(*parts)
        out = out[self._index] if isinstance(out, tuple) else out
        return np.asarray(out).reshape(-1)


def _flat_range(x, shape: tuple[int, ...], start: int, stop: int):
    """Elements ``start:stop`` of ``x`` broadcast to ``shape`` and flattened (row-major), without
    a copy of the whole of it; None stays None."""
    if x is None:
        return None
    a = np.asarray(x)
    if a.shape == shape and a.flags.c_contiguous:
        return a.reshape(-1)[start:stop]
    return np.broadcast_to(a, shape).flat[start:stop]


def _broadcasts(x, shape: tuple[int, ...]) -> bool:
    if x is None:
        return True
    if isinstance(x, (list, tuple)):
        return False
    try:
        return np.broadcast_shapes(np.shape(x), shape) == shape
    except ValueError:
        return False


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


def float64_outputs(call: OperatorCall, chunked: bool = False) -> list[tuple[np.ndarray | Float64Chunks | None, str]]:
    """One (float64 value or None, reason when None) per output of ``call``, in its order. None
    for an output that is not FLOAT16 or FLOAT32, for an operator that only moves or selects
    values, and for every output when the formula fails in float64 or computes in another type.

    ``chunked``: for an element-wise operator (``element_wise``) whose inputs all broadcast to
    its outputs' shape, each value is a :class:`Float64Chunks`, evaluated range by range when
    read (``distance.compare`` takes either form and gives the same comparison)."""
    spec = call.spec
    if call.arrays is None:
        return [(None, "the operator ran inside a trace, on no concrete values")] * len(output_names(call.call))
    outs = call.out if isinstance(call.out, tuple) else (call.out,)
    dtypes = [np.dtype(o.dtype) for o in outs]
    if not computes(spec):
        return [(None, BIT_EXACT if d in NARROW_FLOATS else "") for d in dtypes]
    statics = tuple((k, _widen_static(v)) for k, v in call.statics)
    formula = get_operator(spec.enum_name).formula
    fn = jax.jit(lambda *a: formula(*_widen(list(a)), **dict(statics)))
    shape = tuple(outs[0].shape)
    lazy = (chunked and element_wise(spec) and all(tuple(o.shape) == shape for o in outs)
            and all(_broadcasts(x, shape) for x in call.arrays))
    try:
        with jax.enable_x64(True), use_kernels(False):
            if lazy:  # the output's type and shape, from the trace alone; then the first range, compiled
                wide = jax.eval_shape(fn, *call.arrays)
                wide = wide if isinstance(wide, tuple) else (wide,)
                first = [Float64Chunks(fn, call.arrays, shape, i) for i in range(len(wide))]
                for f in first:
                    f.keep(0, min(exact_chunk(), f.size))
            else:
                wide = fn(*call.arrays)
                wide = [np.asarray(w) for w in (wide if isinstance(wide, tuple) else (wide,))]
    except Exception as e:  # noqa: BLE001  (a formula written for FLOAT16/FLOAT32 can fail in many ways)
        why = f"its formula does not run in float64 ({type(e).__name__}: {' '.join(str(e).split())[:160]})"
        return [(None, why)] * len(outs)
    result = []
    for index, (o, d, w) in enumerate(zip(outs, dtypes, wide)):
        if d not in NARROW_FLOATS:
            result.append((None, "the output is FLOAT64: there is no wider evaluation" if d == np.float64 else ""))
        elif w.dtype != np.float64 or w.shape != tuple(o.shape):
            result.append((None, f"its formula computes this output in {w.dtype} {list(w.shape)} from float64 "
                                 "inputs"))
        else:
            result.append((first[index] if lazy else w, ""))
    return result


def describe(operators: str, wide: np.ndarray | Float64Chunks | None, why: str) -> str:
    """What a tensor's distances are measured from, for the report: the float64 value of the
    ``operators``' formula, or dmljax's result and why."""
    if wide is not None:
        return f"the float64 value of {operators}'s formula"
    if why == BIT_EXACT:
        return f"dmljax's result ({operators} {why})"
    return f"dmljax's result (no float64 evaluation for {operators}: {why})" if why else "dmljax's result"
