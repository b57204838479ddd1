"""QUANTIZE and DEQUANTIZE (DML_FEATURE_LEVEL_6_3: a QuantizationType and an array of
QuantizationTensors), of the quantization family: each page's record with its formula below it.

The pages describe little beyond the descs and tables ("TBD"). dmljax reads them as ONNX's
QuantizeLinear and DequantizeLinear (opset 21 on: per-tensor, per-axis and blocked quantization,
INT4 and UINT4), which ONNX Runtime's DirectML provider maps onto these operators:

    QUANTIZE:   OutputTensor = clamp(round(InputTensor / scale) + zero_point, Min, Max)
    DEQUANTIZE: OutputTensor = (InputTensor - zero_point) * scale

with ``scale = QuantizationTensors[0]`` and, for DML_QUANTIZATION_TYPE_SCALE_ZERO_POINT,
``zero_point = QuantizationTensors[1]`` (0 without it). Each quantization tensor has the input's
DimensionCount (the page's constraint) and, along each dimension, the input's size or a divisor
of it: a size s along a dimension of size n gives blocks of n / s consecutive elements one value
each. So a size-1 dimension (or a broadcast, zero-stride one) is per-tensor along it, the input's
size per-element, anything between blocked quantization (ONNX Runtime's DirectML provider binds a
MatMulNBits scale of Sizes [..., N, K / block] against weights of Sizes [..., N, K] this way).
The arithmetic is linear_quantization's, shared by every quantized operator."""

from __future__ import annotations

import jax.numpy as jnp

from dmljax._src.catalog import PREFIX
from dmljax._src.dtypes import FLOAT32_FLOAT16, FLOAT32_FLOAT16_INT8_INT4_UINT8_UINT4, INT8_INT4_UINT8_UINT4, DataType
from dmljax._src.enums import QuantizationType
from dmljax._src.errors import Violation
from dmljax._src.linear_quantization import dequantize_values, quantize_values, scale_violations
from dmljax._src.op import operator
from dmljax._src.spec import INFERRED, OpSpec, ParamSpec, SilentChoice, TensorSpec, table
from dmljax._src.validate import TensorInfo

F32, F16 = DataType.FLOAT32, DataType.FLOAT16
ARRAY = "QuantizationTensors"
COUNT = {QuantizationType.SCALE: 1, QuantizationType.SCALE_ZERO_POINT: 2}
DEFAULT_OUTPUT = DataType.UINT8  # ONNX's QuantizeLinear without a zero point or output_dtype


def _quantization_type_param() -> ParamSpec:
    return ParamSpec("QuantizationType", "DML_QUANTIZATION_TYPE", enum=QuantizationType, doc=(
        "What QuantizationTensors holds: DML_QUANTIZATION_TYPE_SCALE, the scale alone (zero point 0); "
        "DML_QUANTIZATION_TYPE_SCALE_ZERO_POINT, the scale and then the zero point. "
        "DML_QUANTIZATION_TYPE_NONE, which the page leaves undefined, is refused."))


def _elements(tensors) -> list[tuple[str, TensorInfo]]:
    """The quantization tensors in index order."""
    items = [(k, v) for k, v in tensors.items() if k.split("[", 1)[0] == ARRAY]
    return sorted(items, key=lambda kv: int(kv[0][len(ARRAY) + 1:-1]))


def _arg(name: str) -> str:
    return "quantizations" + name[len(ARRAY):]


def _quantization_checks(float_tensor: str, integer_tensor: str):
    """What the pages leave to ONNX: the QuantizationType and the array's length, the scale's
    DataType (the float tensor's) and the zero point's (the integer tensor's), and their Sizes
    (the input's DimensionCount, each size the input's or a divisor of it: whole blocks)."""
    def check(tensors, attrs, level) -> list[Violation]:
        qtype = attrs.get("QuantizationType")
        x = tensors.get("InputTensor")
        elements = _elements(tensors)
        problems = []
        if qtype is QuantizationType.NONE:
            problems.append(Violation(
                "QuantizationType", "quantization_type", "is DML_QUANTIZATION_TYPE_NONE",
                "DML_QUANTIZATION_TYPE_SCALE or DML_QUANTIZATION_TYPE_SCALE_ZERO_POINT: the page leaves NONE "
                "undefined, ONNX's QuantizeLinear and DequantizeLinear always have a scale, and ONNX Runtime's "
                "DirectML provider never uses it",
                "for a scale of 1, pass QuantizationType SCALE with a scale of ones; ELEMENT_WISE_ROUND and CAST "
                "convert without one"))
        elif qtype in COUNT and elements and len(elements) != COUNT[qtype]:
            problems.append(Violation(
                ARRAY, "quantizations", f"has {len(elements)} tensor{'s' if len(elements) != 1 else ''} "
                f"with QuantizationType {qtype.dml_name}",
                f"{COUNT[qtype]}: " + ("the scale" if COUNT[qtype] == 1 else "the scale, then the zero point"),
                "QuantizationTensorCount is the array's length"))
        if x is None or not elements:
            return problems
        scale_name, scale = elements[0]
        wanted = tensors.get(float_tensor)
        if not scale.data_type.is_float:
            problems.append(Violation(scale_name, _arg(scale_name), f"has DataType {scale.data_type.name}",
                                      "the scale is FLOAT32 or FLOAT16" + (
                                          f", the DataType of {float_tensor} ({wanted.data_type.name})"
                                          if wanted is not None and wanted.data_type is not None else "")))
        elif wanted is not None and wanted.data_type is not None and scale.data_type is not wanted.data_type:
            problems.append(Violation(scale_name, _arg(scale_name), f"has DataType {scale.data_type.name}",
                                      f"the DataType of {float_tensor}, {wanted.data_type.name} (the scale and "
                                      f"{float_tensor} have one DataType, as in ELEMENT_WISE_"
                                      f"{'QUANTIZE' if float_tensor == 'InputTensor' else 'DEQUANTIZE'}_LINEAR)",
                                      "cast one explicitly: DirectML never promotes types"))
        if len(elements) > 1:
            zp_name, zp = elements[1]
            target = tensors.get(integer_tensor)
            if not zp.data_type.is_integer:
                problems.append(Violation(zp_name, _arg(zp_name), f"has DataType {zp.data_type.name}",
                                          "the zero point is INT8, INT4, UINT8 or UINT4"))
            elif target is not None and target.data_type is not None and zp.data_type is not target.data_type:
                chosen = integer_tensor == "OutputTensor"
                problems.append(Violation(
                    zp_name, _arg(zp_name), f"has DataType {zp.data_type.name}",
                    f"the DataType of {integer_tensor}, {target.data_type.name}"
                    + (" (output_data_type)" if chosen else ""),
                    "leave output_data_type out (None) to take the zero point's" if chosen else
                    "cast one explicitly: DirectML never promotes types"))
        for name, info in elements:
            if len(info.shape) != len(x.shape):
                problems.append(Violation(
                    name, _arg(name), f"has {len(info.shape)} dimensions (Sizes {list(info.shape)})",
                    f"InputTensor's DimensionCount, {len(x.shape)} (the page's constraint)",
                    "a per-tensor or per-axis value keeps the other dimensions as size 1 (e.g. "
                    "scale.reshape(1, C, 1, 1)) or broadcasts them (jnp.broadcast_to)"))
                continue
            bad = [i for i, (s, n) in enumerate(zip(info.shape, x.shape)) if n % s]
            if bad:
                i = bad[0]
                problems.append(Violation(
                    name, _arg(name), f"has Sizes {list(info.shape)}",
                    f"along each dimension InputTensor's size or a divisor of it (InputTensor has Sizes "
                    f"{list(x.shape)}): blocks of whole size; dimension {i} has {info.shape[i]} blocks of "
                    f"{x.shape[i]} elements",
                    "for ONNX's blocked quantization with a smaller last block, repeat the values to the input's "
                    f"size (jnp.repeat(v, block_size, axis={i})[..., :{x.shape[i]}] along that axis) or pad the "
                    "input to whole blocks"))
        return problems
    return check


def _scale_values(values, attrs, level) -> list[Violation]:
    """A scale read before anything runs (a NumPy or JAX array, not a tracer) must be finite and
    not 0."""
    items = values.get(ARRAY) or []
    if not items:
        return []
    return scale_violations(items[0], f"{ARRAY}[0]", "quantizations[0]")


def _shape_notes(operation: str) -> str:
    return (f"QuantizationTensors holds the scale (FLOAT32 or FLOAT16, {operation}) and, with "
            "DML_QUANTIZATION_TYPE_SCALE_ZERO_POINT, the zero point after it; DML_QUANTIZATION_TYPE_NONE, which the "
            "page leaves undefined (ONNX has no such case and ONNX Runtime's DirectML provider never uses it), is "
            "refused. Each quantization tensor has the input's DimensionCount and, along each dimension, the "
            "input's size or a divisor of it: a size s along a dimension of n elements gives blocks of n / s "
            "consecutive elements one value each (size 1: one value along it, per-tensor; n: per-element). So "
            "ONNX's per-tensor scale is Sizes [1, ..., 1] (or a broadcast, zero-stride desc), its per-axis scale "
            "Sizes 1 except along the axis (e.g. [1, C, 1, 1]), its blocked scale the input's Sizes with "
            "n / block along the blocked axis, as ONNX Runtime's DirectML provider binds MatMulNBits' "
            "blocked scales; only whole blocks (n a multiple of the block size; a smaller last block is refused: "
            "repeat the values to the input's size, or pad). The scale and the zero point are blocked each by "
            "its own Sizes. ")


def _scale_notes(traced: str) -> str:
    return ("A scale that can be read when the operator is called (a NumPy or JAX array, not a tracer) holding "
            "0, NaN, an infinity or a FLOAT32 denormal (which math reads as 0) is a ValidationError: DirectML "
            f"leaves such a quantization undefined. A traced scale is not checked: {traced}")


def _quantized(tensors, attrs, problems) -> dict:
    """QUANTIZE's OutputTensor: the InputTensor's Sizes; the zero point's DataType, or the
    caller's output_data_type, or UINT8 (ONNX's QuantizeLinear without either)."""
    x = tensors["InputTensor"]
    elements = _elements(tensors)
    chosen = tensors.get("OutputTensor")
    if len(elements) > 1:
        dt = elements[1][1].data_type
    elif chosen is not None and chosen.data_type is not None:
        dt = chosen.data_type
    else:
        dt = DEFAULT_OUTPUT
    return {"OutputTensor": TensorInfo(x.shape, dt)}


QUANTIZE = OpSpec(
    enum_name=PREFIX + "QUANTIZE",
    summary=("Quantizes InputTensor with the scale (and zero point) that QuantizationTensors holds, "
             "per tensor, per axis or per block, to INT8, INT4, UINT8 or UINT4."),
    formula=("TBD\n"
             "(the page's description; dmljax follows ONNX's QuantizeLinear:)\n"
             "f(input, scale, zero_point) = clamp(round(input / scale) + zero_point, Min, Max)\n"
             "(scale = QuantizationTensors[0], zero_point = QuantizationTensors[1] or 0, "
             "each repeated over its blocks; Min and Max the OutputTensor's range: INT8 -128 to 127, INT4 -8 to 7, "
             "UINT8 0 to 255, UINT4 0 to 15)"),
    tensors=(TensorSpec("InputTensor", "input"),
             TensorSpec(ARRAY, "input", count="QuantizationTensorCount"),
             TensorSpec("OutputTensor", "output", default_data_type=INFERRED)),
    support=(
        table("6.3", InputTensor=("1 to 8", FLOAT32_FLOAT16),
              QuantizationTensors=("1 to 8", FLOAT32_FLOAT16_INT8_INT4_UINT8_UINT4),
              OutputTensor=("1 to 8", INT8_INT4_UINT8_UINT4)),
    ),
    params=(_quantization_type_param(),),
    gradient=("OutputTensor is an integer: its cotangent is float0 and nothing reaches InputTensor or the scale "
              "(their gradients are zeros), as for any rounding to integers in JAX."),
    notes=(_shape_notes("InputTensor's DataType") + "The zero point has the OutputTensor's DataType; without "
           "one, output_data_type chooses the OutputTensor's (INT8, INT4, UINT8 or UINT4), UINT8 by default as in "
           "ONNX's QuantizeLinear. input / scale is divided in FLOAT32 (FLOAT16 widened, unless "
           "allow_half_precision_computation), FLOAT32 denormals flushed, rounded once as IEEE division rounds, on "
           "every backend (XLA's GPU quotient, 2 ULP off at worst, is corrected); round() rounds halves to "
           "even; the zero point is added and the sum saturated to the OutputTensor's range by minNum/maxNum, so "
           "NaN gives Min. " + _scale_notes(
               "a scale of 0 gives Max or Min by the input's sign (Min where it is 0: 0 / 0 is NaN), an infinite "
               "one the zero point, a NaN one Min.")),
    extra_checks=(_quantization_checks("InputTensor", "OutputTensor"),),
    value_checks=(_scale_values,),
    infer_outputs=_quantized,
    silent=(
        SilentChoice(
            "QUANTIZE / DEQUANTIZE (pages \"TBD\")",
            "ONNX's QuantizeLinear/DequantizeLinear; QuantizationTensors is `[scale]` (SCALE) or `[scale, "
            "zero_point]` (SCALE_ZERO_POINT); DML_QUANTIZATION_TYPE_NONE refused",
            "The pages' descs and tables only; ONNX Runtime's DirectML provider maps ONNX's operators onto "
            "them.",
            also=("DEQUANTIZE",)),
    ),
)


def _blocks(t, shape: tuple[int, ...]):
    """``t`` repeated blockwise to ``shape``: along each dimension its size s divides n, and each
    of its values fills n / s consecutive positions."""
    if tuple(t.shape) == tuple(shape) or all(s == 1 for s in t.shape):
        return t  # one value for the tensor broadcasts as it is (a kernel on CUDA takes it so)
    wide = []
    for s, n in zip(t.shape, shape):
        wide += [s, n // s]
    tall = t.reshape([d for s in t.shape for d in (s, 1)])
    return jnp.broadcast_to(tall, wide).reshape(shape)


def _parameters(input, quantizations):
    scale = _blocks(quantizations[0], input.shape)
    zero_point = _blocks(quantizations[1], input.shape) if len(quantizations) > 1 else None
    return scale, zero_point


@operator(QUANTIZE)
def quantize(input, quantizations, *, quantization_type, output_data_type, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> x = np.array([[-1.0, 0.26, 0.5, 3.0]], np.float32)
        >>> scale = np.array([[0.25, 0.5]], np.float32)  # blocks of 2 along the last axis
        >>> dmljax.quantize(x, [scale], quantization_type="SCALE", output_data_type="INT4")
        Array([[-4, 1, 1, 6]], dtype=int4)
    """
    scale, zero_point = _parameters(input, quantizations)
    return quantize_values(input, scale, zero_point, output_data_type, allow_half=allow_half_precision_computation)


def _dequantized(tensors, attrs, problems) -> dict:
    """DEQUANTIZE's OutputTensor: the InputTensor's Sizes, the scale's DataType."""
    return {"OutputTensor": TensorInfo(tensors["InputTensor"].shape, _elements(tensors)[0][1].data_type)}


DEQUANTIZE = OpSpec(
    enum_name=PREFIX + "DEQUANTIZE",
    summary=("Dequantizes InputTensor (INT8, INT4, UINT8 or UINT4) with the scale (and zero point) that "
             "QuantizationTensors holds, per tensor, per axis or per block."),
    formula=("TBD\n"
             "(the page's description; dmljax follows ONNX's DequantizeLinear:)\n"
             "f(input, scale, zero_point) = (input - zero_point) * scale\n"
             "(scale = QuantizationTensors[0], zero_point = QuantizationTensors[1] or 0, "
             "each repeated over its blocks)"),
    tensors=(TensorSpec("InputTensor", "input"),
             TensorSpec(ARRAY, "input", count="QuantizationTensorCount"),
             TensorSpec("OutputTensor", "output")),
    support=(
        table("6.3", InputTensor=("1 to 8", INT8_INT4_UINT8_UINT4),
              QuantizationTensors=("1 to 8", FLOAT32_FLOAT16_INT8_INT4_UINT8_UINT4),
              OutputTensor=("1 to 8", FLOAT32_FLOAT16)),
    ),
    params=(_quantization_type_param(),),
    ulp={F32: 0, F16: 0},
    ulp_half=0,
    gradient=("The formula differentiated with respect to the scale: dScale = the sum over each block of "
              "(input - zero_point) * dY; InputTensor and the zero point are integers: no gradient (float0)."),
    notes=(_shape_notes("the OutputTensor's DataType") + "The zero point has the InputTensor's DataType. "
           "input - zero_point is exact (9 bits at most) and the product with the scale is computed in FLOAT32 "
           "(FLOAT16 scales widened, unless allow_half_precision_computation) and rounded once to the "
           "OutputTensor's type, FLOAT32 denormals flushed: correctly rounded. " + _scale_notes(
               "IEEE arithmetic's results follow, zeros of the difference's sign for a scale of 0, infinities for "
               "an infinite one (NaN where the difference is 0), NaN for a NaN one.")),
    extra_checks=(_quantization_checks("OutputTensor", "InputTensor"),),
    value_checks=(_scale_values,),
    infer_outputs=_dequantized,
)


@operator(DEQUANTIZE)
def dequantize(input, quantizations, *, quantization_type, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> import jax.numpy as jnp
        >>> q = np.array([[0, 8, 15, 3]], jnp.uint4)
        >>> scale = np.array([[0.5, 2.0]], np.float32)  # blocks of 2 along the last axis
        >>> zero_point = np.array([[8]], jnp.uint4)  # one for the whole tensor
        >>> dmljax.dequantize(q, [scale, zero_point], quantization_type="SCALE_ZERO_POINT")
        Array([[ -4.,   0.,  14., -10.]], dtype=float32)
    """
    scale, zero_point = _parameters(input, quantizations)
    return dequantize_values(input, scale, zero_point, allow_half=allow_half_precision_computation)
