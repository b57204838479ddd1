"""The operator registry, the one name normalizer, and the public catalog.

``canonical_name`` is the only place an operator name is read: the full enum name
(``DML_OPERATOR_ELEMENT_WISE_IF``), DxDispatch's short form (``ELEMENT_WISE_IF``), dmljax's Python
name (``element_wise_if``), an alias (``SCATTER``) or the enum value (88). Everything that takes an
operator name (``get_operator``, ``compile_operator``, DxDispatch models, fused activations, the
command line, the benchmarks) goes through it, so a name means the same thing everywhere.

``find_operators`` reads the names users know from elsewhere (known_names.py: ONNX's ``LayerNormalization``,
PyTorch's ``torch.nn.functional.layer_norm``, ``jax.nn.gelu``, WebNN's ``matmul``) and ranks the
operators they lead to; ``get_operator`` takes such a name when it leads to one operator, and
``dmljax ops NAME`` lists what it leads to. ``canonical_name`` does not: a DxDispatch model names
its operators as DirectML does.
"""

from __future__ import annotations

import dataclasses
import difflib
import functools
import numbers
import re
from typing import Callable

from dmljax._src.catalog import BY_NAME, BY_VALUE, CATALOG, PREFIX, CatalogEntry
from dmljax._src.errors import OperatorNotImplementedError, UnknownOperatorError, Violation, quote
from dmljax._src.feature_level import FeatureLevel

__all__ = ["canonical_name", "entry", "get_operator", "registry", "register", "catalog",
           "implemented", "not_implemented_error", "find_operators", "OperatorMatch"]

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
        hint = ", ".join(_suggestions(name))
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


def _suggestions(name: str, n: int = 3) -> list[str]:
    """Up to ``n`` enum names for a name that is not DirectML's: the operators ``find_operators`` ranks
    first, then enumerators ending in it, then close spellings."""
    ranked = [m.entry.enum_name for m in find_operators(name)]
    close = difflib.get_close_matches(_key(name[:200]), list(BY_NAME), n=3, cutoff=0.75)
    tail = "_" + name.strip().upper()
    ends = [k for k in BY_NAME if k.endswith(tail)] if len(tail) > 2 else []
    return list(dict.fromkeys(ranked[:n] + ends[:3] + close))[:n]


# ------------------------------------------------------------------------------ find_operators
RANKS = ("a DirectML name", "a known name", "part of a name", "a close spelling")
"""What each ``OperatorMatch.rank`` means, best first."""


@dataclasses.dataclass(frozen=True)
class OperatorMatch:
    """An operator a name leads to (``find_operators``).

    rank: 0 the name is DirectML's (any spelling ``canonical_name`` takes); 1 it is one of the
        operator's known names (known_names.py) or the initials of one (``MVN``); 2 it is part of
        one (``attention`` of ``MULTIHEAD_ATTENTION``); 3 it is spelled close to one.
    names: the names that matched, each as (framework, name); the framework is ``DirectML`` for
        the operator's own name.
    """

    entry: CatalogEntry
    rank: int
    names: tuple[tuple[str, str], ...] = ()

    @property
    def label(self) -> str:
        """``DML_OPERATOR_ACTIVATION_SOFTMAX1 (ONNX Softmax; PyTorch torch.softmax, ...)``: the
        operator and the names of it that matched, framework by framework."""
        groups: dict[str, list[str]] = {}
        for f, n in self.names:
            if f != "DirectML":
                groups.setdefault(f, []).append(n)
        named = "; ".join(f"{f} {', '.join(ns)}" for f, ns in groups.items())
        return self.entry.enum_name + (f" ({named})" if named else "")


def _norm(name: str) -> str:
    """A name as find_operators compares it: the part after the last dot, lower case, letters and digits
    only (``torch.nn.functional.layer_norm`` and ``LayerNorm`` are both ``layernorm``)."""
    return re.sub(r"[^0-9a-z]", "", name.rsplit(".", 1)[-1].lower())


def _words(name: str) -> list[str]:
    """The words of a name's last part, lower case: ``MEAN_VARIANCE_NORMALIZATION1`` and
    ``MeanVarianceNormalization`` give mean, variance, normalization; ``QLinearMatMul`` gives q,
    linear, mat, mul."""
    last = name.rsplit(".", 1)[-1].rstrip("0123456789")
    return [w.lower() for w in re.findall(r"[A-Z]+(?![a-z])|[A-Z][a-z0-9]*|[a-z0-9]+", last)]


def _initials(words: list[str]) -> str:
    """``mvn`` for mean, variance, normalization; empty for a name of one word."""
    return "".join(w[0] for w in words) if len(words) > 1 else ""


def _starts(words: list[str]) -> tuple[str, ...]:
    """The name from each of its words on (``attention`` of scaled, dot, product, attention)."""
    return tuple("".join(words[i:]) for i in range(len(words)))


@functools.lru_cache(maxsize=1)
def _index() -> tuple:
    """(entry, framework, name, normalized name, initials, word starts) for every name of every
    operator."""
    rows = []
    for e in CATALOG:
        names = [("DirectML", n) for n in (e.short_name, *e.aliases)]
        names += [(f, n) for f, ns in e.known_names.by_framework() for n in ns]
        for f, n in names:
            words = _words(n)
            rows.append((e, f, n, _norm(n), _initials(words), _starts(words)))
    return tuple(rows)


def find_operators(name: object) -> list[OperatorMatch]:
    """The operators ``name`` leads to, best first: by rank (OperatorMatch), then by how many of an
    operator's names matched, then the newest operator first. Empty when nothing is close.

    >>> import dmljax
    >>> [m.entry.short_name for m in dmljax.find_operators("layernorm") if m.rank == 1]
    ['MEAN_VARIANCE_NORMALIZATION2', 'MEAN_VARIANCE_NORMALIZATION1']
    >>> dmljax.find_operators("gelu")[0].names
    (('ONNX', 'Gelu'), ('PyTorch', 'torch.nn.functional.gelu'), ('JAX', 'jax.nn.gelu'), ('WebNN', 'gelu'))
    """
    e = entry(name)
    if e is not None:
        return [OperatorMatch(e, 0, (("DirectML", e.short_name),))]
    if not isinstance(name, str) or not name.strip() or len(name) > 200:
        return []
    q = _norm(name)
    if not q:
        return []
    found: dict[str, tuple[int, list]] = {}
    score: dict[str, float] = {}  # how close a rank-3 operator's closest name is
    for rank, test in ((1, lambda row: row[3] == q or (len(q) > 1 and row[4] == q)),
                       (2, lambda row: len(q) > 2 and any(s.startswith(q) for s in row[5]))):
        for row in _index():
            e, f, n = row[:3]
            if test(row) and found.get(e.short_name, (rank,))[0] == rank:
                found.setdefault(e.short_name, (rank, []))[1].append((f, n))
    if not found:
        for e, f, n, normalized, _, _ in _index():
            ratio = difflib.SequenceMatcher(None, q, normalized).ratio()
            if ratio >= 0.8:
                found.setdefault(e.short_name, (3, []))[1].append((f, n))
                score[e.short_name] = max(score.get(e.short_name, 0.0), ratio)
    matches = [OperatorMatch(BY_NAME[PREFIX + k], rank, tuple(dict.fromkeys(names))) for k, (rank, names) in found.items()]
    return sorted(matches, key=lambda m: (m.rank, -score.get(m.entry.short_name, 0.0), -len(m.names),
                                          -m.entry.value))


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
    (``"ELEMENT_WISE_IF"``, as DxDispatch writes it), its Python name, an alias or its enum value;
    or for a name it goes by in ONNX, PyTorch, JAX or WebNN (``"gelu"``, ``"torch.matmul"``,
    ``"LayerNormalization"``) where that name leads to one operator (``find_operators``). A known name that
    leads to several (``"softmax"``: ACTIVATION_SOFTMAX1 and ACTIVATION_SOFTMAX) is refused,
    naming them.

    Raises UnknownOperatorError for a name that is not DirectML's and OperatorNotImplementedError
    (also a NotImplementedError) for a DirectML operator dmljax does not implement yet; both are
    ValidationErrors (ValueErrors).

    >>> import dmljax
    >>> dmljax.get_operator("ELEMENT_WISE_IF") is dmljax.element_wise_if
    True
    >>> dmljax.get_operator("torch.nn.functional.gelu") is dmljax.activation_gelu
    True
    """
    if entry(name) is None and isinstance(name, str):
        known = [m for m in find_operators(name) if m.rank == 1]
        if len(known) == 1:
            name = known[0].entry.enum_name
        elif known:
            raise UnknownOperatorError("dmljax", "DML_OPERATOR_TYPE", None, [Violation(
                "", "", f"{quote(name)} is not a DirectML operator type; it is the name of "
                f"{len(known)} DirectML operators elsewhere",
                "pick one: " + "; ".join(m.label for m in known),
                "`dmljax ops NAME` shows what each one computes")])
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
