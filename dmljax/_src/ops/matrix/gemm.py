"""GEMM, of the matrix family: the page's record, with its formula below it.

Output = FusedActivation(Alpha * TransA(A) x TransB(B) + Beta * C), over the leading (batch)
dimensions. FLOAT32 products are FLOAT32 products (``precision=HIGHEST``: never TF32,
docs/semantics.md#accumulating-operators); FLOAT16 inputs are multiplied and accumulated in FLOAT32 and rounded once, unless
``allow_half_precision_computation=True``."""

from __future__ import annotations

import math

import jax.numpy as jnp
import numpy as np
from jax import lax

from dmljax._src.catalog import PREFIX
from dmljax._src.dtypes import FLOAT32_FLOAT16, DataType
from dmljax._src.enums import MatrixTransform
from dmljax._src.errors import Violation
from dmljax._src.half_products import half_dot
from dmljax._src.numerics import compute_dtype, load, store
from dmljax._src.op import operator
from dmljax._src.ops.factories import apply_fused
from dmljax._src.spec import OpSpec, ParamSpec, SameDataType, SilentChoice, TensorSpec, table
from dmljax._src.validate import TensorInfo

F32, F16 = DataType.FLOAT32, DataType.FLOAT16
_SIZES = {"ATensor": ("M", "K"), "BTensor": ("K", "N")}


def _matrices(tensors, attrs):
    """(batch, M, K, N, K of B) from A and B as TransA/TransB read them, or None."""
    a, b = tensors.get("ATensor"), tensors.get("BTensor")
    ta, tb = attrs.get("TransA"), attrs.get("TransB")
    if a is None or b is None or ta is None or tb is None or len(a.shape) < 2 or len(b.shape) < 2:
        return None
    m, k = a.shape[-2:] if ta is MatrixTransform.NONE else a.shape[-2:][::-1]
    kb, n = b.shape[-2:] if tb is MatrixTransform.NONE else b.shape[-2:][::-1]
    return a.shape[:-2], m, k, n, kb


def _gemm_checks(tensors, attrs, level) -> list[Violation]:
    """The page's "same DimensionCount"; A's K equals B's K; the batch dimensions (BatchCount,
    ChannelCount) equal in A, B and C (a broadcast is a desc's strides, not an implicit one);
    C's Sizes are the output's, {batch..., M, N}."""
    got = _matrices(tensors, attrs)
    if got is None:
        return []
    batch, m, k, n, kb = got
    a, b, c = tensors["ATensor"], tensors["BTensor"], tensors.get("CTensor")
    problems = []
    ranks = {name: len(t.shape) for name, t in (("ATensor", a), ("BTensor", b), ("CTensor", c)) if t is not None}
    if len(set(ranks.values())) > 1:
        return [Violation("BTensor" if ranks["BTensor"] != ranks["ATensor"] else "CTensor",
                          "b" if ranks["BTensor"] != ranks["ATensor"] else "c",
                          "has " + ", ".join(f"{n_}: {r} dimensions" for n_, r in ranks.items()),
                          "ATensor, BTensor, CTensor and OutputTensor with the same DimensionCount (the page)",
                          "add leading dimensions of 1, or call dmljax.compose.matmul (NumPy's rules: ranks padded, "
                          "batches broadcast)")]
    if k != kb:
        problems.append(Violation(
            "BTensor", "b", f"has Sizes {list(b.shape)}: K = {kb} with TransB {attrs['TransB'].name}",
            f"K = {k}, as ATensor's Sizes {list(a.shape)} give it with TransA {attrs['TransA'].name}",
            "transpose one of them (trans_a= / trans_b=) or fix the shapes"))
    if b.shape[:-2] != batch:
        problems.append(Violation("BTensor", "b", f"has batch dimensions {list(b.shape[:-2])}",
                                  f"ATensor's, {list(batch)}",
                                  "broadcast it by a desc's zero strides (dmljax.compose.broadcast_to), or call "
                                  "dmljax.compose.matmul"))
    if c is not None and not problems and c.shape != batch + (m, n):
        problems.append(Violation("CTensor", "c", f"has Sizes {list(c.shape)}",
                                  f"the OutputTensor's, {{batch..., M, N}} = {list(batch + (m, n))}",
                                  "broadcast it by a desc's zero strides (dmljax.compose.broadcast_to); "
                                  "dmljax.compose.linear takes a bias {N}"))
    return problems


def _gemm_output(tensors, attrs, problems) -> dict:
    batch, m, _, n, _ = _matrices(tensors, attrs)
    return {"OutputTensor": TensorInfo(batch + (m, n), tensors["ATensor"].data_type)}


def _growth(sizes, attrs) -> dict:
    """K products summed (docs/semantics.md#accumulating-operators): K rounding units of the terms' magnitude (Reference
    magnitude: |Alpha| sum |a b| + |Beta c|), in FLOAT32; K / 2^13 FLOAT16 ULP when FLOAT16 is
    accumulated in FLOAT32; K in FLOAT16 arithmetic. ``sizes``: ATensor's."""
    k = 1
    if len(sizes) >= 2:
        trans = attrs.get("TransA")
        k = sizes[-2] if trans in (MatrixTransform.TRANSPOSE, 1, "TRANSPOSE", "DML_MATRIX_TRANSFORM_TRANSPOSE") else sizes[-1]
    return {F32: k + 1, F16: math.ceil((k + 1) / 8192), "half": k + 1}


_TRANS = ("The transform of {t}Tensor: NONE, or TRANSPOSE (its last two dimensions swapped; default NONE, "
          "a zeroed desc's).")

GEMM = OpSpec(
    enum_name=PREFIX + "GEMM",
    summary=("Performs a general matrix multiplication function of the form Output = FusedActivation(Alpha * "
             "TransA(A) x TransB(B) + Beta * C), where x denotes matrix multiplication, and * denotes "
             "multiplication with a scalar."),
    formula="Output = FusedActivation(Alpha * TransA(A) x TransB(B) + Beta * C)",
    tensors=(TensorSpec("ATensor", "input"), TensorSpec("BTensor", "input"),
             TensorSpec("CTensor", "input", optional=True), TensorSpec("OutputTensor", "output")),
    support=(
        table("4.0", ATensor=("2 to 4", FLOAT32_FLOAT16), BTensor=("2 to 4", FLOAT32_FLOAT16),
              CTensor=("2 to 4", FLOAT32_FLOAT16), OutputTensor=("2 to 4", FLOAT32_FLOAT16)),
        table("1.0", ATensor=("4", FLOAT32_FLOAT16), BTensor=("4", FLOAT32_FLOAT16),
              CTensor=("4", FLOAT32_FLOAT16), OutputTensor=("4", FLOAT32_FLOAT16)),
    ),
    params=(
        ParamSpec("TransA", "DML_MATRIX_TRANSFORM", default=MatrixTransform.NONE, enum=MatrixTransform,
                  doc=_TRANS.format(t="A")),
        ParamSpec("TransB", "DML_MATRIX_TRANSFORM", default=MatrixTransform.NONE, enum=MatrixTransform,
                  doc=_TRANS.format(t="B")),
        ParamSpec("Alpha", "FLOAT", default=1.0, doc="The product's multiplier (default 1.0)."),
        ParamSpec("Beta", "FLOAT", default=1.0,
                  doc="CTensor's multiplier (default 1.0; ignored without a CTensor, as the page says)."),
        ParamSpec("FusedActivation", "DML_OPERATOR_DESC*", default=None, nullable=True,
                  doc=("An optional fused activation applied after the GEMM: a dmljax.FusedActivation, e.g. "
                       "FusedActivation('ACTIVATION_RELU'), or {'Type': ..., 'Desc': {...}}.")),
    ),
    constraints=(SameDataType(("ATensor", "BTensor", "CTensor", "OutputTensor")),),
    ulp={F32: 2, F16: 1},
    ulp_half=2,
    ulp_growth=_growth,
    gradient=("dA = Alpha * dY' x TransB(B)^T and dB = Alpha * TransA(A)^T x dY' (transposed back where TransA / "
              "TransB transpose), dC = Beta * dY', where dY' is dY through the fused activation's gradient; "
              "FLOAT32 products; FLOAT16 (without half-precision computation): products of FLOAT16 operands (dY' "
              "rounded to FLOAT16) accumulated in FLOAT32, scaled by Alpha and rounded once to FLOAT16, the same "
              "rule in forward and reverse mode."),
    notes=("ATensor is {batch..., M, K} ({batch..., K, M} with TransA), BTensor {batch..., K, N} ({batch..., "
           "N, K} with TransB), CTensor (optional) and OutputTensor {batch..., M, N}; from "
           "DML_FEATURE_LEVEL_4_0 the batch dimensions (BatchCount, ChannelCount) may be left out (2 to 4 "
           "dimensions), all four tensors with the same DimensionCount, and the batch dimensions equal (a "
           "broadcast is a desc's strides). The epilogue Alpha * product + Beta * C is FLOAT32, then rounded "
           "once to the output type, then the fused activation runs with its own rules "
           "(core/dml-fused-activations.md). The order of the K additions is the library's "
           "(docs/semantics.md#accumulating-operators): a budget of K + 1 rounding units of the terms' "
           "magnitude."),
    extra_checks=(_gemm_checks,),
    infer_outputs=_gemm_output,
    silent=(
        SilentChoice(
            "GEMM's defaults and shapes",
            "TransA, TransB, Alpha and Beta default to NONE, NONE, 1.0 and 1.0 (ONNX Gemm's); the four tensors "
            "have the same DimensionCount and equal batch dimensions, CTensor the output's Sizes (a broadcast "
            "is a desc's zero strides, or the caller's jnp.broadcast_to); FLOAT32 products are FLOAT32 "
            "(`precision=HIGHEST`, never TF32); FLOAT16 is multiplied and accumulated in FLOAT32 and rounded "
            "once (unless `allow_half_precision_computation=True`), then the fused activation runs; its "
            "gradient's two products take FLOAT16 operands, accumulate in FLOAT32 and round once to FLOAT16 "
            "(autodiff's would run FLOAT32 products: 2.1x the time on the H100); on NVIDIA GPUs, without "
            "Alpha, the products have FLOAT16 results, which XLA's GEMMs accumulate in FLOAT32 and round once "
            "(the same values, checked on the H100)",
            "The page gives no defaults and says only that the tensors \"must have the same DataType and "
            "DimensionCount\" and C and the output \"the same Sizes\"; [Accumulating "
            "operators](semantics.md#accumulating-operators) for the arithmetic."),
    ),
)


def _half_product(x, y, alpha, to_half: bool):
    """``alpha * x @ y`` over the leading (batch) dimensions for FLOAT16 ``x`` and ``y``,
    accumulated in FLOAT32 and rounded once to FLOAT16 when ``to_half`` (no CTensor to add first),
    else left in FLOAT32 (``half_products.half_dot``). Its gradient is the products transposed, each with
    FLOAT16 operands, accumulated in FLOAT32, scaled by Alpha and rounded once to FLOAT16
    (``half_products``), in forward and reverse mode."""
    return half_dot(x, y, form="NN", alpha=alpha, half=to_half)


@operator(GEMM)
def gemm(a, b, c=None, *, trans_a, trans_b, alpha, beta, fused_activation, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> a = np.array([[1], [2], [3]], np.float32)      # the DxDispatch example model dml_gemm.json
        >>> b = np.array([[4, 5, 6]], np.float32)
        >>> dmljax.gemm(a, b, np.full((3, 3), 2, np.float32))
        Array([[ 6.,  7.,  8.],
               [10., 12., 14.],
               [14., 17., 20.]], dtype=float32)
        >>> dmljax.gemm(a, a, trans_b="TRANSPOSE", alpha=-1.0,
        ...             fused_activation=dmljax.FusedActivation("ACTIVATION_RELU"))[0]
        Array([0., 0., 0.], dtype=float32)
    """
    half = allow_half_precision_computation
    dt = DataType.from_dtype(a.dtype)
    ct = compute_dtype(dt, half)  # FLOAT32, or FLOAT16 with half-precision computation
    # FLOAT16 operands go to the product as they are (_half_product)
    x, y = (a, b) if dt is F16 else (load(a, half), load(b, half))
    if trans_a is MatrixTransform.TRANSPOSE:
        x = jnp.swapaxes(x, -1, -2)
    if trans_b is MatrixTransform.TRANSPOSE:
        y = jnp.swapaxes(y, -1, -2)
    if dt is F16 and not half:
        out = _half_product(x, y, alpha, to_half=c is None)
    else:
        nb = x.ndim - 2
        batch = tuple(range(nb))
        prod = lax.dot_general(x, y, (((nb + 1,), (nb,)), (batch, batch)),
                               precision=lax.Precision.HIGHEST if dt is F32 else None, preferred_element_type=ct)
        out = prod if alpha == 1.0 else np.asarray(alpha, ct) * prod
    if c is not None:
        cc = load(c, half)
        out = out + (cc if beta == 1.0 else np.asarray(beta, ct) * cc)
    return apply_fused(fused_activation, store(out, dt), half)
