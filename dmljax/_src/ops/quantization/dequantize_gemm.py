"""DEQUANTIZE then GEMM in one call: ``dequantize_gemm``, a composition of two DirectML operators
(not itself one: it has no record and no ``DML_OPERATOR_*``), ONNX's com.microsoft MatMulNBits
pattern, which ONNX Runtime's DirectML provider runs as a DEQUANTIZE + GEMM graph that DirectML's
graph compiler fuses. On NVIDIA GPUs, for 4-bit weights and up to 16 FLOAT16 rows, it takes
kernels/dequantize_gemm.py, which reads the packed weights once and never writes the dequantized
ones; elsewhere it is the two operators in turn. A DirectML graph (graph.py) whose DEQUANTIZE
feeds only GEMM's A or B runs the pair through it (``register_fusion``)."""

from __future__ import annotations

import functools

import jax
import numpy as np

from dmljax._src.dtypes import DataType
from dmljax._src.enums import MatrixTransform
from dmljax._src.errors import ValidationError
from dmljax._src.feature_level import resolve_feature_level
from dmljax._src.graph import register_fusion
from dmljax._src.kernel_seam import choose
from dmljax._src.kernels.dequantize_gemm import DEQUANTIZE_GEMM, Settings, dequantize_gemm_rows
from dmljax._src.numerics import load, store
from dmljax._src.op import recording
from dmljax._src.ops.matrix.gemm import gemm
from dmljax._src.ops.quantization.quantize import DEQUANTIZE, dequantize

__all__ = ["dequantize_gemm", "OPERANDS"]

OPERANDS = ("a", "b")
"""The GEMM operand that ``dequantize_gemm`` dequantizes."""


def dequantize_gemm(a, b, quantizations, c=None, *, quantization_type, operand="b", trans_a="NONE", trans_b="NONE",
                    alpha=1.0, beta=1.0, fused_activation=None, allow_half_precision_computation=False,
                    feature_level=None):
    """DEQUANTIZE then GEMM: ``gemm(a, dequantize(b, quantizations))`` (``operand="b"``, the
    default) or ``gemm(dequantize(a, quantizations), b)`` (``operand="a"``), with C, Alpha, Beta,
    TransA, TransB and the fused activation as GEMM takes them. A composition of two DirectML
    operators, as ONNX Runtime's DirectML provider runs com.microsoft MatMulNBits, not a DirectML
    operator; each operator validates its part, and its ValidationErrors name it.

    On NVIDIA GPUs the pair takes a Pallas kernel (dmljax/_src/kernels/dequantize_gemm.py: the
    switch ``"dequantize_gemm"`` of ``dmljax.use_kernels``) where the dequantized matrix is INT4
    or UINT4 with FLOAT16 scales, the other operand has 1 to 16 rows (GEMM's M, or N where A is
    dequantized), batch dimensions are 1, there is no fused activation and no half-precision
    computation, and where it measured faster than the two operators (the kernel's
    ``FASTER_UP_TO``: both layouts of the weights, {N, K} as MatMulNBits lays them out and {K, N},
    up to 16 rows). The 4-bit weights are read once, packed, and the dequantized FLOAT16 weights
    never written. Its values: the dequantized weights are DEQUANTIZE's bit for bit, each product
    is exact in FLOAT32 and the sum is FLOAT32 in another order than XLA's, within GEMM's budget of
    the two operators' result, not bit for bit. Where the kernel's rule does not apply it is the
    two operators called one after the other, bit for bit; where it applies but the platform is not
    CUDA (CPU, TPU), the two operators compiled as one program, as in a caller's ``jax.jit``
    (where XLA may fuse DEQUANTIZE into the product, which can move a FLOAT32 result by a last
    bit).

    Gradients are the two operators': the FLOAT operand's and the scale's (DEQUANTIZE's rule), float0
    for the integer weights and zero points; under differentiation the pair runs unfused.

    Args:
        a, b, c: GEMM's ATensor, BTensor and CTensor (C optional); the ``operand`` one is
            DEQUANTIZE's InputTensor (INT8, INT4, UINT8 or UINT4), of GEMM's Sizes.
        quantizations: DEQUANTIZE's QuantizationTensors: ``[scale]`` or ``[scale, zero_point]``.
        quantization_type: DEQUANTIZE's QuantizationType.
        operand: "b" or "a", the operand dequantized.
        trans_a, trans_b, alpha, beta, fused_activation: GEMM's attributes.
        allow_half_precision_computation, feature_level: as both operators take them.

    Returns:
        GEMM's OutputTensor.

    Example:
        >>> import numpy as np, jax.numpy as jnp, dmljax
        >>> x = np.array([[1.0, 2.0, 3.0, 4.0]], np.float16)
        >>> w = np.array([[1, -2], [3, 4], [-8, 7], [0, 1]], jnp.int4)      # {K, N}
        >>> scale = np.array([[0.5, 0.25], [2.0, 1.0]], np.float16)        # blocks of 2 along K
        >>> dmljax.dequantize_gemm(x, w, [scale], quantization_type="SCALE")
        Array([[-44.5,  26.5]], dtype=float16)
    """
    if operand not in OPERANDS:
        raise ValueError(f"dequantize_gemm: operand is {operand!r}; one of {', '.join(map(repr, OPERANDS))}")
    quantizations = list(quantizations)
    deq = dict(quantization_type=quantization_type, allow_half_precision_computation=allow_half_precision_computation,
               feature_level=feature_level)
    mm = dict(trans_a=trans_a, trans_b=trans_b, alpha=alpha, beta=beta, fused_activation=fused_activation,
              allow_half_precision_computation=allow_half_precision_computation, feature_level=feature_level)

    unfused = _operators(operand, deq, mm)
    if recording() or fused_activation is not None or allow_half_precision_computation:
        return unfused(a, b, quantizations, c)  # a recorder sees both operators; the kernel takes neither case
    _value_checks(quantizations, feature_level)
    jax.eval_shape(unfused, a, b, quantizations, c)  # each operator validates its part (shapes, types, attributes)
    ta, tb = MatrixTransform.parse(trans_a), MatrixTransform.parse(trans_b)
    facts = _facts(operand, ta, tb, a, b, quantizations, c)
    if facts is None or choose(DEQUANTIZE_GEMM, facts=facts).kernel is None:
        return unfused(a, b, quantizations, c)  # the two operators, as called one after the other
    return _program(operand, ta, tb, float(np.float32(alpha)), float(np.float32(beta)), quantization_type,
                    resolve_feature_level(feature_level))(a, b, quantizations, c)


def _operators(operand: str, deq: dict, mm: dict):
    """The pair as the two operators, one after the other: DEQUANTIZE of ``operand`` with the
    keywords ``deq``, then GEMM with ``mm``."""
    def unfused(a, b, quantizations, c):
        if operand == "b":
            return gemm(a, dequantize(b, quantizations, **deq), c, **mm)
        return gemm(dequantize(a, quantizations, **deq), b, c, **mm)
    return unfused


def _value_checks(quantizations, feature_level) -> None:
    """DEQUANTIZE's checks of a scale whose values can be read now (eval_shape sees none)."""
    level = resolve_feature_level(feature_level)
    values = {"QuantizationTensors": [None if isinstance(q, jax.core.Tracer) else np.asarray(q) for q in quantizations]}
    problems = [v for check in DEQUANTIZE.value_checks for v in check(values, {}, level)]
    if problems:
        raise ValidationError("dequantize", DEQUANTIZE.enum_name, level.dml_name, problems)


def _matrix(x):
    """``x`` without its batch dimensions where they are all 1, else None."""
    return x.reshape(x.shape[-2:]) if x.ndim >= 2 and all(d == 1 for d in x.shape[:-2]) else None


def _kernel_operands(operand, ta, tb, a, b):
    """(rows, weights, weights transposed, result transposed) as the kernel takes them, or None:
    the kernel computes rows {M, K} x dequantize(weights), the weights {K, N}, or {N, K} when
    transposed. Where A is dequantized the product is computed transposed: (B' ^T x A' ^T)^T."""
    a2, b2 = _matrix(a), _matrix(b)
    if a2 is None or b2 is None:
        return None
    t_a, t_b = ta is MatrixTransform.TRANSPOSE, tb is MatrixTransform.TRANSPOSE
    if operand == "b":
        return (a2.T if t_a else a2), b2, t_b, False
    return (b2 if t_b else b2.T), a2, not t_a, True


def _facts(operand, ta, tb, a, b, quantizations, c):
    """``DEQUANTIZE_GEMM``'s facts of a call, or None where the kernel cannot take it (batch
    dimensions other than 1)."""
    operands = _kernel_operands(operand, ta, tb, a, b)
    if operands is None or (c is not None and _matrix(c) is None):
        return None
    x, w, w_trans = operands[:3]
    return x.shape, w.shape, x.dtype, w.dtype, quantizations[0].dtype, False, w_trans


@functools.lru_cache(maxsize=256)
def _program(operand: str, ta: MatrixTransform, tb: MatrixTransform, alpha: float, beta: float, quantization_type,
             level, interpret: bool = False, settings: Settings | None = None):
    """The pair for one set of attributes, jitted: the kernel's route or the two operators.
    ``interpret=True`` (tests) takes the kernel wherever it can run, in Pallas's interpreter, on
    any backend; ``settings`` (tests): the kernel's, other than its layout's SETTINGS."""
    deq = dict(quantization_type=quantization_type, feature_level=level)
    unfused = _operators(operand, deq, dict(trans_a=ta, trans_b=tb, alpha=alpha, beta=beta, feature_level=level))

    def fused(a, b, quantizations, c):
        x, w, w_trans, transposed = _kernel_operands(operand, ta, tb, a, b)
        scale = quantizations[0].reshape(quantizations[0].shape[-2:])
        zero_point = quantizations[1].reshape(quantizations[1].shape[-2:]) if len(quantizations) > 1 else None
        out = dequantize_gemm_rows(x, w, scale, zero_point, trans_b=w_trans, alpha=alpha,
                                   out_dtype=np.float16 if c is None else np.float32, settings=settings,
                                   interpret=interpret)
        out = out.T if transposed else out
        if c is not None:  # GEMM's epilogue: + Beta * C in FLOAT32, rounded once
            cc = load(c.reshape(out.shape), False)
            out = store(out + (cc if beta == 1.0 else np.asarray(beta, np.float32) * cc), DataType.FLOAT16)
        return out.reshape(a.shape[:-2] + out.shape)

    @jax.custom_jvp
    def run(a, b, quantizations, c):
        facts = _facts(operand, ta, tb, a, b, quantizations, c)
        if facts is None:
            return unfused(a, b, quantizations, c)
        if interpret:
            return (fused if DEQUANTIZE_GEMM.runs(*facts) else unfused)(a, b, quantizations, c)
        return choose(DEQUANTIZE_GEMM, facts=facts).run(unfused, fused, a, b, quantizations, c)

    @run.defjvp
    def the_operators_derivative(primals, tangents):  # the two operators', unfused
        return jax.jvp(unfused, primals, tangents)

    return jax.jit(run)


def _graph_fusion(producer, producer_tensors, consumer, consumer_tensors, member):
    """A DirectML graph's DEQUANTIZE whose output only GEMM's ATensor or BTensor reads, as
    ``dequantize_gemm``: GEMM's outputs by member name."""
    if member not in ("ATensor", "BTensor"):
        return None
    kw = consumer._kwargs()
    deq = producer._kwargs()
    if kw.get("fused_activation") is not None or kw["allow_half_precision_computation"]:
        return None
    quantizations = [producer_tensors[f"QuantizationTensors[{i}]"]
                     for i in range(sum(k.startswith("QuantizationTensors[") for k in producer_tensors))]
    weights = producer_tensors["InputTensor"]
    a = weights if member == "ATensor" else consumer_tensors["ATensor"]
    b = weights if member == "BTensor" else consumer_tensors["BTensor"]
    out = dequantize_gemm(a, b, quantizations, consumer_tensors.get("CTensor"),
                          quantization_type=deq["quantization_type"], operand="a" if member == "ATensor" else "b",
                          trans_a=kw["trans_a"], trans_b=kw["trans_b"], alpha=kw["alpha"], beta=kw["beta"],
                          feature_level=kw["feature_level"])
    return {"OutputTensor": out}


register_fusion(DEQUANTIZE.enum_name, "DML_OPERATOR_GEMM", _graph_fusion)
