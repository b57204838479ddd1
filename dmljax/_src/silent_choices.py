"""The choices dmljax made where DirectML's pages are silent that hold across operators (attributes,
tensors given from Python, feature levels, sizes, data types): the first table of docs/silent.md.

Each operator's own choices are in its record (``OpSpec.silent``); ``dmljax docs`` writes the page
from both, so nothing there is kept by hand.
"""

from __future__ import annotations

from dmljax._src.spec import SilentChoice

__all__ = ["ACROSS_OPERATORS"]

ACROSS_OPERATORS: tuple[SilentChoice, ...] = (
    SilentChoice(
        "A FLOAT attribute on an integer tensor (THRESHOLD's Min)",
        "float32 first, then truncated toward zero and saturated to the type's range",
        "Truncation is the PADDING page's rule; the pages say nothing of range, and saturating never wraps "
        "(`min=-1` on UINT8 is 0, not 255)."),
    SilentChoice(
        "NaN Min on an integer tensor",
        "ValidationError",
        "No integer value stands for NaN; any choice would be silent."),
    SilentChoice(
        "Gradient of the FLOAT32 denormal flush",
        "identity",
        "The flush is a rule about stored values; cutting the gradient would zero it at exactly 0."),
    SilentChoice(
        "A FLOAT attribute beyond float32's range (e.g. `min=1e39`)",
        "ValidationError",
        "Rounding to float32 would silently make it infinite."),
    SilentChoice(
        "Python lists and scalars as tensors",
        "ValidationError",
        "A DirectML tensor has a DataType; JAX would pick one silently."),
    SilentChoice(
        "An operator's introducing feature level where its page's Availability section disagrees with "
        "DirectML.h (TOP_K, MAX_UNPOOLING, SCATTER_ELEMENTS, LOGICAL_LESS_THAN_OR_EQUAL)",
        "the header's: 1.0, 2.0, 2.0, 3.0 (`dmljax.catalog()`, `dmljax ops --all`)",
        "the `#if DML_TARGET_VERSION` block that declares the enumerator is what a DirectML build accepts, and "
        "the feature-level history agrees with it"),
    SilentChoice(
        "`allow_half_precision_computation=True`",
        "FLOAT16 arithmetic as XLA does it",
        "XLA may still widen single operations internally; the record's `ulp_half` budget covers it."),
    SilentChoice(
        "A FLOAT attribute or ScaleBias beyond FLOAT16's range, computed in FLOAT16",
        "+-inf (the float32 value rounded once to FLOAT16, IEEE's conversion), without a NumPy warning",
        "The attributes are FLOAT (32-bit); computing in FLOAT16 means converting them, and the conversion of "
        "an out-of-range value is IEEE's."),
    SilentChoice(
        "Fused activations",
        "checked by their own page's rules (SOFTPLUS's Steepness before 6.4 is refused fused into ADD1 too)",
        "One declaration serves the operator and its fused use."),
    SilentChoice(
        "A ScaleBias member that is a FLOAT32 denormal",
        "read as zero of its sign",
        "Math reads FLOAT32 denormals as zero ([Denormals](semantics.md#denormals)); XLA's CPU backend flushed "
        "it and its GPU backend did not."),
    SilentChoice(
        "Zero-size arrays (a size of 0 in any dimension)",
        "refused on every path (the functions, `compile_operator`, `dmljax run`), with a ValidationError",
        "A DirectML tensor's sizes are at least 1 (dml_buffer_tensor_desc.md); JAX would accept the empty "
        "array and compute something DirectML cannot."),
    SilentChoice(
        "More than 2^32 - 1 elements",
        "refused on every path",
        "dml_buffer_tensor_desc.md: a tensor \"may not exceed (2^32 - 1) elements\"; JAX would accept more."),
    SilentChoice(
        "INT4 / UINT4",
        "JAX's int4/uint4 arrays in the Python API; in buffers two elements a byte, the first in the low "
        "nibble, strides in elements, the tail nibble ignored on reads and kept on writes; a binding's "
        "elementOffset even",
        "dml_tensor_data_type.md's packing; a binding starts on a byte."),
)
