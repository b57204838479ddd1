"""What a function lowers to: the DirectML operators it calls (each runs as a jitted call whose
every equation sits under ``jax.named_scope(<DML enum name>)``), and nothing else but data
movement (XLA's reshape, slice, transpose, broadcast, pad, the reading of a strided desc)."""

from __future__ import annotations

import jax
import numpy as np

DATA_MOVEMENT = frozenset({"reshape", "broadcast_in_dim", "transpose", "slice", "squeeze", "expand_dims", "pad",
                           "copy", "copy_p"})
"""Primitives that move or repeat elements without computing on them."""


def _operator_of(eqn) -> str | None:
    """The DirectML operator a jitted call is, or None if it is not one."""
    if eqn.primitive.name not in ("jit", "pjit"):
        return None
    inner = eqn.params["jaxpr"].jaxpr
    scopes = {str(e.source_info.name_stack).split("/")[0] for e in inner.eqns}
    if len(scopes) == 1 and next(iter(scopes)).startswith("DML_OPERATOR_"):
        return scopes.pop()
    return None


def dml_operators(fn, *args) -> list[str]:
    """The DirectML operators ``fn(*args)`` calls, in order. Raises AssertionError naming any
    equation that is neither a DirectML operator nor data movement (a bool mask read as UINT8,
    its bytes, is the one conversion allowed)."""
    jaxpr = jax.make_jaxpr(fn)(*args)
    found: list[str] = []

    def walk(j):
        for e in j.eqns:
            op = _operator_of(e)
            if op is not None:
                found.append(op)
            elif e.primitive.name in ("jit", "pjit"):
                walk(e.params["jaxpr"].jaxpr)
            elif e.primitive.name == "convert_element_type" and e.invars[0].aval.dtype == np.bool_ \
                    and e.params["new_dtype"] == np.uint8:
                continue
            elif e.primitive.name not in DATA_MOVEMENT:
                raise AssertionError(f"{e.primitive.name} runs outside any DirectML operator: {e}")

    walk(jaxpr.jaxpr)
    return found
