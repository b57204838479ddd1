"""Several operators chained in one ``jax.jit``: how much does DirectML's rounding after every
operator cost once XLA can fuse them? The chain is data: operators by name, their attributes and
what feeds each of their input tensors; the dmljax program, the jax.numpy and PyTorch ones (each
operator's comparator from cases.py) and the types it can run in all follow from it.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Mapping

import jax

from dmljax._src.dtypes import DataType
from dmljax.bench.cases import Case, Recipe, recipe_for, resolve
from dmljax.bench.inputs import supported_types

__all__ = ["Step", "Chain", "CHAIN", "CHAIN8", "CHAINS", "chain_cases", "unsupported", "program"]


@dataclasses.dataclass(frozen=True)
class Step:
    """One operator of a chain: its name, the values fed to its input tensors in order (a chain
    input's name, or ``"y"``: the previous step's result), and its attributes."""

    op: str
    args: tuple[str, ...] = ("y",)
    attrs: Mapping = dataclasses.field(default_factory=dict)


@dataclasses.dataclass(frozen=True)
class Chain:
    """name: how reports call it. inputs: each chain input's name and how it is drawn
    (inputs.KINDS; a "condition" is UINT8, the others are of the data type measured). ``y``
    starts as ``start``. compare_to: the operator whose single-operator time the chain's is held
    against. limit_vs_one / limit_vs_jnp: the targets (targets.py) on time(dmljax chain) over
    time(compare_to alone) and over time(the jnp chain), where the chain has one."""

    name: str
    inputs: Mapping[str, str]
    start: str
    steps: tuple[Step, ...]
    compare_to: str
    limit_vs_one: float | None = None
    limit_vs_jnp: float | None = None

    def describe(self) -> str:
        """``SCALED_ELU -> THRESHOLD(min=-0.5) -> ...``."""
        parts = []
        for s in self.steps:
            args = [a for a in s.args if a != "y"] + [f"{k}={v}" for k, v in s.attrs.items()]
            parts.append(s.op + (f"({', '.join(args)})" if args else ""))
        return " -> ".join(parts)


CHAIN = Chain(
    name="five operators",
    inputs={"x": "numerator", "b": "divisor", "c": "condition"},
    start="x",
    steps=(
        Step("ACTIVATION_SCALED_ELU"),
        Step("ELEMENT_WISE_THRESHOLD", attrs={"min": -0.5}),
        Step("ELEMENT_WISE_CONSTANT_POW", attrs={"exponent": 3.0}),
        Step("ELEMENT_WISE_MODULUS_FLOOR", ("y", "b")),
        Step("ELEMENT_WISE_IF", ("c", "y", "x")),
    ),
    compare_to="ELEMENT_WISE_IF",
    limit_vs_one=1.15,
)
"""SCALED_ELU -> THRESHOLD -> CONSTANT_POW -> MODULUS_FLOOR -> IF: activation, clamp, math,
a two-input operator and a selection."""

CHAIN8 = Chain(
    name="eight element-wise operators",
    inputs={"x": "normal", "b": "divisor", "c": "condition"},
    start="x",
    steps=(
        Step("ELEMENT_WISE_SUBTRACT", ("y", "b")),
        Step("ELEMENT_WISE_MULTIPLY", ("y", "b")),
        Step("ELEMENT_WISE_ABS"),
        Step("ELEMENT_WISE_SQRT"),
        Step("ELEMENT_WISE_DIVIDE", ("y", "b")),
        Step("ELEMENT_WISE_TANH"),
        Step("ELEMENT_WISE_MAX", ("y", "x")),
        Step("ELEMENT_WISE_IF", ("c", "y", "x")),
    ),
    compare_to="ELEMENT_WISE_IF",
    limit_vs_jnp=1.05,
)
"""SUBTRACT -> MULTIPLY -> ABS -> SQRT -> DIVIDE -> TANH -> MAX -> IF (a chain of eight):
arithmetic with a second input, a sign, a root, a quotient, a transcendental function, IEEE maxNum
and a selection, each operator rounding to the tensor's type as DirectML does."""

CHAINS = (CHAIN, CHAIN8)
"""Every chain the benchmark runs."""


def chain_cases(chain: Chain) -> tuple[list[Case] | None, str]:
    """The chain's operators as cases, or None and why (an operator that is not registered)."""
    out = []
    for step in chain.steps:
        try:
            op = resolve(step.op)
        except ValueError as e:
            return None, str(e)
        recipe, _ = recipe_for(op.spec)
        out.append(Case(op, recipe or Recipe()))
    return out, ""


def unsupported(chain: Chain, cases: list[Case], dtype: str) -> str | None:
    """Why the chain can't run in ``dtype`` (a tensor that doesn't take the type fed to it), or
    None. Each step's result type is the operator's (``jax.eval_shape``)."""
    types = {name: ("UINT8" if kind == "condition" else dtype) for name, kind in chain.inputs.items()}
    types["y"] = types[chain.start]
    for step, case in zip(chain.steps, cases):
        tensors = [t for t in case.spec.inputs if not t.optional]
        for arg, t in zip(step.args, tensors):
            if types[arg] not in supported_types(case.op, t.dml_name):
                return (f"{case.short_name}'s {t.dml_name} takes "
                        f"{', '.join(supported_types(case.op, t.dml_name))}, not {types[arg]}")
        structs = [jax.ShapeDtypeStruct((4,), DataType.parse(types[a]).dtype) for a in step.args]
        try:
            out = jax.eval_shape(case.dmljax(dtype, step.attrs), *structs)
        except Exception as e:  # noqa: BLE001  (a ValidationError, reported as the reason)
            lines = str(e).splitlines() or [type(e).__name__]
            return f"{case.short_name} refuses it: {lines[min(1, len(lines) - 1)].strip()}"
        types["y"] = out.dtype.name.upper() if hasattr(out, "dtype") else dtype
    return None


def program(chain: Chain, cases: list[Case], dtype: str, flavour, torch=None) -> Callable | None:
    """The chain as one function of its inputs (in ``chain.inputs`` order): ``flavour`` "dmljax",
    "jnp" or "torch" (then ``torch`` is the module), or a sequence of those, one per step (a
    chain mixing them). None when an operator lacks that comparator."""
    flavours = [flavour] * len(chain.steps) if isinstance(flavour, str) else list(flavour)
    fns = []
    for step, case, flavour in zip(chain.steps, cases, flavours):
        if flavour == "dmljax":
            fn = case.dmljax(dtype, step.attrs)
        elif flavour == "jnp":
            fn = case.jnp(dtype, step.attrs)
        else:
            fn = case.torch(torch, dtype, step.attrs)
        if fn is None:
            return None
        fns.append((fn, step.args))
    names = list(chain.inputs)

    def run(*xs):
        env = dict(zip(names, xs))
        env["y"] = env[chain.start]
        for fn, args in fns:
            env["y"] = fn(*(env[a] for a in args))
        return env["y"]

    return run
