"""The one seam between Pallas kernels and the operators' XLA formulas (dmljax/_src/kernel_seam.py):
every kernel module declares where it applies, operators ask ``choose`` and nothing else, and
``dmljax.use_kernels`` switches kernels off and on for the calls traced inside it."""

import ast
import functools
import importlib
import pkgutil
from pathlib import Path

import numpy as np
import pytest

import dmljax
from dmljax._src import kernels as kernels_package
from dmljax._src.kernel_seam import Kernel, choose, disabled_kernels, force_kernels, forced_kernels, kernel_names
from dmljax._src.kernels.convolution_gemm import CONVOLUTION_GEMM_COLUMNS, CONVOLUTION_GEMM_ROWS
from dmljax._src.kernels.softmax import SOFTMAX_ROWS
from dmljax._src.kernels.top_k import ARG_EXTREME_ROWS, TOP_K_ROWS
from dmljax._src.kernels.top_k_threshold import TOP_K_THRESHOLD
from dmljax._src.onnx import layout as onnx_layout
from dmljax._src.op import TRACE_COUNTS

ROOT = Path(__file__).resolve().parents[1]
SRC = ROOT / "dmljax" / "_src"
ROW = ((8, 4096), (1,), np.float32, False)  # a softmax whose rows take the kernel on a GPU


def kernel_modules():
    """The kernel modules, and the modules of program forms outside kernels/ that declare their
    switch the same way (an imported ONNX model's channels-last call)."""
    return [importlib.import_module(m.name) for m in
            pkgutil.iter_modules(kernels_package.__path__, prefix=kernels_package.__name__ + ".")] + [onnx_layout]


def declared_kernels(module) -> list[Kernel]:
    """The paths a kernel module declares (its own rules, not those it imports)."""
    return [v for v in vars(module).values() if isinstance(v, Kernel) and v.applies.__module__ == module.__name__]


def test_every_kernel_module_says_where_it_applies():
    names = set()
    for module in kernel_modules():
        assert declared_kernels(module), f"{module.__name__} declares no Kernel (its rule of where it applies)"
        assert not [n for n in vars(module) if n.endswith("ENABLED")], f"{module.__name__} keeps a switch of its own"
        names |= {k.name for k in declared_kernels(module)}
    assert names == set(kernel_names())


def test_every_rule_points_at_the_benchmark_that_measured_it():
    for module in kernel_modules():
        for k in declared_kernels(module):
            assert (ROOT / k.measured).exists(), f"{module.__name__}: {k.measured} does not exist"


def test_operators_reach_kernels_only_through_the_seam():
    for path in sorted((SRC / "ops").rglob("*.py")):
        tree = ast.parse(path.read_text())
        imported = [n for n in ast.walk(tree) if isinstance(n, ast.ImportFrom) and n.module]
        takes_kernels = any(n.module.startswith("dmljax._src.kernels") for n in imported)
        asks_seam = any(n.module == "dmljax._src.kernel_seam" and any(a.name == "choose" for a in n.names)
                        for n in imported)
        assert asks_seam or not takes_kernels, f"{path.relative_to(ROOT)} imports a kernel without the seam"
    for path in sorted((SRC / "kernels").rglob("*.py")):
        for n in ast.walk(ast.parse(path.read_text())):
            if isinstance(n, ast.ImportFrom) and n.module:
                assert not n.module.startswith("dmljax._src.ops"), f"{path.relative_to(ROOT)} imports {n.module}"


def test_choose_takes_the_first_kernel_that_applies():
    assert choose(SOFTMAX_ROWS, facts=ROW).kernel is SOFTMAX_ROWS
    assert choose(SOFTMAX_ROWS, facts=((8, 1024), (1,), np.float32, False)).kernel is None  # short rows: XLA's
    facts = ((8, 4096), 1, 8, np.float32)
    assert choose(TOP_K_THRESHOLD, TOP_K_ROWS, facts=facts).kernel is TOP_K_THRESHOLD
    assert choose(TOP_K_THRESHOLD, TOP_K_ROWS, facts=((8, 1024), 1, 8, np.float32)).kernel is TOP_K_ROWS
    assert ARG_EXTREME_ROWS.name == TOP_K_ROWS.name == "top_k"  # two paths to one kernel, one switch


def test_use_kernels_switches_by_name_and_nests():
    assert disabled_kernels() == frozenset()
    with dmljax.use_kernels(False):
        assert disabled_kernels() == frozenset(kernel_names())
        assert choose(SOFTMAX_ROWS, facts=ROW).kernel is None
        with dmljax.use_kernels(True, "softmax"):
            assert choose(SOFTMAX_ROWS, facts=ROW).kernel is SOFTMAX_ROWS
        assert choose(SOFTMAX_ROWS, facts=ROW).kernel is None
    with dmljax.use_kernels(False, "top_k", "top_k_threshold"):
        assert disabled_kernels() == {"top_k", "top_k_threshold"}
        assert choose(SOFTMAX_ROWS, facts=ROW).kernel is SOFTMAX_ROWS
        assert choose(TOP_K_THRESHOLD, TOP_K_ROWS, facts=((8, 4096), 1, 8, np.float32)).kernel is None
    assert disabled_kernels() == frozenset()


def test_use_kernels_refuses_what_it_does_not_know():
    with pytest.raises(ValueError, match=r"^'softmaxx' is not a dmljax kernel; the kernels are attention_cudnn, channels_last, "
                                         r"convolution, convolution_depthwise, convolution_gemm_columns, convolution_gemm_rows, "
                                         r"convolution_phases, "
                                         r"convolution_squeezed, cumulative, dequantize_gemm, "
                                         r"elementwise_quantization, extreme_columns, integer_matmul_rows, max_pooling, padding, softmax, top_k, top_k_threshold$"):
        with dmljax.use_kernels(False, "softmaxx"):
            pass
    with pytest.raises(TypeError, match="expected True or False"):
        with dmljax.use_kernels("no"):
            pass
    assert disabled_kernels() == frozenset()


def test_force_kernels_takes_a_path_wherever_it_can_run_and_retraces():
    # force_kernels (the benchmarks' switch for measuring a rule) takes the named path first, where
    # it can run, whatever its rule says; a path switched off stays off; names are checked
    rows, columns = CONVOLUTION_GEMM_ROWS, CONVOLUTION_GEMM_COLUMNS
    facts = ((2, 8, 5, 5), (4, 8, 1, 1), np.float16, True, 1, (2, 2), (1, 1), (0, 0), (0, 0), (0, 0))
    three = ((2, 8, 5, 5), (4, 8, 3, 3)) + facts[2:]
    assert forced_kernels() == frozenset()
    with force_kernels(rows.name):
        assert forced_kernels() == {rows.name}
        assert choose(columns, rows, facts=facts).kernel is rows
        assert choose(columns, rows, facts=three).kernel is None
        with dmljax.use_kernels(False, rows.name):
            assert choose(columns, rows, facts=facts).kernel is None
    assert forced_kernels() == frozenset()
    with pytest.raises(ValueError, match="^'rowz' is not a dmljax kernel"):
        with force_kernels("rowz"):
            pass
    x, w = np.ones((1, 8, 3, 3), np.float32), np.ones((4, 8, 1, 1), np.float32)
    dmljax.convolution(x, w)
    traced = TRACE_COUNTS["DML_OPERATOR_CONVOLUTION"]
    with force_kernels(columns.name):
        dmljax.convolution(x, w)
    assert TRACE_COUNTS["DML_OPERATOR_CONVOLUTION"] == traced + 1


def test_a_switch_retraces_an_operator_it_has_compiled():
    # the operators' compile caches key on the switches: a call inside the block is traced afresh
    x = np.linspace(-3, 3, 2 * 4096, dtype=np.float32).reshape(2, 4096)
    a = dmljax.activation_softmax(x)
    traced = TRACE_COUNTS["DML_OPERATOR_ACTIVATION_SOFTMAX"]
    dmljax.activation_softmax(x)
    assert TRACE_COUNTS["DML_OPERATOR_ACTIVATION_SOFTMAX"] == traced
    with dmljax.use_kernels(False, "softmax"):
        b = dmljax.activation_softmax(x)
    assert TRACE_COUNTS["DML_OPERATOR_ACTIVATION_SOFTMAX"] == traced + 1
    np.testing.assert_array_equal(np.asarray(a), np.asarray(b))  # off CUDA both are the XLA formula


def test_a_function_jitted_outside_a_block_is_traced_afresh_inside_it():
    # jax.jit's caches key on the switches: the program lowered for CUDA inside the block is the
    # kernel-off one, though the same function was traced (with the kernel) before the block
    import jax  # noqa: PLC0415

    x = np.ones((8, 4096), np.float32)  # rows that take the softmax kernel on CUDA

    def f(a):
        return dmljax.activation_softmax(a)

    def cuda(fn):
        return jax.jit(fn).trace(x).lower(lowering_platforms=("cuda",)).as_text()
    assert "__gpu$xla.gpu.triton" in cuda(f)
    with dmljax.use_kernels(False, "softmax"):
        assert "__gpu$xla.gpu.triton" not in cuda(f)


def test_a_gradient_rule_runs_the_formula_where_a_kernel_would_be_taken():
    # A backward rule is traced to be transposed, and JAX transposes neither a Pallas call nor the
    # partitioning wrapper (custom_vmap) around one: inside a rule a route runs the XLA formula.
    # Both of platform_dependent's branches are traced, so the CPU shows it as the GPU does.
    import jax  # noqa: PLC0415
    import jax.numpy as jnp  # noqa: PLC0415
    from dmljax._src.derivatives import backward_rule  # noqa: PLC0415
    from dmljax._src.kernel_seam import Route  # noqa: PLC0415
    from dmljax._src.kernels.cumulative import scan_rows  # noqa: PLC0415

    route = Route(SOFTMAX_ROWS)

    def tally(u, reverse=False):
        return jnp.flip(jnp.cumsum(jnp.flip(u, -1), axis=-1), -1) if reverse else jnp.cumsum(u, axis=-1)

    def fun(x):
        return route.run(tally, lambda u: scan_rows(u, False, False), x, lead=1)

    def bwd(_, dy):
        return (route.run(functools.partial(tally, reverse=True), lambda u: scan_rows(u, True, False), dy, lead=1),)

    op = backward_rule(fun, lambda x: (fun(x), None), bwd)
    x = np.arange(32, dtype=np.float32).reshape(2, 16)
    grad = jax.jit(jax.grad(lambda v: (op(v) * v).sum()))(x)  # (eagerly, only the CPU's branch is traced)
    np.testing.assert_array_equal(grad, np.cumsum(x, -1) + np.flip(np.cumsum(np.flip(x, -1), -1), -1))
    _, tangent = jax.jit(lambda v, t: jax.jvp(op, (v,), (t,)))(x, np.ones_like(x))
    np.testing.assert_array_equal(tangent, np.cumsum(np.ones_like(x), -1))
