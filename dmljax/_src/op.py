"""The one decorator that binds an OpSpec to its formula and registers the public operator.

``@operator(SPEC)`` above a formula ``def`` makes the public operator: it parses the call
against the record's signature, resolves the feature level, validates (validate.py), and only
then runs the formula under ``jax.jit`` with the attributes static, inside
``jax.named_scope(<DML enum name>)``. The docstring and ``__signature__`` come from the record.
"""

from __future__ import annotations

import collections
import contextlib
import dataclasses
import functools
import inspect
import math
from typing import Any, Callable, Iterator

import jax
import numpy as np

from dmljax._src.docstrings import HALF_ARG, docstring
from dmljax._src.dtypes import x64_enabled
from dmljax._src.errors import ValidationError, Violation, note_call_site, quote
from dmljax._src.feature_level import ENV_VAR, resolve_feature_level
from dmljax._src.kernel_seam import packed_memory, switches
from dmljax._src.numerics import is_flushed, mark_flushed, record_flushed
from dmljax._src.registry import register
from dmljax._src.spec import INFERRED, REQUIRED, OpSpec
from dmljax._src.validate import CheckedCall, check_call, default_platform, static_key

__all__ = ["operator", "TRACE_COUNTS", "OperatorCall", "record_calls", "recording"]

TRACE_COUNTS: collections.Counter = collections.Counter()
"""How many times each operator's formula was traced (by DML enum name); tests read it."""

# XLA may drop a rounding to FLOAT16 followed by a widening back (excess precision), which it does
# on GPU and not on CPU: an operator's own compile forbids that, so each rounding the record asks
# for happens on every backend. Inside a caller's jax.jit the caller's options apply (README).
_STRICT_PRECISION = {"xla_allow_excess_precision": False}

try:  # whether a call happens inside a caller's trace (jit, grad, vmap, ...)
    from jax._src.core import trace_state_clean as _trace_state_clean
except ImportError:  # pragma: no cover  (a JAX without it: never pass compiler options)
    def _trace_state_clean() -> bool:
        return False


@dataclasses.dataclass(frozen=True)
class OperatorCall:
    """One operator call as validated: the record, the checked call (every tensor's Sizes and
    DataType, the attributes by DML name), the feature level and the statics the formula ran
    with. ``record_calls`` collects them."""

    spec: OpSpec
    call: CheckedCall
    level: Any
    statics: tuple
    arrays: tuple | None = None
    """The input arrays as the formula took them, where the call ran outside any trace on
    concrete values (None inside a trace): ``formula(*arrays, **dict(statics))`` gave ``out``."""
    out: Any = None
    """What the call returned (None inside a trace). ``dmljax compare`` evaluates the formula
    again in float64 from ``arrays`` and ``statics``."""


_RECORDERS: list[list[OperatorCall]] = []
_DIRECT_MAX = 256  # direct-call cache entries an operator keeps
try:
    from jax._src.array import ArrayImpl as _ARRAY_IMPL  # a concrete JAX array (not a tracer)
except ImportError:  # pragma: no cover  (another JAX layout: every direct call is validated)
    _ARRAY_IMPL = None
_DEPTH = [0]  # operator calls in progress: those inside another operator's formula are not recorded


@contextlib.contextmanager
def record_calls() -> Iterator[list[OperatorCall]]:
    """Collect the operator calls made inside the block (the outermost ones, in order: an
    operator that another one's formula calls is part of that call). The DirectML graph builder
    of the ONNX front end uses it to see what a traced model calls, with its descs."""
    calls: list[OperatorCall] = []
    _RECORDERS.append(calls)
    try:
        yield calls
    finally:
        _RECORDERS.remove(calls)


def recording() -> bool:
    """Whether operator calls are being recorded (``record_calls``): a composition that could take
    a fused path calls its operators one by one instead, so that the recorder sees each."""
    return bool(_RECORDERS)


def _keyword_key(kwargs: dict) -> tuple:
    """``static_key`` of a call's keyword arguments, plain values first: a float by its value and
    its sign (-0.0 is not 0.0; a NaN equals only itself, so it never finds another call's entry),
    an int, str, bool or None by its type and value, anything else by static_key."""
    out = []
    for k, v in kwargs.items():
        t = type(v)
        if t is float:
            out.append((k, t, v, math.copysign(1.0, v)))
        elif t is int or t is str or t is bool or v is None:
            out.append((k, t, v))
        else:
            out.append((k, static_key(v)))
    return tuple(out)


def _avals(arrays) -> tuple:
    """The shapes and dtypes of a call's arrays (what a trace depends on besides the statics); a
    tensor array's (JOIN's inputs) item by item."""
    return tuple(_avals(x) if isinstance(x, (list, tuple)) else
                 (tuple(np.shape(x)), str(getattr(x, "dtype", type(x).__name__))) for x in arrays)


def _leaves(arrays) -> list:
    """The arrays of a call, tensor arrays' items included."""
    return [v for x in arrays for v in (x if isinstance(x, (list, tuple)) else (x,))]


def _concrete(x):
    """An input's value where it can be read now (a NumPy array, a JAX array that is not a
    tracer; a tensor array item by item), else None: a tracer's values are known only when it
    runs."""
    if isinstance(x, (list, tuple)):
        return [_concrete(v) for v in x]
    if x is None or isinstance(x, jax.core.Tracer) or not isinstance(x, (np.ndarray, np.generic, jax.Array)):
        return None
    return np.asarray(x)


def _signature(spec: OpSpec, math: bool) -> inspect.Signature:
    P = inspect.Parameter
    # The inputs in the page's order; an optional input defaults to None where no required input
    # follows it, and one that comes before a required input (CONVOLUTION_INTEGER's
    # InputZeroPointTensor, before its FilterTensor) is passed like the others, None for a null desc.
    last = max((i for i, t in enumerate(spec.inputs) if not t.optional), default=-1)
    params = [P(t.arg, P.POSITIONAL_OR_KEYWORD, **({"default": None} if t.optional and i > last else {}))
              for i, t in enumerate(spec.inputs)]
    for p in spec.params:
        params.append(P(p.arg, P.KEYWORD_ONLY, **({} if p.default is REQUIRED else {"default": p.default})))
    for t in spec.outputs:
        if t.default_data_type is REQUIRED:
            params.append(P(t.data_type_arg, P.KEYWORD_ONLY))
        elif t.default_data_type is INFERRED:
            params.append(P(t.data_type_arg, P.KEYWORD_ONLY, default=None))
        elif t.default_data_type is not None:
            params.append(P(t.data_type_arg, P.KEYWORD_ONLY, default=t.default_data_type.name))
    params += [P(t.sizes_kwarg, P.KEYWORD_ONLY, **({"default": None} if t.sizes_default else {}))
               for t in spec.outputs if t.sizes_arg]
    if math:
        params.append(P(HALF_ARG, P.KEYWORD_ONLY, default=False))
    params.append(P("feature_level", P.KEYWORD_ONLY, default=None))
    return inspect.Signature(params)


def output_names(call: CheckedCall) -> list[str]:
    """The outputs a call returns, in order: each output, a tensor array's elements (SPLIT's
    ``OutputTensors[0]``, ...) in index order."""
    names = []
    for t in call.spec.outputs:
        if t.array:
            n = sum(1 for k in call.tensors if k.split("[", 1)[0] == t.dml_name)
            names += [f"{t.dml_name}[{i}]" for i in range(n)]
        else:
            names.append(t.dml_name)
    return names


def _sizes_of(call: CheckedCall, t) -> tuple:
    """A caller-sized output's validated Sizes (a tensor array's: one tuple per element)."""
    if not t.array:
        return call.tensors[t.dml_name].shape
    return tuple(call.tensors[n].shape for n in output_names(call) if n.split("[", 1)[0] == t.dml_name)


def operator(spec: OpSpec) -> Callable[[Callable], Callable]:
    """Bind ``spec`` to the formula below it and register the public operator.

    The formula takes the inputs as arrays and the attributes already validated and normalized
    (FLOATs as float32-valued Python floats, ScaleBias or None, chosen output DataTypes), plus
    ``allow_half_precision_computation`` if the operator does float math.
    """

    def bind(formula: Callable) -> Callable:
        fparams = list(inspect.signature(formula).parameters)
        math = HALF_ARG in fparams
        if math != spec.math:
            raise TypeError(f"{spec.enum_name}: formula must take {HALF_ARG} iff spec.math")
        sig = _signature(spec, math)
        expected = [p for p in sig.parameters if p != "feature_level"]
        if fparams != expected:
            raise TypeError(f"{spec.enum_name}: formula parameters {fparams} != {expected}")
        attr_args = [p.arg for p in spec.params]
        type_args = [t for t in spec.outputs if t.default_data_type is not None]
        sized_args = [t for t in spec.outputs if t.sizes_arg]

        out_flushed: dict[tuple, bool] = {}  # (statics key, flushed inputs, avals): output flushed

        def run(statics, flushed, nested, *arrays):
            TRACE_COUNTS[spec.enum_name] += 1
            for x, f in zip(arrays, flushed):  # the caller's flushed inputs, as this trace sees them
                if f:
                    mark_flushed(x)
            # a top-level call is a program of this operator alone, whose arrays come and go in the
            # caller's memory as their shapes are written: packed (kernel_seam.packed_memory)
            with jax.named_scope(spec.enum_name), (contextlib.nullcontext() if nested else packed_memory()):
                out = formula(*arrays, **dict(statics))
            out_flushed[(static_key(statics), flushed, _avals(arrays))] = is_flushed(out)
            return out

        # One jitted callable per static configuration (and per top-level / nested use: only a
        # top-level jit takes compiler options), called with the arrays alone, so that calls
        # after the first take JAX's fast dispatch path.
        executables: dict[tuple, Callable] = {}

        def executable(statics: tuple, flushed: tuple, nested: bool) -> Callable:
            # -0.0 and 0.0 are different attributes; a kernel switched off or forced is another program
            key = (static_key(statics), flushed, nested, switches())
            fn = executables.get(key)
            if fn is None:
                options = None if nested else _STRICT_PRECISION
                fn = executables[key] = jax.jit(functools.partial(run, statics, flushed, nested),
                                                compiler_options=options)
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

        input_names = [t.dml_name for t in spec.inputs]
        input_args = [t.arg for t in spec.inputs]
        param_names_args = [(p.dml_name, p.arg) for p in spec.params]

        def refuse(level_name, subject, arg, found, allowed="", tip=""):
            return ValidationError(spec.python_name, spec.enum_name, level_name,
                                   [Violation(subject, arg, found, allowed, tip)])

        # Direct calls seen before: (the arrays' types, shapes, dtypes and flushed marks, the
        # keyword arguments by _keyword_key, the level, kernels, 64-bit mode and platform) -> the
        # executable and whether its output is flushed. A hit skips binding and validation, whose
        # outcome those determine; anything else (tracers, lists, NumPy scalars, inputs passed by
        # keyword, value checks, a recorder) takes the full path below.
        direct: dict[tuple, tuple[Callable, bool]] = {}
        n_inputs = len(input_args)
        input_kw = frozenset(input_args)
        cacheable = not spec.value_checks

        def direct_key(args, kwargs):
            if not cacheable or _RECORDERS or len(args) > n_inputs or not input_kw.isdisjoint(kwargs):
                return None
            sig = []
            for x in args:
                t = type(x)
                if t is not _ARRAY_IMPL and t is not np.ndarray:
                    return None
                sig.append((t, x.shape, x.dtype, is_flushed(x)))
            try:
                kw = _keyword_key(kwargs) if kwargs else ()
                level = resolve_feature_level(kwargs.get("feature_level"))
            except Exception:  # noqa: BLE001  (unhashable or bad values: the full path reports them)
                return None
            if not _trace_state_clean():
                return None
            return (tuple(sig), kw, level, switches(), x64_enabled(), default_platform())

        def public(*args, **kwargs):
            key = direct_key(args, kwargs)
            if key is not None:
                hit = direct.get(key)
                if hit is not None:
                    fn, flushed_out = hit
                    out = fn(*args, *(None,) * (n_inputs - len(args)))
                    if flushed_out:
                        record_flushed(out)  # (a direct call is never inside a gradient rule)
                    return out
            out, entry = checked(args, kwargs)
            if key is not None and entry is not None:
                if len(direct) >= _DIRECT_MAX:
                    direct.clear()
                direct[key] = entry
            return out

        public = functools.wraps(formula)(public)

        def checked(args, kwargs):
            """The call bound, validated and run: its output, and (executable, output flushed)
            for the direct-call cache where the call ran outside any trace and recorder."""
            a = bind_arguments(args, kwargs)
            try:
                level = resolve_feature_level(a["feature_level"])
            except ValueError as e:
                if a["feature_level"] is not None:
                    raise refuse(None, "feature_level", "feature_level", str(e)) from None
                raise refuse(None, "The feature level", "", f"comes from the {e}",
                             tip=f"set {ENV_VAR} to a valid level, unset it, or pass feature_level=") from None
            arrays = [a[arg] for arg in input_args]
            inputs = dict(zip(input_names, arrays))
            abstract = [t for t, x in zip(spec.inputs, arrays)
                        if any(isinstance(v, jax.ShapeDtypeStruct) for v in _leaves([x]))]
            if abstract:  # a shape without values: jax.eval_shape turns it into a tracer
                raise ValidationError(spec.python_name, spec.enum_name, level.dml_name, [Violation(
                    t.dml_name, t.arg, "is a jax.ShapeDtypeStruct, which has a shape but no values",
                    tip=f"pass it through jax.eval_shape({spec.python_name}, ...) to check a call "
                        "without computing, or pass an array") for t in abstract])
            try:
                call: CheckedCall = check_call(
                    spec, level, inputs,
                    {name: a[arg] for name, arg in param_names_args},
                    {t.dml_name: a[t.data_type_arg] for t in type_args},
                    {t.dml_name: a[t.sizes_kwarg] for t in sized_args},
                    python=True,
                )
            except ValidationError as e:
                raise note_call_site(e)
            if spec.value_checks:
                values = {name: _concrete(x) for name, x in inputs.items()}
                problems = [v for check in spec.value_checks for v in check(values, call.attrs, level)]
                if problems:
                    raise ValidationError(spec.python_name, spec.enum_name, level.dml_name, problems)
            statics = tuple((arg, call.attrs[p.dml_name]) for arg, p in zip(attr_args, spec.params))
            statics += tuple((t.data_type_arg, call.tensors[t.dml_name].data_type) for t in type_args)
            statics += tuple((t.sizes_kwarg, _sizes_of(call, t)) for t in sized_args)
            if math:
                half = a[HALF_ARG]
                if not isinstance(half, bool):
                    raise refuse(level.dml_name, HALF_ARG, HALF_ARG, f"is {quote(half)}", "expected True or False")
                statics += ((HALF_ARG, half),)
            nested = not _trace_state_clean() or any(isinstance(x, jax.core.Tracer) for x in _leaves(arrays))
            flushed = tuple(False if isinstance(x, (list, tuple)) else is_flushed(x) for x in arrays)
            if _RECORDERS and not _DEPTH[0]:
                _DEPTH[0] += 1
                try:
                    out = executable(statics, flushed, nested)(*arrays)
                finally:
                    _DEPTH[0] -= 1
                concrete = not nested
                for r in _RECORDERS:
                    r.append(OperatorCall(spec, call, level, statics, tuple(arrays) if concrete else None,
                                          out if concrete else None))
            else:
                fn = executable(statics, flushed, nested)
                out = fn(*arrays)
            flushed_out = bool(out_flushed.get((static_key(statics), flushed, _avals(arrays))))
            if flushed_out:
                mark_flushed(out)  # its formula stored it through store(): the next operator skips a flush
            for o, name in zip(out if isinstance(out, tuple) else (out,), output_names(call)):
                info = call.tensors[name]
                if o.shape != info.shape or o.dtype != info.data_type.dtype:
                    raise AssertionError(f"dmljax bug: {spec.enum_name} made {o.shape} {o.dtype}, "
                                         f"validated {info.shape} {info.data_type.name}")
            recorded = _RECORDERS and not _DEPTH[0]
            return out, (None if nested or recorded else (fn, flushed_out))

        public.__signature__ = sig
        public.__doc__ = docstring(spec, formula.__doc__ or "")
        public.spec = spec
        public.formula = formula
        register(public)
        return public

    return bind
