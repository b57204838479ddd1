"""DirectML tensor data types (DML_TENSOR_DATA_TYPE) and their numpy/JAX dtypes."""

from __future__ import annotations

import enum
import math
import numbers

import jax
import ml_dtypes
import numpy as np

from dmljax._src.errors import quote

__all__ = [
    "DataType",
    "FLOATS",
    "SIGNED_INTS",
    "UNSIGNED_INTS",
    "INTS",
    "SIXTY_FOUR_BIT",
    "x64_enabled",
    "round_to_float",
    "TYPE_LISTS",
    "FLOAT16",
    "UINT8",
    "UINT32",
    "UINT32_UINT8",
    "FLOAT32_FLOAT16",
    "FLOAT32_FLOAT16_INT32_UINT32",
    "FLOAT32_FLOAT16_INT64_INT32_UINT64_UINT32",
    "FLOAT32_FLOAT16_INT32_INT16_INT8_UINT32_UINT16_UINT8",
    "FLOAT32_FLOAT16_INT64_INT32_INT16_INT8_UINT64_UINT32_UINT16_UINT8",
    "FLOAT64_FLOAT32_FLOAT16_INT64_INT32_INT16_INT8_UINT64_UINT32_UINT16_UINT8",
    "FLOAT32_FLOAT16_INT64_INT32_INT16_INT8",
]  # and every other type list: appended below TYPE_LISTS


class DataType(enum.Enum):
    """DML_TENSOR_DATA_TYPE, in DirectML's spelling without the prefix.

    The value is DirectML's numeric enum value (``DataType.FLOAT32.value == 1``).
    """

    FLOAT32 = 1
    FLOAT16 = 2
    UINT32 = 3
    UINT16 = 4
    UINT8 = 5
    INT32 = 6
    INT16 = 7
    INT8 = 8
    FLOAT64 = 9
    UINT64 = 10
    INT64 = 11
    UINT4 = 12
    INT4 = 13

    def __repr__(self) -> str:
        return f"DataType.{self.name}"

    def __str__(self) -> str:
        return self.name

    @property
    def dml_name(self) -> str:
        """The full enum name, e.g. ``DML_TENSOR_DATA_TYPE_FLOAT32``."""
        return f"DML_TENSOR_DATA_TYPE_{self.name}"

    @property
    def dtype(self) -> np.dtype:
        """The numpy dtype holding this type's elements (JAX uses the same)."""
        return _TO_DTYPE[self]

    @property
    def bits(self) -> int:
        return 4 if self in (DataType.UINT4, DataType.INT4) else self.dtype.itemsize * 8

    @property
    def size_in_bytes(self) -> float:
        """Bytes per element (0.5 for the 4-bit types)."""
        return self.bits / 8

    @property
    def is_float(self) -> bool:
        return self in FLOATS

    @property
    def is_integer(self) -> bool:
        return self in INTS

    @property
    def is_signed(self) -> bool:
        return self in FLOATS or self in SIGNED_INTS

    @property
    def needs_x64(self) -> bool:
        """True for the 64-bit types, which JAX holds only in its 64-bit mode."""
        return self in SIXTY_FOUR_BIT

    @classmethod
    def parse(cls, value: object) -> "DataType":
        """A DataType from a member, its name (``"FLOAT32"``, ``"DML_TENSOR_DATA_TYPE_FLOAT32"``,
        any case), its enum value, or a numpy/JAX dtype or scalar type (``np.float32``; not an
        array or a number, whose dtype it would silently take).

        Raises ``ValueError`` naming the valid spellings; bfloat16 and other dtypes that are not
        DirectML types are refused rather than mapped to a near neighbour.
        """
        if isinstance(value, cls):
            return value
        if isinstance(value, str):
            key = value.strip().upper()
            if key.startswith("DML_TENSOR_DATA_TYPE_"):
                key = key[len("DML_TENSOR_DATA_TYPE_"):]
            if key in cls.__members__:
                return cls[key]
            raise ValueError(
                f"{quote(value)} is not a DirectML data type; valid: {', '.join(cls.__members__)}"
            )
        if isinstance(value, int) and not isinstance(value, bool):
            try:
                return cls(value)
            except ValueError:
                raise ValueError(f"{quote(value)} is not a DML_TENSOR_DATA_TYPE value (1 to 13)") from None
        # A dtype or a scalar type (np.float32, jnp.int8): not an array or a number, whose dtype
        # np.dtype would read from its ``dtype`` attribute.
        found = cls.from_dtype(value) if isinstance(value, (np.dtype, type)) else None
        if found is None:
            raise ValueError(f"{quote(value)} is not a DirectML data type")
        return found

    @classmethod
    def from_dtype(cls, dtype: object) -> "DataType | None":
        """The DataType of a numpy/JAX dtype, or None if DirectML has no such type (bfloat16,
        bool, complex, float8, ...)."""
        if isinstance(dtype, (list, tuple, dict, bool)):  # np.dtype reads these as record layouts
            return None
        try:
            dt = np.dtype(dtype)
        except Exception:  # noqa: BLE001  (np.dtype raises TypeError, ValueError, ... on junk)
            return None
        return _FROM_DTYPE.get(dt)


_TO_DTYPE = {
    DataType.FLOAT32: np.dtype(np.float32),
    DataType.FLOAT16: np.dtype(np.float16),
    DataType.UINT32: np.dtype(np.uint32),
    DataType.UINT16: np.dtype(np.uint16),
    DataType.UINT8: np.dtype(np.uint8),
    DataType.INT32: np.dtype(np.int32),
    DataType.INT16: np.dtype(np.int16),
    DataType.INT8: np.dtype(np.int8),
    DataType.FLOAT64: np.dtype(np.float64),
    DataType.UINT64: np.dtype(np.uint64),
    DataType.INT64: np.dtype(np.int64),
    DataType.UINT4: np.dtype(ml_dtypes.uint4),
    DataType.INT4: np.dtype(ml_dtypes.int4),
}
_FROM_DTYPE = {dt: t for t, dt in _TO_DTYPE.items()}

FLOATS = frozenset({DataType.FLOAT64, DataType.FLOAT32, DataType.FLOAT16})
SIGNED_INTS = frozenset(
    {DataType.INT64, DataType.INT32, DataType.INT16, DataType.INT8, DataType.INT4}
)
UNSIGNED_INTS = frozenset(
    {DataType.UINT64, DataType.UINT32, DataType.UINT16, DataType.UINT8, DataType.UINT4}
)
INTS = SIGNED_INTS | UNSIGNED_INTS
SIXTY_FOUR_BIT = frozenset({DataType.FLOAT64, DataType.INT64, DataType.UINT64})


def x64_enabled() -> bool:
    """Whether JAX's 64-bit mode is on (read at each call: it can change at run time)."""
    return bool(jax.config.jax_enable_x64)


def round_to_float(value: object, dtype) -> float:
    """``value`` rounded once, to nearest even, to the float ``dtype`` (float16, float32 or
    float64), as a Python float: what C does when it converts a number to that type.

    ``value`` is a real number: a Python int or float, a NumPy integer or float (long double
    included) or a ``fractions.Fraction``; the rounding is exact, never through float64 first
    (an int such as 2**53 + 2**29 + 1 would round twice that way). Raises OverflowError where a
    finite value rounds past the type's largest finite value, TypeError for anything else.
    Infinities and NaN are returned as they are."""
    dt = np.dtype(dtype)
    if isinstance(value, (bool, np.bool_)) or not isinstance(value, (numbers.Real, np.integer, np.floating)):
        raise TypeError(f"{quote(value)} is not a real number")
    if isinstance(value, np.floating) and np.dtype(value.dtype).itemsize <= dt.itemsize:
        return float(value)  # widening is exact
    if isinstance(value, float) or (isinstance(value, np.floating) and np.dtype(value.dtype).itemsize <= 8):
        with np.errstate(over="ignore"):
            r = float(np.asarray(float(value), np.float64).astype(dt))
        if math.isinf(r) and not math.isinf(float(value)):
            raise OverflowError(f"{quote(value)} is outside the range of {dt.name}")
        return r
    if isinstance(value, np.floating) and (not np.isfinite(value) or value == 0):
        return float(value)  # a long double's infinity, NaN or signed zero
    try:
        num, den = value.as_integer_ratio() if hasattr(value, "as_integer_ratio") else (
            value.numerator, value.denominator)
        num, den = int(num), int(den)
    except Exception:  # noqa: BLE001  (another numbers.Real: the best Python can do)
        try:
            v = float(value)
        except Exception:  # noqa: BLE001
            raise TypeError(f"{quote(value)} is not a real number") from None
        with np.errstate(over="ignore"):
            r = float(np.asarray(v, np.float64).astype(dt))
        if math.isinf(r) and not math.isinf(v):
            raise OverflowError(f"{quote(value)} is outside the range of {dt.name}")
        return r
    return _round_ratio(num, den, dt)


def _round_ratio(num: int, den: int, dt: np.dtype) -> float:
    """num / den (den > 0) rounded to nearest even in ``dt``; OverflowError past its range."""
    if den <= 0:
        raise TypeError("not a real number")
    if num == 0:
        return 0.0
    info = np.finfo(dt)
    p = int(info.nmant) + 1  # significand bits
    emin = int(info.minexp)  # exponent of the smallest normal
    sign, num = (-1.0 if num < 0 else 1.0), abs(num)
    e = num.bit_length() - den.bit_length()  # 2**e <= num/den < 2**(e+1), after the fix-up
    if (num << max(-e, 0)) < (den << max(e, 0)):
        e -= 1
    q = max(e, emin) - (p - 1)  # the quantum: the value of the last significand bit
    # m = num / den / 2**q, rounded to nearest even
    n, d = (num << -q, den) if q < 0 else (num, den << q)
    m, r = divmod(n, d)
    if 2 * r > d or (2 * r == d and m & 1):
        m += 1
    if m.bit_length() + q > int(info.maxexp):  # rounds to 2**maxexp or beyond: infinite
        raise OverflowError(f"outside the range of {dt.name}")
    return sign * math.ldexp(m, q)


# --------------------------------------------------------------------------------------------
# The data-type lists of the pages' support tables, named after their members in the page's
# order, so that a record reads like its page and a typo cannot hide (a test checks each name
# against its members). Add a list here when a page has a new one.


def _named(name: str) -> tuple[DataType, ...]:
    return tuple(DataType[part] for part in name.split("_"))


FLOAT16 = _named("FLOAT16")
UINT8 = _named("UINT8")
UINT32 = _named("UINT32")
UINT32_UINT8 = _named("UINT32_UINT8")
FLOAT32_FLOAT16 = _named("FLOAT32_FLOAT16")
FLOAT32_FLOAT16_INT32_UINT32 = _named("FLOAT32_FLOAT16_INT32_UINT32")
FLOAT32_FLOAT16_INT64_INT32_UINT64_UINT32 = _named("FLOAT32_FLOAT16_INT64_INT32_UINT64_UINT32")
FLOAT32_FLOAT16_INT32_INT16_INT8_UINT32_UINT16_UINT8 = _named("FLOAT32_FLOAT16_INT32_INT16_INT8_UINT32_UINT16_UINT8")
FLOAT32_FLOAT16_INT64_INT32_INT16_INT8_UINT64_UINT32_UINT16_UINT8 = _named("FLOAT32_FLOAT16_INT64_INT32_INT16_INT8_UINT64_UINT32_UINT16_UINT8")
FLOAT64_FLOAT32_FLOAT16_INT64_INT32_INT16_INT8_UINT64_UINT32_UINT16_UINT8 = _named("FLOAT64_FLOAT32_FLOAT16_INT64_INT32_INT16_INT8_UINT64_UINT32_UINT16_UINT8")
FLOAT32_FLOAT16_INT64_INT32_INT16_INT8 = _named("FLOAT32_FLOAT16_INT64_INT32_INT16_INT8")
FLOAT32 = _named("FLOAT32")
FLOAT32_FLOAT16_INT32 = _named("FLOAT32_FLOAT16_INT32")
FLOAT32_FLOAT16_INT32_INT16_INT8 = _named("FLOAT32_FLOAT16_INT32_INT16_INT8")
FLOAT32_INT32 = _named("FLOAT32_INT32")
INT32_INT16_INT8_UINT32_UINT16_UINT8 = _named("INT32_INT16_INT8_UINT32_UINT16_UINT8")
INT8_UINT8 = _named("INT8_UINT8")
UINT32_UINT16_UINT8 = _named("UINT32_UINT16_UINT8")
UINT64_UINT32_UINT16_UINT8 = _named("UINT64_UINT32_UINT16_UINT8")
FLOAT32_FLOAT16_INT16_INT8_UINT16_UINT8 = _named("FLOAT32_FLOAT16_INT16_INT8_UINT16_UINT8")
FLOAT32_FLOAT16_INT32_INT16_UINT32_UINT16 = _named("FLOAT32_FLOAT16_INT32_INT16_UINT32_UINT16")
FLOAT32_FLOAT16_INT8_UINT8 = _named("FLOAT32_FLOAT16_INT8_UINT8")
INT64_INT32_UINT64_UINT32 = _named("INT64_INT32_UINT64_UINT32")
UINT64_UINT32 = _named("UINT64_UINT32")
INT32 = _named("INT32")
INT8_INT4_UINT8_UINT4 = _named("INT8_INT4_UINT8_UINT4")
FLOAT32_FLOAT16_INT8_INT4_UINT8_UINT4 = _named("FLOAT32_FLOAT16_INT8_INT4_UINT8_UINT4")

TYPE_LISTS = {name: value for name, value in globals().items()
              if name.isupper() and isinstance(value, tuple) and value and isinstance(value[0], DataType)}
__all__ += [name for name in TYPE_LISTS if name not in __all__]
