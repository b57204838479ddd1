"""The one decorator that binds an OpSpec to its formula, and the operator registry.

``@operator(SPEC)`` above a formula ``def`` makes the public operator: it parses the call
against the record's signature, resolves the feature level, validates (validate.py), and only
then runs the formula under ``jax.jit`` with the attributes static, inside
``jax.named_scope(<DML enum name>)``. The docstring and ``__signature__`` come from the record.
"""

from __future__ import annotations

import collections
import difflib
import functools
import inspect
import textwrap
from typing import Callable

import jax
import numpy as np

from dmljax._src.feature_level import FeatureLevel, resolve_feature_level
from dmljax._src.spec import REQUIRED, OpSpec
from dmljax._src.validate import CheckedCall, check_call, static_key

__all__ = ["operator", "get_operator", "registry", "TRACE_COUNTS", "support_table_text", "docstring"]

_REGISTRY: dict[str, Callable] = {}
TRACE_COUNTS: collections.Counter = collections.Counter()
"""How many times each operator's formula was traced (by DML enum name); tests read it."""

_HALF_ARG = "allow_half_precision_computation"

# XLA may drop a rounding to FLOAT16 followed by a widening back (excess precision), which it does
# on GPU and not on CPU: an operator's own compile forbids that, so each rounding the record asks
# for happens on every backend. Inside a caller's jax.jit the caller's options apply (README).
_STRICT_PRECISION = {"xla_allow_excess_precision": False}


def registry() -> dict[str, Callable]:
    """Every implemented operator, by DML enum name, in enum-value order."""
    return dict(sorted(_REGISTRY.items(), key=lambda kv: kv[1].spec.value))


def get_operator(name: str | int) -> Callable:
    """The operator for a DML enum name (``"DML_OPERATOR_ELEMENT_WISE_IF"``), its short form
    (``"ELEMENT_WISE_IF"``, as DxDispatch writes it), its Python name, or its enum value."""
    if isinstance(name, int) and not isinstance(name, bool):
        for op in _REGISTRY.values():
            if op.spec.value == name:
                return op
        raise ValueError(f"no implemented operator has DML_OPERATOR_TYPE value {name}")
    key = str(name).strip().upper()
    if not key.startswith("DML_OPERATOR_"):
        key = "DML_OPERATOR_" + key
    if key in _REGISTRY:
        return _REGISTRY[key]
    close = difflib.get_close_matches(key, list(_REGISTRY), n=3)
    hint = f"; did you mean {', '.join(close)}?" if close else ""
    raise ValueError(
        f"{name!r} is not an operator dmljax implements{hint} "
        f"(`dmljax ops` lists the {len(_REGISTRY)} that are)"
    )


def _signature(spec: OpSpec, math: bool) -> inspect.Signature:
    P = inspect.Parameter
    params = [P(t.arg, P.POSITIONAL_OR_KEYWORD) for t in spec.inputs if not t.optional]
    params += [P(t.arg, P.POSITIONAL_OR_KEYWORD, default=None) for t in spec.inputs if t.optional]
    for p in spec.params:
        params.append(P(p.arg, P.KEYWORD_ONLY, **({} if p.default is REQUIRED else {"default": p.default})))
    for t in spec.outputs:
        if t.default_data_type is not None:
            params.append(P(t.data_type_arg, P.KEYWORD_ONLY, default=t.default_data_type.name))
    if math:
        params.append(P(_HALF_ARG, P.KEYWORD_ONLY, default=False))
    params.append(P("feature_level", P.KEYWORD_ONLY, default=None))
    return inspect.Signature(params)


def support_table_text(spec: OpSpec, level: FeatureLevel | None = None) -> str:
    """The support tables as Markdown (only the one in force at ``level`` if given)."""
    tables = spec.support if level is None else [t for t in [spec.support_at(level)] if t]
    out = []
    for t in tables:
        out.append(f"{t.level.dml_name} and above:\n")
        out.append("| Tensor | Kind | Supported dimension counts | Supported data types |")
        out.append("| ------ | ---- | -------------------------- | -------------------- |")
        for name, sup in t.tensors.items():
            kind = spec.tensor(name).kind.capitalize()
            out.append(f"| {name} | {kind} | {sup.dims_text()} | {', '.join(d.name for d in sup.data_types)} |")
        out.append("")
    return "\n".join(out).rstrip()


def docstring(spec: OpSpec, extra: str) -> str:
    lines = [
        f"{spec.enum_name} (enum value {spec.value}; introduced in {spec.introduced.dml_name}).",
        "",
        spec.summary,
        "",
        "Formula, as on the page::",
        "",
        *("    " + ln for ln in spec.formula.strip("\n").splitlines()),
        "",
        "Args:",
    ]
    for t in spec.inputs:
        lines.append(f"    {t.arg}: {t.dml_name}{' (optional)' if t.optional else ''}.")
    for p in spec.params:
        dflt = "required" if p.default is REQUIRED else f"default {p.default!r}"
        lines.append(f"    {p.arg}: {p.dml_name} ({p.type}, {dflt}, static). {p.doc}".rstrip())
    for t in spec.outputs:
        if t.default_data_type is not None:
            lines.append(f"    {t.data_type_arg}: the DataType of {t.dml_name} (default {t.default_data_type.name}).")
    if spec.math:
        lines.append(f"    {_HALF_ARG}: compute FLOAT16 in FLOAT16, as"
                     " DML_EXECUTION_FLAG_ALLOW_HALF_PRECISION_COMPUTATION (default: in FLOAT32).")
    lines += [
        "    feature_level: the DML_FEATURE_LEVEL to validate against (default: the",
        "        ``dmljax.feature_level`` block, else $DMLJAX_FEATURE_LEVEL, else the newest).",
        "",
        "Returns:",
        "    " + ", ".join(t.dml_name for t in spec.outputs) + ".",
        "",
        "Raises:",
        "    ValidationError: the call breaks the page's rules at the feature level (all problems listed).",
    ]
    if extra.strip():
        head, _, body = extra.strip("\n").partition("\n")
        lines += ["", head.strip()]
        lines += ["    " + ln if ln.strip() else "" for ln in textwrap.dedent(body).splitlines()]
    if spec.gradient:
        lines += ["", "Gradient:", "    " + spec.gradient]
    if spec.notes:
        lines += ["", "Notes:", "    " + spec.notes]
    lines += ["", "Support::", ""]
    lines += ["    " + ln if ln else "" for ln in support_table_text(spec).splitlines()]
    return "\n".join(lines) + "\n"


def operator(spec: OpSpec) -> Callable[[Callable], Callable]:
    """Bind ``spec`` to the formula below it and register the public operator.

    The formula takes the inputs as arrays and the attributes already validated and normalized
    (FLOATs as float32-valued Python floats, ScaleBias or None, chosen output DataTypes), plus
    ``allow_half_precision_computation`` if the operator does float math.
    """

    def bind(formula: Callable) -> Callable:
        fparams = list(inspect.signature(formula).parameters)
        math = _HALF_ARG in fparams
        if math != spec.math:
            raise TypeError(f"{spec.enum_name}: formula must take {_HALF_ARG} iff spec.math")
        sig = _signature(spec, math)
        expected = [p for p in sig.parameters if p != "feature_level"]
        if fparams != expected:
            raise TypeError(f"{spec.enum_name}: formula parameters {fparams} != {expected}")
        attr_args = [p.arg for p in spec.params]
        type_args = [t for t in spec.outputs if t.default_data_type is not None]
        n_in = len(spec.inputs)

        def run(statics, *arrays):
            TRACE_COUNTS[spec.enum_name] += 1
            with jax.named_scope(spec.enum_name):
                return formula(*arrays, **dict(statics))

        # One jitted callable per static configuration (and per top-level / nested use: only a
        # top-level jit takes compiler options), called with the arrays alone, so that calls
        # after the first take JAX's fast dispatch path.
        executables: dict[tuple, Callable] = {}

        def executable(statics: tuple, nested: bool) -> Callable:
            key = (static_key(statics), nested)  # -0.0 and 0.0 are different attributes
            fn = executables.get(key)
            if fn is None:
                options = None if nested else _STRICT_PRECISION
                fn = executables[key] = jax.jit(functools.partial(run, statics), compiler_options=options)
            return fn

        params = sig.parameters
        positional = [n for n, p in params.items() if p.kind is inspect.Parameter.POSITIONAL_OR_KEYWORD]
        defaults = {n: p.default for n, p in params.items() if p.default is not inspect.Parameter.empty}
        required = {n for n in params if n not in defaults}

        def bind_arguments(args, kwargs) -> dict:
            # The common case without inspect's generality (it costs more than a cached jit
            # dispatch); anything unusual goes to Signature.bind for its standard TypeError.
            if len(args) <= len(positional) and not (kwargs.keys() - params.keys()):
                a = dict(defaults)
                a.update(zip(positional, args))
                if not any(k in kwargs for k in positional[: len(args)]):
                    a.update(kwargs)
                    if required <= a.keys():
                        return a
            try:
                bound = sig.bind(*args, **kwargs)
            except TypeError as e:
                raise TypeError(f"{spec.python_name}: {e}") from None
            bound.apply_defaults()
            return bound.arguments

        @functools.wraps(formula)
        def public(*args, **kwargs):
            a = bind_arguments(args, kwargs)
            level = resolve_feature_level(a["feature_level"])
            inputs = {t.dml_name: a[t.arg] for t in spec.inputs}
            call: CheckedCall = check_call(
                spec, level, inputs,
                {p.dml_name: a[p.arg] for p in spec.params},
                {t.dml_name: a[t.data_type_arg] for t in type_args},
            )
            statics = tuple((arg, call.attrs[p.dml_name]) for arg, p in zip(attr_args, spec.params))
            statics += tuple((t.data_type_arg, call.tensors[t.dml_name].data_type) for t in type_args)
            if math:
                half = a[_HALF_ARG]
                if not isinstance(half, bool):
                    raise TypeError(f"{spec.python_name}: {_HALF_ARG} must be True or False, got {half!r}")
                statics += ((_HALF_ARG, half),)
            arrays = [a[t.arg] for t in spec.inputs]
            assert len(arrays) == n_in
            nested = any(isinstance(x, jax.core.Tracer) for x in arrays)
            out = executable(statics, nested)(*arrays)
            for o, t in zip(out if isinstance(out, tuple) else (out,), spec.outputs):
                info = call.tensors[t.dml_name]
                if o.shape != info.shape or o.dtype != info.data_type.dtype:
                    raise AssertionError(f"dmljax bug: {spec.enum_name} made {o.shape} {o.dtype}, "
                                         f"validated {info.shape} {info.data_type.name}")
            return out

        public.__signature__ = sig
        public.__doc__ = docstring(spec, formula.__doc__ or "")
        public.spec = spec
        public.formula = formula
        if spec.enum_name in _REGISTRY:
            raise ValueError(f"{spec.enum_name} declared twice")
        _REGISTRY[spec.enum_name] = public
        return public

    return bind
