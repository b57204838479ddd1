"""Fingerprints of every operator's lowered modules: a check that a refactor (files moved, modules
split or renamed) leaves what dmljax lowers to unchanged.

For every registered operator (``dmljax.registry()``) the script lowers a set of calls with
abstract inputs (``jax.ShapeDtypeStruct``: nothing is computed) and records, per call and per
platform, the sha256 of the normalized StableHLO text of

- the forward call, and
- the gradient: ``jax.grad`` of the sum of the call's floating outputs (each summed in float32)
  with respect to its floating inputs. A call without floating inputs or outputs is recorded as
  skipped, with the reason; one that JAX cannot differentiate as "not differentiable".

The calls are

- the test suite's generated positive cases (``tests/catalog.py``): by default all of them
  (``catalog.positive_cases(full=True)``: every support table x data type x {fewest, most, 4}
  dimensions x output type x attribute set of each operator), or with ``--sample`` the suite's
  sample of them (``catalog.CAP`` per operator, covering every table, data type, dimension count
  and attribute set); each at the case's feature level, in 64-bit mode where its types need it;
- the half-precision calls of ``tests/test_catalog.py`` (``allow_half_precision_computation=True``
  with FLOAT16, for every operator that does float math);
- a hand-written list (``kernel_calls``) of calls whose shapes and types take a Pallas (Triton)
  kernel on CUDA, chosen by ``jax.lax.platform_dependent`` at lowering time (these show the
  kernel only in a module lowered for "cuda"), and a few CUDA-only XLA branches; they are named
  through dmljax's public API only.

Each call is lowered for every platform of ``--platforms`` separately (``jit(...).trace(...)
.lower(lowering_platforms=(platform,))``): a "cuda" module holds the CUDA branches and the
kernels' custom calls, a "cpu" module the CPU ones. Lowering for CUDA needs no GPU: the dump runs
with ``JAX_PLATFORMS=cpu``, and Pallas then lowers its kernels for its default target (compute
capability 9.0) on any host, so that dumps made on different hosts compare.

Normalization: each module is printed without debug information (no ``loc(...)``: no file names,
line numbers or name stacks), large constants in full. A Triton kernel's custom call carries the
kernel's own module as MLIR bytecode in its backend config (``ir = "ML\\EFR..."``), with locations
of its own (JAX's default full-traceback locations: the paths and lines of the files that built the
kernel); each such payload is parsed and replaced by its text printed without debug information.
JAX prints a nested jitted function once per cached trace of it, so that what was lowered before
(its caches) can print one function twice (@isinf beside an identical @isinf_11) and shift the
numbers of the others: identical private functions are merged and all are renumbered per base name
(``canonical_functions``), and every task (up to GROUP calls of one operator) starts from cleared
caches. Everything else (operations, types, shapes, constants, attributes, the functions and their
call graph, the kernels' grid, warps and stages) is hashed as printed. An error's message is
recorded with file paths and line numbers replaced.

Usage (from the repository root)::

    python tests/lowered_hlo.py dump OUT.json [--platforms cpu,cuda] [--jobs 2] [--sample]
                                              [--only REGEX] [--texts DIR]
    python tests/lowered_hlo.py compare A.json B.json [--show 30]

``dump`` writes the fingerprints of every call to OUT.json, keyed by the operator's enum name and
a readable case id (its source, data types, shapes and attributes), and prints a summary: modules
fingerprinted per platform, gradients skipped and why, calls that could not be lowered, and any
hand-written kernel case whose CUDA module holds no kernel (or one where none is expected).
``--texts DIR`` also writes each normalized module, to diff two dumps' texts where they differ.
``compare`` prints how many (call, platform, forward/gradient) entries are identical, differing,
missing from B and new in B, lists the non-identical ones, and exits 1 if any entry differs or is
missing. Take a dump before a change and one after it (same JAX and jaxlib, same options) and
compare the two.

On a 2-core machine a full dump (about 9,700 calls) takes 6 to 8 minutes with two processes,
``--sample`` (about 1,700) under 2.
Importing this module runs nothing, and pytest does not collect it as a test.
"""

from __future__ import annotations

import argparse
import dataclasses
import hashlib
import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
FORMAT = 1
PASSES = ("forward", "gradient")
GROUP = 25  # calls per task (see tasks_of)
TRITON_TARGET = "__gpu$xla.gpu.triton"
BYTECODE_MAGIC = b"ML\xefR"


# ---------------------------------------------------------------------------------- set-up
def _setup() -> None:
    """The process's settings before JAX is imported: the repository on sys.path (for
    ``tests.catalog`` and this checkout's dmljax), CPU only, no feature level from the
    environment, and the suite's strict dtype promotion."""
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    os.environ["JAX_PLATFORMS"] = "cpu"
    os.environ.pop("DMLJAX_FEATURE_LEVEL", None)
    import jax

    jax.config.update("jax_numpy_dtype_promotion", "strict")


# ---------------------------------------------------------------------------------- cases
@dataclasses.dataclass(frozen=True)
class Call:
    """One lowered call: ``dmljax.<function>(*args, **kwargs)`` on abstract ``args`` (a pytree of
    jax.ShapeDtypeStruct and None), in 64-bit mode if ``x64``. ``kernel``: for a hand-written
    case, whether its CUDA forward module is meant to hold a Triton kernel (None: no claim)."""

    key: str
    source: str  # "catalog", "half" or "kernel"
    function: str
    args: tuple
    kwargs: dict
    x64: bool = False
    kernel: bool | None = None


def _abstract(x):
    """An input as a shape without values (tensor arrays item by item; None stays None)."""
    import jax

    if x is None:
        return None
    if isinstance(x, (list, tuple)):
        return [_abstract(v) for v in x]
    if isinstance(x, jax.ShapeDtypeStruct):
        return x
    return jax.ShapeDtypeStruct(tuple(x.shape), x.dtype)


def _sig(args) -> str:
    """Inputs as text: float32[2,3,1,2], tensor arrays in brackets, None as '-'."""
    def one(a):
        if a is None:
            return "-"
        if isinstance(a, (list, tuple)):
            return "[" + ", ".join(one(v) for v in a) + "]"
        return f"{a.dtype.name}[{','.join(str(d) for d in a.shape)}]"
    return "(" + ", ".join(one(a) for a in args) + ")"


def _text(value) -> str:
    """A readable, process-independent repr of attributes (no object addresses)."""
    return re.sub(r" at 0x[0-9a-fA-F]+", "", repr(value))


def _kwargs_text(kwargs: dict) -> str:
    return "{" + ", ".join(f"{k}={_text(v)}" for k, v in kwargs.items()) + "}"


def catalog_calls(full: bool) -> list[Call]:
    """The suite's generated positive cases (tests/catalog.py), as the suite calls them: all of
    them (``full``), or the suite's sample (``catalog.positive_cases()``'s default run)."""
    import jax
    import numpy as np

    import dmljax
    from tests import catalog

    refs = catalog.references()
    calls = []
    for case in catalog.positive_cases(full=full):
        op = dmljax.get_operator(case.op_name)
        spec, ref = op.spec, refs[case.op_name]
        shape = ref.case_shape(catalog.shape_of(case.ndim))
        types = catalog.tensor_types(spec, case.level, case.data_type, case.out_type)
        attrs = ref.attr_sets(case.data_type, shape)[case.attrs]
        chosen = catalog.output_kwargs(spec, case)
        x64 = catalog.needs_x64(types)
        with jax.enable_x64(x64):
            args = catalog.inputs_for(spec, ref, types, shape, np.random.default_rng(0), attrs)
        args = tuple(_abstract(a) for a in args)
        kwargs = {**attrs.dml, **chosen, "feature_level": case.level}
        key = f"{case.op_name} catalog:{case.id} in={_sig(args)} {_kwargs_text({**attrs.dml, **chosen})}"
        calls.append(Call(key, "catalog", spec.python_name, args, kwargs, x64))
    return calls


def half_calls() -> list[Call]:
    """test_half_precision_computation's calls: every operator that does float math and takes
    FLOAT16, at its newest table, with allow_half_precision_computation=True."""
    import jax
    import numpy as np

    import dmljax
    from tests import catalog

    refs = catalog.references()
    f16 = dmljax.DataType.FLOAT16
    calls = []
    for name in dmljax.registry():
        spec = dmljax.get_operator(name).spec
        if name not in refs or not spec.math or f16 not in catalog.newest_types(spec):
            continue
        ref = refs[name]
        level = spec.support[0].level
        types = catalog.tensor_types(spec, level, f16)
        shape = ref.case_shape(catalog.vector_shape(spec.support[0].tensors[catalog.main_tensor(spec)].dims))
        for i, attrs in enumerate(catalog.newest_sets(spec, ref, f16, shape)):
            with jax.enable_x64(False):
                args = catalog.inputs_for(spec, ref, types, shape, np.random.default_rng(0), attrs)
            args = tuple(_abstract(a) for a in args)
            kwargs = {**attrs.dml, "allow_half_precision_computation": True, "feature_level": level}
            key = f"{name} half:{level.version}-FLOAT16-set{i} in={_sig(args)} {_kwargs_text(attrs.dml)}"
            calls.append(Call(key, "half", spec.python_name, args, kwargs))
    return calls


def kernel_calls() -> list[Call]:
    """Calls whose shapes and types take a Pallas kernel on CUDA (and a few CUDA-only XLA
    branches next to them), through the public API. The thresholds they meet: softmax rows of a
    power of two from 2,048 to 65,536 over the last axis, FLOAT32/FLOAT16, not half; cumulative
    rows of a power of two from 16 (at least 1,024 elements a program) along the last axis; TOP_K
    rows of 1,024 with K from 2 to 16 (K steps), rows of a power of two from 2,048 to 32,768 with
    K up to a quarter of the groups (threshold kernels; K above 32 ranked by a third kernel, above
    256 by XLA's sort), K = 1 on FLOAT16 rows (ARGMAX's kernel); ARGMAX/ARGMIN FLOAT16 rows of a
    power of two from 1,024 and columns (128 or a multiple after the axis, a multiple of 8 along
    it); REDUCE MAX/MIN FLOAT16 columns; MAX_POOLING FLOAT16 4-D windows of 5 to 64 positions;
    CONVOLUTION FLOAT32 4-D forward, 16/32/64 channels, windows up to 3 a side, strides up to 2;
    PADDING EDGE of 1-, 2- or 4-byte elements."""
    import jax
    import numpy as np

    import dmljax

    F32, F16, I32, I8 = np.float32, np.float16, np.int32, np.int8
    A = dmljax.AxisDirection
    R = dmljax.ReduceFunction
    P = dmljax.PaddingMode
    calls = []

    def add(name, inputs, kernel, /, **kwargs):
        args = tuple(None if s is None else jax.ShapeDtypeStruct(s[0], s[1]) for s in inputs)
        op = getattr(dmljax, name)
        key = f"{op.spec.enum_name} kernel:{name} in={_sig(args)} {_kwargs_text(kwargs)}"
        calls.append(Call(key, "kernel", name, args, kwargs, kernel=kernel))

    # softmax rows (row_kernels)
    for fn in ("activation_softmax", "activation_log_softmax"):
        for dt in (F32, F16):
            add(fn, [((8, 4096), dt)], True)
    add("activation_softmax", [((2, 65536), F32)], True)
    add("activation_softmax1", [((4, 2, 4096), F32)], True, axes=(2,))
    add("activation_log_softmax1", [((4, 2048), F16)], True, axes=(1,))
    add("activation_softmax", [((8, 4096), F32)], False, allow_half_precision_computation=True)

    # cumulative summation and product rows (scan_kernels)
    for fn, flag in (("cumulative_summation", "has_exclusive_sum"), ("cumulative_product", "has_exclusive_product")):
        add(fn, [((4, 4096), F32)], True, axis=1)
        add(fn, [((4, 4096), F16)], True, axis=1, axis_direction=A.DECREASING, **{flag: True})
        add(fn, [((2, 16384), F32)], True, axis=1, **{flag: True})
        add(fn, [((64, 16), F16)], True, axis=1, axis_direction=A.DECREASING)

    # TOP_K: K steps over rows of 1,024 (select_kernels), threshold kernels over longer rows,
    # K = 1 on FLOAT16 rows (ARGMAX's kernel), and the staged XLA top_k on CUDA
    add("top_k", [((4, 1024), F32)], True, axis=1, k=8)
    add("top_k", [((2, 2, 1024), F16)], True, axis=2, k=16)
    add("top_k1", [((4, 1024), F32)], True, axis=1, k=4, axis_direction=A.INCREASING)
    add("top_k1", [((4, 1024), F16)], True, axis=1, k=2, axis_direction=A.DECREASING)
    add("top_k", [((4, 4096), F32)], True, axis=1, k=8)
    add("top_k", [((4, 4096), F16)], True, axis=1, k=8)
    add("top_k1", [((4, 2048), F16)], True, axis=1, k=4, axis_direction=A.INCREASING)
    add("top_k", [((2, 8192), F32)], True, axis=1, k=64)
    add("top_k", [((2, 32768), F16)], True, axis=1, k=300)
    add("top_k", [((4, 2048), F16)], True, axis=1, k=1)
    add("top_k", [((4, 4096), I32)], False, axis=1, k=4)
    add("top_k", [((2, 2048), F32)], False, axis=1, k=512)

    # ARGMAX/ARGMIN FLOAT16 rows and columns (select_kernels), directly and through REDUCE
    add("argmax", [((4, 2048), F16)], True, axes=(1,))
    add("argmin", [((4, 1024), F16)], True, axes=(1,), axis_direction=A.DECREASING)
    add("argmax", [((64, 256), F16)], True, axes=(0,))
    add("argmin", [((2, 16, 128), F16)], True, axes=(1,), axis_direction=A.DECREASING)
    add("reduce", [((4, 2048), F16)], True, function=R.ARGMAX, axes=(1,), output_data_type="UINT32")
    add("reduce", [((64, 256), F16)], True, function=R.ARGMIN, axes=(0,), output_data_type="UINT32")

    # REDUCE MAX/MIN FLOAT16 columns (select_kernels' column keys)
    add("reduce", [((64, 256), F16)], True, function=R.MAX, axes=(0,))
    add("reduce", [((2, 16, 128), F16)], True, function=R.MIN, axes=(1,))

    # MAX_POOLING FLOAT16 (pool_kernels)
    add("max_pooling", [((2, 4, 16, 16), F16)], True, strides=(1, 1), window_size=(3, 3),
        start_padding=(0, 0), end_padding=(0, 0))
    add("max_pooling1", [((2, 4, 15, 17), F16)], True, strides=(2, 2), window_size=(3, 3),
        start_padding=(1, 1), end_padding=(1, 1))
    add("max_pooling2", [((1, 8, 16, 16), F16)], True, strides=(1, 2), window_size=(2, 3),
        start_padding=(0, 1), end_padding=(1, 0), dilations=(2, 1))

    # CONVOLUTION FLOAT32 4-D (conv_kernels); FLOAT16's CPU/CUDA backward branches
    add("convolution", [((2, 16, 8, 8), F32), ((32, 16, 3, 3), F32)], True,
        strides=(1, 1), start_padding=(1, 1), end_padding=(1, 1))
    add("convolution", [((1, 32, 9, 9), F32), ((16, 32, 3, 3), F32), ((1, 16, 1, 1), F32)], True,
        mode=dmljax.ConvolutionMode.CONVOLUTION, strides=(2, 2), start_padding=(1, 0), end_padding=(0, 1))
    add("convolution", [((1, 64, 8, 8), F32), ((64, 64, 2, 2), F32)], True,
        dilations=(2, 2), fused_activation=dmljax.FusedActivation("DML_OPERATOR_ACTIVATION_RELU"))
    add("convolution", [((2, 16, 8, 8), F16), ((32, 16, 3, 3), F16)], False,
        strides=(1, 1), start_padding=(1, 1), end_padding=(1, 1))

    # PADDING: EDGE takes pad_kernels; REFLECTION and SYMMETRIC (XLA's slices) beside it
    pads = dict(start_padding=(0, 0, 1, 2), end_padding=(0, 1, 2, 1))
    add("padding", [((2, 3, 8, 16), F32)], True, padding_mode=P.EDGE, **pads)
    add("padding1", [((2, 3, 8, 16), F16)], True, padding_mode=P.EDGE, **pads)
    add("padding1", [((2, 3, 8, 16), I8)], True, padding_mode=P.EDGE, **pads)
    for mode in (P.REFLECTION, P.SYMMETRIC):
        add("padding", [((2, 3, 8, 16), F32)], None, padding_mode=mode, **pads)
        add("padding1", [((2, 3, 8, 16), F16)], None, padding_mode=mode, **pads)

    # CUDA-only XLA branches: GEMM's FLOAT16 product, FLOAT16 element-wise math without widening
    add("gemm", [((64, 32), F16), ((32, 16), F16)], False)
    add("element_wise_sqrt", [((4, 1024), F16)], False)
    return calls


def all_calls(full: bool) -> list[Call]:
    """Every call the dump lowers, in a fixed order, with unique keys."""
    calls = catalog_calls(full) + half_calls() + kernel_calls()
    seen: dict[str, int] = {}
    out = []
    for c in calls:
        n = seen.get(c.key, 0)
        seen[c.key] = n + 1
        out.append(c if n == 0 else dataclasses.replace(c, key=f"{c.key} #{n + 1}"))
    return out


# ---------------------------------------------------------------------------------- lowering
def _error(e: BaseException) -> str:
    """An exception as one line, without file paths or line numbers."""
    msg = str(e).strip().splitlines()[0] if str(e).strip() else ""
    msg = re.sub(r"[\w./\\-]+\.py(:\d+)?", "<file>", msg)
    msg = re.sub(r" at 0x[0-9a-fA-F]+", "", msg)
    return f"{type(e).__name__}: {msg[:300]}"


def _kernel_ir_text(payload: bytes) -> str:
    """A Triton kernel's MLIR bytecode as text without debug information."""
    from jax._src.lib.mlir import ir
    from jax._src.pallas.triton.lowering import _new_ir_context  # registers Triton's dialect

    with _new_ir_context():
        return ir.Module.parse(payload).operation.get_asm(enable_debug_info=False)


def _walk(op, visit) -> None:
    op = getattr(op, "operation", op)
    visit(op)
    for region in op.regions:
        for block in region.blocks:
            for child in block.operations:
                _walk(child, visit)


def normalized_text(lowered) -> tuple[str, int]:
    """The lowered module as text without debug information, every embedded MLIR bytecode
    payload (a Triton kernel's ``ir``) replaced by its own text without debug information; and
    the number of Triton kernel calls in it."""
    from jax._src.lib.mlir import ir

    module = lowered.compiler_ir("stablehlo")
    kernels = 0

    def visit(op):
        nonlocal kernels
        if op.name != "stablehlo.custom_call":
            return
        target = ir.StringAttr(op.attributes["call_target_name"]).value
        kernels += target == TRITON_TARGET
        if "mhlo.backend_config" not in op.attributes:
            return
        config = op.attributes["mhlo.backend_config"]
        if not isinstance(config, ir.DictAttr):
            return
        with op.context:
            entries = {config[i].name: config[i].attr for i in range(len(config))}
            changed = False
            for name, value in entries.items():
                if isinstance(value, ir.StringAttr) and value.value_bytes.startswith(BYTECODE_MAGIC):
                    entries[name] = ir.StringAttr.get(_kernel_ir_text(value.value_bytes))
                    changed = True
            if changed:
                op.attributes["mhlo.backend_config"] = ir.DictAttr.get(entries)

    _walk(module.operation, visit)
    return canonical_functions(module.operation.get_asm(enable_debug_info=False)), kernels


_FUNC = re.compile(r"^  func\.func (public|private) @([\w$.-]+)\(")


def canonical_functions(text: str) -> str:
    """The printed module with its private functions merged where identical and renamed in order
    of definition. JAX prints a nested jitted function once per distinct cached trace of it: a
    trace dropped from its caches and traced again comes out as a second, identical function
    (@isinf beside @isinf_11), and the suffixes of the functions after it shift. Identical private
    functions (up to their own names) are merged into the first, repeatedly (merging two may make
    their callers identical), and then each is named after its base name (the name without a
    ``_<n>`` suffix) and its rank among the functions of that base: ``isinf``, ``isinf_0``, ...
    The computation is unchanged: every call site calls a function with the same body."""
    lines = text.split("\n")
    blocks: list[list[str]] = []  # top-level functions, each its lines from "  func.func" to "  }"
    head: list[str] = []
    tail: list[str] = []
    current: list[str] | None = None
    for line in lines:
        if current is not None:
            current.append(line)
            if line == "  }":
                blocks.append(current)
                current = None
        elif _FUNC.match(line):
            current = [line]
        elif blocks:
            tail.append(line)
        else:
            head.append(line)
    if current is not None or not blocks:
        return text  # not the layout this expects: hashed as printed

    def private(block):
        m = _FUNC.match(block[0])
        return m.group(2) if m.group(1) == "private" else None

    def rename(texts: list[str], names: dict[str, str]) -> list[str]:
        if not names:
            return texts
        pattern = re.compile("@(" + "|".join(re.escape(n) for n in sorted(names, key=len, reverse=True))
                             + r")(?![\w$.-])")
        return [pattern.sub(lambda m: "@" + names[m.group(1)], t) for t in texts]

    bodies = ["\n".join(b) for b in blocks]
    names = [private(b) for b in blocks]
    while True:
        first: dict[str, str] = {}
        merged: dict[str, str] = {}
        keep = []
        for body, name in zip(bodies, names):
            if name is not None:
                own = body.replace(f"@{name}(", "@(", 1)
                if own in first:
                    merged[name] = first[own]
                    continue
                first[own] = name
            keep.append((body, name))
        if not merged:
            break
        bodies = rename([b for b, _ in keep], merged)
        names = [n for _, n in keep]
    rank: dict[str, int] = {}
    final: dict[str, str] = {}
    for name in names:
        if name is not None:
            base = re.sub(r"_\d+$", "", name)
            k = rank.get(base, -1)
            rank[base] = k + 1
            final[name] = base if k < 0 else f"{base}_{k}"
    texts = rename(["\n".join(head)] + bodies + ["\n".join(tail)], final)
    return "\n".join(texts)


def _digest(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


def _is_float(dtype) -> bool:
    import numpy as np

    return np.issubdtype(dtype, np.floating)


def text_name(key: str, platform: str, what: str) -> str:
    """The file ``dump --texts DIR`` writes a module's normalized text to."""
    return f"{hashlib.sha256(key.encode()).hexdigest()[:16]}.{platform}.{what}.mlir"


def fingerprint(call: Call, platforms: tuple[str, ...], texts: Path | None = None) -> dict:
    """{platform: {"forward": sha256 | "error: ...", "gradient": sha256 | "skipped: ..." |
    "not differentiable: ..." | "error: ..."}} and, per platform, the Triton calls in each
    module ("kernels")."""
    import jax
    import jax.numpy as jnp

    import dmljax

    op = getattr(dmljax, call.function)
    kwargs = call.kwargs
    result: dict[str, Any] = {p: {} for p in platforms}
    kernels: dict[str, dict[str, int]] = {p: {} for p in platforms}

    def forward(*args):
        return op(*args, **kwargs)

    leaves, tree = jax.tree.flatten(call.args)
    floats = [i for i, a in enumerate(leaves) if _is_float(a.dtype)]

    def loss(wrt, rest):
        full = list(rest)
        for i, v in zip(floats, wrt):
            full[i] = v
        outs = [o for o in jax.tree.leaves(forward(*jax.tree.unflatten(tree, full))) if _is_float(o.dtype)]
        return sum(jnp.sum(o.astype(jnp.float32)) for o in outs)

    def gradient(*flat):
        return jax.grad(loss)([flat[i] for i in floats], list(flat))

    with jax.enable_x64(call.x64):
        traced = {}
        try:
            traced["forward"] = jax.jit(forward).trace(*call.args)
        except Exception as e:  # noqa: BLE001  (recorded: a call that cannot be traced)
            traced["forward"] = f"error: {_error(e)}"
        skip = None
        if isinstance(traced["forward"], str):
            skip = "skipped: the forward call does not trace"
        elif not floats:
            skip = "skipped: no floating input"
        elif not any(_is_float(o.dtype) for o in jax.tree.leaves(traced["forward"].out_info)):
            skip = "skipped: no floating output"
        if skip is None:
            try:
                traced["gradient"] = jax.jit(gradient).trace(*leaves)
            except Exception as e:  # noqa: BLE001
                traced["gradient"] = f"not differentiable: {_error(e)}"
        else:
            traced["gradient"] = skip
        for p in platforms:
            for what in PASSES:
                t = traced[what]
                if isinstance(t, str):
                    result[p][what] = t
                    continue
                try:
                    text, n = normalized_text(t.lower(lowering_platforms=(p,)))
                    result[p][what] = _digest(text)
                    kernels[p][what] = n
                    if texts is not None:
                        (texts / text_name(call.key, p, what)).write_text(f"// {call.key}\n{text}")
                except Exception as e:  # noqa: BLE001  (recorded: a call that cannot be lowered here)
                    result[p][what] = f"error: {_error(e)}"
    return {"fingerprints": result, "kernels": kernels}


# ---------------------------------------------------------------------------------- workers
_CALLS: list[Call] = []
_PLATFORMS: tuple[str, ...] = ()
_TEXTS: Path | None = None


def _init_worker(platforms: tuple[str, ...], full: bool, texts: Path | None) -> None:
    global _CALLS, _PLATFORMS, _TEXTS
    _setup()
    _CALLS, _PLATFORMS, _TEXTS = all_calls(full), platforms, texts


def tasks_of(calls: list[Call], indices: list[int]) -> list[list[int]]:
    """The calls in tasks, each lowered in one process, in this order, from empty caches: the
    calls of one source ("catalog", "half", "kernel") and operator, GROUP at a time. A task's
    calls depend only on the operator's list of calls, not on ``--only`` or on other operators."""
    by_operator: dict[tuple[str, str], list[int]] = {}
    for i in indices:
        by_operator.setdefault((calls[i].source, calls[i].key.split()[0]), []).append(i)
    return [group[k:k + GROUP] for group in by_operator.values() for k in range(0, len(group), GROUP)]


def _work(task: list[int]) -> list[tuple[int, dict]]:
    """One task's fingerprints. A printed module depends on JAX's caches (a nested jitted
    function whose cached trace was dropped is printed twice, as @isinf and @isinf_11), which
    hold what the process lowered before: each task starts from empty caches, so that its
    modules depend on its own calls only, not on the order in which a pool hands out tasks."""
    import gc

    import jax

    jax.clear_caches()
    gc.collect()
    return [(i, fingerprint(_CALLS[i], _PLATFORMS, _TEXTS)) for i in task]


def dump(out: Path, platforms: tuple[str, ...], jobs: int, only: str | None, full: bool,
         texts: Path | None) -> int:
    _setup()
    import jax
    import jaxlib

    if texts is not None:
        texts.mkdir(parents=True, exist_ok=True)
    import dmljax

    calls = all_calls(full)
    indices = [i for i, c in enumerate(calls) if only is None or re.search(only, c.key.split()[0])]
    print(f"dmljax from {Path(dmljax.__file__).parent}; jax {jax.__version__}, jaxlib {jaxlib.__version__}")
    sources = {s: sum(1 for i in indices if calls[i].source == s) for s in ("catalog", "half", "kernel")}
    print(f"{len(indices)} calls ({sources['catalog']} generated cases, {sources['half']} half-precision, "
          f"{sources['kernel']} hand-written kernel cases) of {len({calls[i].key.split()[0] for i in indices})} "
          f"operators; platforms {', '.join(platforms)}; {jobs} process(es)", flush=True)
    start = time.time()
    results: dict[int, dict] = {}
    try:
        from tqdm import tqdm
    except ImportError:  # pragma: no cover  (no progress bar)
        import contextlib

        class tqdm(contextlib.nullcontext):  # noqa: N801
            def __init__(self, **_):
                super().__init__(self)

            def update(self, n):
                pass
    tasks = tasks_of(calls, indices)
    with tqdm(total=len(indices), desc="lowering", unit="call") as bar:
        if jobs <= 1:
            global _CALLS, _PLATFORMS, _TEXTS
            _CALLS, _PLATFORMS, _TEXTS = calls, platforms, texts
            done = map(_work, tasks)
            pool = None
        else:
            import multiprocessing

            pool = multiprocessing.get_context("spawn").Pool(jobs, initializer=_init_worker,
                                                             initargs=(platforms, full, texts))
            done = pool.imap_unordered(_work, tasks)
        try:
            for task in done:
                results.update(task)
                bar.update(len(task))
        finally:
            if pool is not None:
                pool.close()
                pool.join()
    elapsed = time.time() - start

    cases = {calls[i].key: results[i]["fingerprints"] for i in indices}
    kernels = {calls[i].key: results[i]["kernels"] for i in indices
               if any(n for per in results[i]["kernels"].values() for n in per.values())}
    data = {
        "format": FORMAT,
        "jax": jax.__version__,
        "jaxlib": jaxlib.__version__,
        "platforms": list(platforms),
        "only": only,
        "cases_generated": "full" if full else "sample",
        "seconds": round(elapsed, 1),
        "cases": cases,
        "kernel_calls": kernels,  # Triton calls per module, where there are any (not compared)
    }
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_text(json.dumps(data, indent=1, sort_keys=True) + "\n")
    _summary(calls, indices, results, platforms, elapsed, out)
    return 0


def _is_hash(value: str) -> bool:
    return re.fullmatch(r"[0-9a-f]{64}", value) is not None


def _summary(calls, indices, results, platforms, elapsed, out) -> None:
    import collections

    print(f"wrote {out} in {elapsed:.0f} s")
    for p in platforms:
        fp = {w: sum(1 for i in indices if _is_hash(results[i]["fingerprints"][p][w])) for w in PASSES}
        with_kernels = sum(1 for i in indices for n in results[i]["kernels"][p].values() if n)
        print(f"  {p}: {fp['forward']} forward and {fp['gradient']} gradient modules fingerprinted "
              f"({with_kernels} of them with Triton kernels)")
        reasons = collections.Counter(results[i]["fingerprints"][p]["gradient"][:120] for i in indices)
        for r, n in reasons.most_common():
            if r.startswith(("skipped", "not differentiable")):
                print(f"    gradient {r}: {n}")
        for i in indices:
            for w in PASSES:
                v = results[i]["fingerprints"][p][w]
                if v.startswith("error"):
                    print(f"    could not lower {w}: {calls[i].key}\n      {v}")
    if "cuda" in platforms:
        for i in indices:
            c = calls[i]
            if c.kernel is None:
                continue
            n = results[i]["kernels"]["cuda"].get("forward", 0)
            if bool(n) != c.kernel:
                print(f"  note: {c.key}: {n} Triton call(s) in its CUDA forward module; "
                      f"the case expects {'some' if c.kernel else 'none'}")


# ---------------------------------------------------------------------------------- compare
def _entries(path: Path) -> tuple[dict, dict[tuple[str, str, str], str]]:
    data = json.loads(path.read_text())
    flat = {}
    for key, per_platform in data["cases"].items():
        for p, values in per_platform.items():
            for w, v in values.items():
                flat[(key, p, w)] = v
    return data, flat


def compare(a: Path, b: Path, show: int) -> int:
    da, ea = _entries(a)
    db, eb = _entries(b)
    for field in ("format", "jax", "jaxlib", "platforms", "only", "cases_generated"):
        if da.get(field) != db.get(field):
            print(f"warning: {field} differs: {da.get(field)!r} in {a}, {db.get(field)!r} in {b}")
    same = [k for k in ea if k in eb and ea[k] == eb[k]]
    differ = [k for k in ea if k in eb and ea[k] != eb[k]]
    missing = [k for k in ea if k not in eb]
    new = [k for k in eb if k not in ea]
    print(f"identical: {len(same)}")
    print(f"differing: {len(differ)}")
    print(f"missing:   {len(missing)} (in {a}, not in {b})")
    print(f"new:       {len(new)} (in {b}, not in {a})")
    for title, keys in (("differing", differ), ("missing", missing), ("new", new)):
        if keys:
            print(f"\n{title} ({len(keys)}{', first ' + str(show) if len(keys) > show else ''}):")
            for k in keys[:show]:
                line = f"  [{k[1]} {k[2]}] {k[0]}"
                if title == "differing":
                    line += f"\n      {ea[k][:100]}\n   -> {eb[k][:100]}\n      (dump --texts: {text_name(*k)})"
                print(line)
    return 1 if differ or missing else 0


# ---------------------------------------------------------------------------------- command line
def main(argv=None) -> int:
    parser = argparse.ArgumentParser(
        prog="python tests/lowered_hlo.py",
        description="Fingerprint every operator's lowered forward and gradient modules (dump), or "
                    "compare two dumps (compare: exit 1 on a differing or missing entry).")
    sub = parser.add_subparsers(dest="command", required=True)
    d = sub.add_parser("dump", help="lower every case and write the fingerprints to OUT")
    d.add_argument("out", type=Path)
    d.add_argument("--platforms", default="cpu,cuda", help="comma-separated lowering platforms (cpu,cuda)")
    d.add_argument("--jobs", type=int, default=min(2, os.cpu_count() or 1), help="worker processes (2)")
    d.add_argument("--only", default=None,
                   help="lower only the operators whose enum name matches this regular expression (re.search)")
    d.add_argument("--sample", action="store_true",
                   help="the suite's sample of the generated cases (catalog.CAP per operator), not all of them")
    d.add_argument("--texts", type=Path, default=None,
                   help="also write each normalized module to this folder (file names: compare lists them)")
    c = sub.add_parser("compare", help="compare two dumps")
    c.add_argument("a", type=Path)
    c.add_argument("b", type=Path)
    c.add_argument("--show", type=int, default=30, help="keys listed per kind of difference (30)")
    args = parser.parse_args(argv)
    if args.command == "dump":
        platforms = tuple(p.strip() for p in args.platforms.split(",") if p.strip())
        return dump(args.out, platforms, args.jobs, args.only, not args.sample, args.texts)
    return compare(args.a, args.b, args.show)


if __name__ == "__main__":
    sys.exit(main())
