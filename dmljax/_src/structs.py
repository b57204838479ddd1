"""DirectML structures that operators take as attributes (DML_SCALE_BIAS, ...)."""

from __future__ import annotations

import math as _math
import numbers as _numbers
from typing import Mapping, NamedTuple

import numpy as _np

from dmljax._src.dtypes import DataType as _DataType, round_to_float as _round_to_float
from dmljax._src.errors import quote as _quote

__all__ = ["ScaleBias", "ScalarUnion", "Size2D"]


class ScaleBias(NamedTuple):
    """DML_SCALE_BIAS: ``g(x) = x * Scale + Bias``, applied to an operator's input first.

    Both members are C ``float``s: dmljax rounds them to float32 when the operator is created.
    Also accepted wherever a ScaleBias is: a ``(scale, bias)`` pair or a mapping with DML's member
    names, ``{"Scale": 2, "Bias": 1}``.
    """

    scale: float
    bias: float

    @classmethod
    def coerce(cls, value: object) -> "ScaleBias":
        if isinstance(value, cls):
            return value
        if isinstance(value, Mapping):
            keys = set(value)
            if keys != {"Scale", "Bias"}:
                raise TypeError(
                    "a DML_SCALE_BIAS mapping has exactly the members Scale and Bias; got "
                    f"{_quote(sorted(map(_quote, keys)))}"
                )
            return cls(value["Scale"], value["Bias"])
        if isinstance(value, (tuple, list)) and len(value) == 2:
            return cls(*value)
        raise TypeError(
            "expected dmljax.ScaleBias(scale, bias), a (scale, bias) pair or "
            f"{{'Scale': ..., 'Bias': ...}}; got {type(value).__name__}"
        )


class Size2D(NamedTuple):
    """DML_SIZE_2D: a width and a height, two UINTs (UPSAMPLE_2D's ScaleSize, ROI_POOLING's
    PooledSize), in the struct's member order.

    Also accepted wherever a Size2D is: a mapping with DML's member names, ``{"Width": 2,
    "Height": 3}`` (as a DxDispatch desc writes it), or a ``(width, height)`` pair.
    """

    width: int
    height: int

    @classmethod
    def coerce(cls, value: object) -> "Size2D":
        """A Size2D from any accepted spelling (its members unchecked); TypeError otherwise."""
        if isinstance(value, cls):
            return value
        if isinstance(value, Mapping):
            keys = set(value)
            if keys != {"Width", "Height"}:
                raise TypeError(
                    "a DML_SIZE_2D mapping has exactly the members Width and Height; got "
                    f"{_quote(sorted(map(_quote, keys)))}"
                )
            return cls(value["Width"], value["Height"])
        if isinstance(value, (tuple, list)) and len(value) == 2:
            return cls(*value)
        raise TypeError(
            "expected dmljax.Size2D(width, height), a (width, height) pair or "
            f"{{'Width': ..., 'Height': ...}}; got {type(value).__name__}"
        )


# --------------------------------------------------------------------------------------------
# DML_SCALAR_UNION: one scalar whose meaning a separate DML_TENSOR_DATA_TYPE field gives
# (CLIP1's MinMaxDataType). The union's members are Bytes, Int8 .. UInt64, Float32, Float64;
# FLOAT16 has no member of its own, so a FLOAT16 value lives in the first two Bytes.

_UNION_MEMBERS = {
    "Int8": _DataType.INT8, "UInt8": _DataType.UINT8, "Int16": _DataType.INT16,
    "UInt16": _DataType.UINT16, "Int32": _DataType.INT32, "UInt32": _DataType.UINT32,
    "Int64": _DataType.INT64, "UInt64": _DataType.UINT64, "Float32": _DataType.FLOAT32,
    "Float64": _DataType.FLOAT64,
}


class ScalarUnion:
    """DML_SCALAR_UNION holding one value of ``data_type`` (the field that types it, such as
    CLIP1's MinMaxDataType, must be the tensor's DataType).

    ``ScalarUnion("INT8", -5)``, ``ScalarUnion("FLOAT16", 0.1)``. Wherever an operator takes a
    DML_SCALAR_UNION it also accepts a plain Python number, or a mapping naming the union member
    as DirectML spells it (``{"Float32": 0.5}``, ``{"Int32": 7}``, ``{"Bytes": [0, 60, 0, 0, 0, 0, 0, 0]}``).

    The value must be representable in ``data_type``: an integer type takes integral values
    inside its range only (5.0 is 5; 2.5, 300 for UINT8, NaN and inf are refused, never wrapped);
    a float type takes any number, rounded to nearest as C does (a finite value that overflows
    to inf is refused). Equality and hashing go by the union's bytes, so NaN equals itself.
    """

    __slots__ = ("data_type", "value")

    def __init__(self, data_type: object, value: object):
        dt = _DataType.parse(data_type)
        if dt in (_DataType.UINT4, _DataType.INT4):
            raise ValueError(f"a DML_SCALAR_UNION has no {dt.name} reading")
        object.__setattr__(self, "data_type", dt)
        object.__setattr__(self, "value", _represent(value, dt))

    def __setattr__(self, name, value):
        raise AttributeError("ScalarUnion is immutable")

    @property
    def bytes(self) -> bytes:
        """The union's 8 bytes (little-endian, zero-padded), as DirectML reads them."""
        return _np.asarray(self.value, self.data_type.dtype).tobytes().ljust(8, b"\0")

    def as_numpy(self) -> _np.generic:
        """The value as a numpy scalar of ``data_type``."""
        return _np.asarray(self.value, self.data_type.dtype)[()]

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, ScalarUnion):
            return NotImplemented
        return self.data_type is other.data_type and self.bytes == other.bytes

    def __hash__(self) -> int:
        return hash((self.data_type, self.bytes))

    def __repr__(self) -> str:
        return f"ScalarUnion({self.data_type.name}, {_quote(self.value)})"

    @classmethod
    def coerce(cls, value: object, data_type: _DataType) -> "ScalarUnion":
        """``value`` read as a ``data_type`` union: a ScalarUnion of that type, a number, or a
        one-member mapping. Raises ValueError (with the reason) otherwise."""
        if isinstance(value, ScalarUnion):
            if value.data_type is not data_type:
                raise ValueError(f"is a {value.data_type.name} ScalarUnion but the union is read as {data_type.name}")
            return value
        if isinstance(value, Mapping):
            if len(value) != 1:
                raise ValueError(f"is a mapping with {len(value)} members; a DML_SCALAR_UNION mapping names exactly one")
            (member, v), = value.items()
            key = {k.lower(): k for k in (*_UNION_MEMBERS, "Bytes")}.get(
                member.lower() if isinstance(member, str) else None)
            if key is None:
                raise ValueError(f"names member {_quote(member)}; DML_SCALAR_UNION members: Bytes, "
                                 f"{', '.join(_UNION_MEMBERS)}")
            if key == "Bytes":
                n = data_type.dtype.itemsize  # DirectML reads the first n bytes, as the type
                return cls(data_type, _np.frombuffer(_union_bytes(v)[:n], data_type.dtype)[0])
            if _UNION_MEMBERS[key] is not data_type:
                raise ValueError(f"sets member {key} but the union is read as {data_type.name}")
            return cls(data_type, v)
        return cls(data_type, value)


def _union_bytes(v: object) -> bytes:
    """The 8 bytes of a ``{"Bytes": ...}`` union: a bytes object or a sequence of 8 integers
    0 to 255; anything else (an int, whose ``bytes(n)`` is n zero bytes; a str) is refused."""
    if isinstance(v, (bytes, bytearray)):
        raw = bytes(v)
    elif isinstance(v, (list, tuple)) and len(v) <= 64 and all(
            isinstance(b, (int, _np.integer)) and not isinstance(b, (bool, _np.bool_)) and 0 <= b <= 255
            for b in v):
        raw = bytes(int(b) for b in v)
    else:
        raise ValueError(f"has Bytes {_quote(v)}; Bytes is 8 integers from 0 to 255 (a list, or a bytes object)")
    if len(raw) != 8:
        raise ValueError(f"has {len(raw)} Bytes; the union holds 8")
    return raw


def _exact_integer(value: object) -> int | None:
    """The integer a real number equals exactly (None if it is not integral, or not finite)."""
    if isinstance(value, (int, _np.integer)):
        return int(value)
    if isinstance(value, _np.floating):  # its own precision: a long double may hold 2**60 + 0.5
        if not _np.isfinite(value) or value != _np.floor(value):
            return None
        return int(value)
    if isinstance(value, _numbers.Rational):
        return int(value) if value.denominator == 1 else None
    try:
        f = float(value)
    except (OverflowError, ValueError, TypeError):
        return None
    return int(f) if _math.isfinite(f) and f == _math.floor(f) else None


def _represent(value: object, dt: _DataType) -> int | float:
    """``value`` as the exact Python int or float that a ``dt`` union holds, or ValueError."""
    if isinstance(value, (bool, _np.bool_)) or not isinstance(value, (_numbers.Real, _np.generic)):
        raise ValueError(f"is {_quote(value)} ({type(value).__name__}), not a number")
    if isinstance(value, _np.generic) and not isinstance(value, (_np.integer, _np.floating)):
        raise ValueError(f"is {_quote(value)} ({type(value).__name__}), not a real number")
    if dt.is_integer:
        i = _exact_integer(value)
        if i is None:
            raise ValueError(f"is {_quote(value)}, which is not an integer, so {dt.name} cannot hold it")
        info = _np.iinfo(dt.dtype)
        if not int(info.min) <= i <= int(info.max):
            raise ValueError(f"is {_quote(value)}, outside the range of {dt.name} ({info.min} to {info.max})")
        return i
    try:
        return _round_to_float(value, dt.dtype)
    except OverflowError:
        raise ValueError(f"is {_quote(value)}, outside the range of {dt.name} "
                         f"(largest {float(_np.finfo(dt.dtype).max):.7g})") from None
    except TypeError:
        raise ValueError(f"is {_quote(value)} ({type(value).__name__}), not a real number") from None
