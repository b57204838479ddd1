"""DML_FEATURE_LEVEL: ordered levels, the default, and how a call chooses one.

A call's level is, in this order: its ``feature_level=`` argument; the innermost
``with dmljax.feature_level(...)`` block; the ``DMLJAX_FEATURE_LEVEL`` environment variable;
the newest level.
"""

from __future__ import annotations

import contextlib
import contextvars
import enum
import os
import re
from typing import Iterator, Union

from dmljax._src.errors import quote

__all__ = ["FeatureLevel", "FeatureLevelLike", "feature_level", "resolve_feature_level", "ENV_VAR"]

ENV_VAR = "DMLJAX_FEATURE_LEVEL"


class FeatureLevel(enum.IntEnum):
    """DML_FEATURE_LEVEL. Members are ordered; the value is DirectML's (``FL_2_1 == 0x2100``)."""

    FL_1_0 = 0x1000
    FL_2_0 = 0x2000
    FL_2_1 = 0x2100
    FL_3_0 = 0x3000
    FL_3_1 = 0x3100
    FL_4_0 = 0x4000
    FL_4_1 = 0x4100
    FL_5_0 = 0x5000
    FL_5_1 = 0x5100
    FL_5_2 = 0x5200
    FL_6_0 = 0x6000
    FL_6_1 = 0x6100
    FL_6_2 = 0x6200
    FL_6_3 = 0x6300
    FL_6_4 = 0x6400

    @property
    def dml_name(self) -> str:
        """``DML_FEATURE_LEVEL_2_1``."""
        return "DML_FEATURE_LEVEL_" + self.name[3:]

    @property
    def version(self) -> str:
        """``"2.1"``."""
        return self.name[3:].replace("_", ".")

    def __str__(self) -> str:
        return self.dml_name

    def __repr__(self) -> str:
        return f"FeatureLevel.{self.name}"

    @classmethod
    def newest(cls) -> "FeatureLevel":
        return max(cls)

    @classmethod
    def parse(cls, value: "FeatureLevelLike") -> "FeatureLevel":
        """Accepts a member, ``"2.1"``, ``"2_1"``, ``"DML_FEATURE_LEVEL_2_1"``, ``"FL_2_1"`` or the
        enum value ``0x2100``. Anything else raises ``ValueError`` listing the valid levels."""
        if isinstance(value, cls):
            return value
        if isinstance(value, int) and not isinstance(value, bool):
            try:
                return cls(value)
            except ValueError:
                pass
        elif isinstance(value, str) and len(value) <= 100:
            m = re.fullmatch(
                r"\s*(?:DML_FEATURE_LEVEL_|FL_?)?(\d+)[._](\d+)\s*", value, flags=re.IGNORECASE
            )
            if m:
                name = f"FL_{int(m.group(1))}_{int(m.group(2))}"
                if name in cls.__members__:
                    return cls[name]
        valid = ", ".join(level.version for level in cls)
        raise ValueError(
            f"{quote(value)} is not a DirectML feature level; valid: {valid} "
            f"(also written '2_1', 'DML_FEATURE_LEVEL_2_1' or FeatureLevel.FL_2_1)"
        )


FeatureLevelLike = Union[FeatureLevel, str, int]

_CONTEXT: contextvars.ContextVar[FeatureLevel | None] = contextvars.ContextVar(
    "dmljax_feature_level", default=None
)


@contextlib.contextmanager
def feature_level(level: FeatureLevelLike) -> Iterator[FeatureLevel]:
    """Run the operators called inside the block at ``level`` (unless a call names its own).

    >>> import dmljax
    >>> with dmljax.feature_level("3.0") as fl:
    ...     print(fl)
    DML_FEATURE_LEVEL_3_0
    """
    parsed = FeatureLevel.parse(level)
    token = _CONTEXT.set(parsed)
    try:
        yield parsed
    finally:
        _CONTEXT.reset(token)


def resolve_feature_level(explicit: FeatureLevelLike | None = None) -> FeatureLevel:
    """The level a call runs at: argument, then context manager, then environment, then newest."""
    if explicit is not None:
        return FeatureLevel.parse(explicit)
    ctx = _CONTEXT.get()
    if ctx is not None:
        return ctx
    env = os.environ.get(ENV_VAR)
    if env is not None and env.strip():
        try:
            return FeatureLevel.parse(env)
        except ValueError as e:
            raise ValueError(f"environment variable {ENV_VAR}: {e}") from None
    return _NEWEST


_NEWEST = FeatureLevel.newest()
