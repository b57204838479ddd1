"""DirectML structures that operators take as attributes (DML_SCALE_BIAS, ...)."""

from __future__ import annotations

from typing import Mapping, NamedTuple

__all__ = ["ScaleBias"]


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
                    f"a DML_SCALE_BIAS mapping has exactly the members Scale and Bias; got {sorted(keys)}"
                )
            return cls(value["Scale"], value["Bias"])
        if isinstance(value, (tuple, list)) and len(value) == 2:
            return cls(*value)
        raise TypeError(
            "expected dmljax.ScaleBias(scale, bias), a (scale, bias) pair or "
            f"{{'Scale': ..., 'Bias': ...}}; got {type(value).__name__}"
        )
