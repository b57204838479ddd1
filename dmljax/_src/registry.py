"""The operator registry, the one name normalizer, and the public catalog.

``canonical_name`` is the only place an operator name is read: the full enum name
(``DML_OPERATOR_ELEMENT_WISE_IF``), DxDispatch's short form (``ELEMENT_WISE_IF``), dmljax's Python
name (``element_wise_if``), an alias (``SCATTER``) or the enum value (88). Everything that takes an
operator name (``get_operator``, ``compile_operator``, DxDispatch models, fused activations, the
command line, the benchmarks) goes through it, so a name means the same thing everywhere.
"""

from __future__ import annotations

import dataclasses
import difflib
import numbers
from typing import Callable

from dmljax._src.catalog import BY_NAME, BY_VALUE, CATALOG, PREFIX, CatalogEntry
from dmljax._src.errors import OperatorNotImplementedError, UnknownOperatorError, Violation, quote
from dmljax._src.feature_level import FeatureLevel

__all__ = ["canonical_name", "entry", "get_operator", "registry", "register", "catalog",
           "implemented", "not_implemented_error"]

_REGISTRY: dict[str, Callable] = {}


def _key(name: str) -> str:
    key = name.strip().upper()
    return key if key.startswith(PREFIX) else PREFIX + key


def entry(name: object) -> CatalogEntry | None:
    """The catalog entry ``name`` denotes (any spelling ``canonical_name`` takes), or None."""
    if isinstance(name, bool):
        return None
    if isinstance(name, numbers.Integral):
        return BY_VALUE.get(int(name))
    if isinstance(name, str) and len(name) < 200:
        return BY_NAME.get(_key(name))
    return None


def canonical_name(name: object) -> str:
    """The full enum name of the DirectML operator ``name`` denotes, implemented or not.

    Raises UnknownOperatorError (a ValidationError) for anything that is not a DirectML operator,
    with the closest names."""
    e = entry(name)
    if e is not None:
        return e.enum_name
    hint = ""
    if isinstance(name, str):
        close = difflib.get_close_matches(_key(name[:200]), list(BY_NAME), n=3, cutoff=0.75)
        tail = "_" + name.strip().upper()
        ends = [n for n in BY_NAME if n.endswith(tail)] if len(tail) > 2 else []
        hint = ", ".join(list(dict.fromkeys(ends[:3] + close))[:3])
        found = f"{quote(name)} is not a DirectML operator type"
    elif isinstance(name, numbers.Integral) and not isinstance(name, bool):
        found = f"{quote(name)} is not a DML_OPERATOR_TYPE value (1 to {len(CATALOG)})"
    else:
        found = f"{quote(name)} ({type(name).__name__}) is not an operator name"
    raise UnknownOperatorError("dmljax", "DML_OPERATOR_TYPE", None, [Violation(
        "", "", found, f"did you mean {hint}" if hint else "",
        "name an operator by its enum name (DML_OPERATOR_ELEMENT_WISE_IF), its short form "
        "(ELEMENT_WISE_IF), its Python name (element_wise_if) or its value; `dmljax ops --all` "
        "lists DirectML's operators")])


def not_implemented_error(enum_name: str, level: FeatureLevel | None = None) -> OperatorNotImplementedError:
    """The error for a DirectML operator that dmljax does not implement yet."""
    e = BY_NAME[enum_name]
    return OperatorNotImplementedError(e.python_name, e.enum_name, level.dml_name if level else None, [Violation(
        "", "", f"{e.enum_name} is not implemented yet in dmljax (it is a DirectML operator, "
        f"introduced in {e.introduced.dml_name}, family {e.family})",
        tip=f"`dmljax ops --all` lists DirectML's {len(CATALOG)} operators and the "
            f"{len(_REGISTRY)} that dmljax implements")])


def get_operator(name: object) -> Callable:
    """The operator for a DML enum name (``"DML_OPERATOR_ELEMENT_WISE_IF"``), its short form
    (``"ELEMENT_WISE_IF"``, as DxDispatch writes it), its Python name, an alias or its enum value.

    Raises UnknownOperatorError for a name that is not DirectML's and OperatorNotImplementedError
    (also a NotImplementedError) for a DirectML operator dmljax does not implement yet; both are
    ValidationErrors (ValueErrors).

    >>> import dmljax
    >>> dmljax.get_operator("ELEMENT_WISE_IF") is dmljax.element_wise_if
    True
    """
    enum_name = canonical_name(name)
    op = _REGISTRY.get(enum_name)
    if op is None:
        raise not_implemented_error(enum_name)
    return op


def implemented(enum_name: str) -> Callable | None:
    """The registered operator for a full enum name, or None."""
    return _REGISTRY.get(enum_name)


def register(op: Callable) -> None:
    """Add an operator built by ``@operator``; its record names a catalog entry."""
    name = op.spec.enum_name
    if name not in BY_NAME or BY_NAME[name].enum_name != name:
        raise ValueError(f"{name} is not a DirectML operator's enum name")
    if name in _REGISTRY:
        raise ValueError(f"{name} declared twice")
    _REGISTRY[name] = op


def registry() -> dict[str, Callable]:
    """Every implemented operator, by DML enum name, in enum-value order."""
    return dict(sorted(_REGISTRY.items(), key=lambda kv: kv[1].spec.value))


def catalog() -> tuple[CatalogEntry, ...]:
    """All 177 DirectML operators, in enum-value order: enum name and value, aliases,
    introducing feature level, family, reference page, and whether dmljax implements it.

    >>> import dmljax
    >>> lstm = [e for e in dmljax.catalog() if e.short_name == "LSTM"][0]
    >>> lstm.value, lstm.introduced.version, lstm.family, lstm.implemented
    (77, '1.0', 'recurrent', True)
    """
    return tuple(dataclasses.replace(e, implemented=e.enum_name in _REGISTRY) for e in CATALOG)
