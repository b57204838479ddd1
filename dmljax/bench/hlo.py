r"""Kernels in a compiled program, counted from its optimised HLO text.

>>> hlo_kernel_count("ENTRY main {\n  %x = f32[4]{0} parameter(0)\n  ROOT %f = f32[4]{0} fusion(%x), kind=kLoop\n}")
(1, ['fusion:f'])
"""

from __future__ import annotations

import re

__all__ = ["hlo_kernel_count", "compiled_kernels"]

_INSTR = re.compile(r"^\s*(?:ROOT\s+)?%?[\w.\-]+\s*=\s*(?:\([^=]*?\)|\S+)\s+([a-z][\w\-]*)\(")
_FREE = {"parameter", "constant", "tuple", "get-tuple-element", "bitcast"}


def hlo_kernel_count(hlo_text: str) -> tuple[int, list[str]]:
    """Instructions of the ENTRY computation of an optimised HLO module that do work (fusions,
    copies, custom calls...; parameters, constants, tuples and bitcasts excluded): on a GPU, one
    per kernel launch."""
    lines = hlo_text.splitlines()
    try:
        start = next(i for i, ln in enumerate(lines) if ln.startswith("ENTRY"))
    except StopIteration:
        return 0, []
    ops = []
    for ln in lines[start + 1:]:
        if ln.startswith("}"):
            break
        m = _INSTR.match(ln)
        if m and m.group(1) not in _FREE:
            name = ln.split("=")[0].replace("ROOT", "").strip().lstrip("%")
            ops.append(f"{m.group(1)}:{name}")
    return len(ops), ops


def compiled_kernels(jitted, *args) -> tuple[int, list[str]]:
    """``hlo_kernel_count`` of ``jitted`` (a ``jax.jit`` function) compiled for ``args``."""
    return hlo_kernel_count(jitted.lower(*args).compile().as_text())
