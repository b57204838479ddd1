"""Every registered operator under a batch-sharded input, on the suite's 8 virtual CPU devices
(tests/sharding.py says how the calls are made and judged): the sharded result equals the
unsharded one bit for bit (where the operator's semantics mix the batch, such as a sum over it,
within the operator's budget of its reference), and an operator that keeps the batch independent
compiles to a program without any collective. Then the computations dmljax partitions itself
(dmljax/_src/partition.py): the Pallas kernels' rule run in Pallas's interpreter, and XLA's own
gaps, checked on plain JAX programs so that a fix in XLA shows."""

import jax
import jax.numpy as jnp
import numpy as np
import pytest
from jax import lax
from jax.sharding import NamedSharding, PartitionSpec as P

import dmljax
from dmljax._src.partition import along_leading_axes
from dmljax._src.registry import registry
from tests import sharding, tiers

OPS = [n for n in registry() if n in sharding.catalog.references()]
FAST = ("DML_OPERATOR_ELEMENT_WISE_ERF",)
"""The fast tier's operator (one whose formula dmljax partitions itself); the slow tier runs
every operator (CONVOLUTION's four calls alone take 4.6 s on two cores)."""


def _short(name):
    return name[len("DML_OPERATOR_"):]


def _verdict(result) -> str:
    c = result.call
    if not result.equal and not result.mixes:
        return f"{c.id}: the sharded result differs from the unsharded one"
    if result.mixes and not result.ok:
        return f"{c.id}: {result.note}"
    if not result.mixes and result.collectives:
        return f"{c.id}: keeps the batch independent, yet its sharded program holds {', '.join(result.collectives)}"
    return ""


@pytest.mark.parametrize("name", [n if n in FAST else pytest.param(n, marks=pytest.mark.slow) for n in OPS],
                         ids=_short)
def test_batch_sharded(name):
    problems = []
    for call in sharding.calls(name):
        verdict = _verdict(sharding.check(call))
        if verdict:
            problems.append(verdict)
    assert not problems, "\n".join(problems)


@pytest.mark.slow  # every operator's calls made: 18 s on two cores
def test_every_operator_has_a_sharded_call_or_a_reason():
    # An operator left without a batched call says why (its tables fix the leading dimension,
    # or it has no input): the list of those is short, and each reason is the operator's own error.
    unbatched = {}
    for name in OPS:
        calls = sharding.calls(name)
        if not calls[0].batched:
            unbatched[name] = calls[0].note
    assert all(unbatched.values()), unbatched
    assert len(unbatched) < len(OPS) // 8, sorted(unbatched)


def test_the_checks_can_fail():
    # A sum over the batch, presented as if it kept the batch independent, is caught twice: the
    # perturbation shows that it mixes the batch, and its program holds an all-reduce.
    call = next(c for c in sharding.calls("DML_OPERATOR_REDUCE") if c.kwargs.get("axes") == (0,)
                and c.kwargs.get("function") == "SUM")
    result = sharding.check(call)
    assert result.mixes and "all-reduce" in result.collectives
    assert _verdict(type(result)(call, True, result.collectives, "")) != ""
    assert sharding.collectives("%x = f32[8] all-gather-start(%y)") == ("all-gather",)


def test_gather_along_a_sharded_axis_keeps_negative_zero():
    # XLA splits a gather along a sharded axis into masked gathers and an all-reduce sum: dmljax
    # gathers the bits, so -0.0 (and a NaN's payload) arrive as they were.
    mesh = sharding.mesh()
    x = np.full((8, 3), -0.0, np.float32)
    x[1, 1] = np.frombuffer(np.uint32(0x7FC00001).tobytes(), np.float32)[0]  # a NaN with a payload
    xs = jax.device_put(x, NamedSharding(mesh, P("batch")))
    idx = np.array([[7, 1, 0]], np.uint32)
    calls = [lambda a: dmljax.gather(a, idx, axis=0, index_dimensions=1),
             lambda a: dmljax.gather_elements(a, np.array([[0, 1, 7]], np.uint32), axis=0),
             lambda a: dmljax.gather_nd(a, np.array([[1], [7]], np.uint32), input_dimension_count=2,
                                        indices_dimension_count=2)]
    for f in calls if tiers.slow() else calls[:1]:
        want, got = np.asarray(jax.jit(f)(x)), np.asarray(jax.jit(f)(xs))
        np.testing.assert_array_equal(got.view(np.uint32), want.view(np.uint32))
    grad = jax.grad(lambda a: jnp.sum(dmljax.gather(a, idx, axis=0, index_dimensions=1)))(np.ones((8, 3), np.float32))
    np.testing.assert_array_equal(grad.sum(axis=1), [3, 3, 0, 0, 0, 0, 0, 3])  # the scatter-add, as before


# ---------------------------------------------------------------------------------- partitioning rule
def _sharded(x):
    return jax.device_put(x, NamedSharding(sharding.mesh(), P("batch")))


@pytest.mark.parametrize("which", tiers.fast_sample(["cumulative", "softmax", "top_k"]))
def test_kernels_rule_runs_each_slice_in_the_interpreter(which):
    # The rule Route.run gives a kernel (its leading axes independent), with the kernel run in
    # Pallas's interpreter on the CPU: each device runs it on its slice, and the result is the
    # whole-array kernel's, bit for bit.
    from dmljax._src.kernels.cumulative import scan_rows
    from dmljax._src.kernels.softmax import softmax_rows
    from dmljax._src.kernels.top_k import top_k_rows

    kernel = {"softmax": lambda v: softmax_rows(v, False, interpret=True),
              "cumulative": lambda v: scan_rows(v, False, False, interpret=True),
              "top_k": lambda v: top_k_rows(v, 4, True, interpret=True)}[which]
    x = np.random.default_rng(0).standard_normal((8, 256)).astype(np.float32)
    wrapped = jax.jit(along_leading_axes(kernel, 1))
    got, want = wrapped(_sharded(x)), jax.jit(kernel)(x)
    for g, w in zip(jax.tree.leaves(got), jax.tree.leaves(want)):
        np.testing.assert_array_equal(np.asarray(g), np.asarray(w))
    assert sharding.collectives(wrapped.lower(_sharded(x)).compile().as_text()) == ()


def test_partitioned_functions_differentiate_and_map():
    # along_leading_axes keeps jax.grad, jax.jvp and jax.vmap (XLA's custom partitioning alone
    # has no rule for either), through the function it wraps.
    x = np.linspace(-2, 2, 48, dtype=np.float32).reshape(8, 6)
    erf = along_leading_axes(lax.erf, 2)
    np.testing.assert_array_equal(jax.grad(lambda v: erf(v).sum())(x), jax.grad(lambda v: lax.erf(v).sum())(x))
    np.testing.assert_array_equal(jax.vmap(erf)(x), lax.erf(x))
    np.testing.assert_array_equal(jax.jvp(erf, (x,), (x,))[1], jax.jvp(lax.erf, (x,), (x,))[1])
    assert sharding.collectives(jax.jit(erf).lower(_sharded(x)).compile().as_text()) == ()


def test_partitioned_function_keeps_64_bit_operands(x64):
    # XLA calls the partitioner when it compiles, outside the caller's 64-bit mode.
    x = np.arange(8 * 4, dtype=np.int64).reshape(8, 4) * np.int64(2**40)
    f = jax.jit(along_leading_axes(lambda v: v + np.int64(1), 1))
    np.testing.assert_array_equal(np.asarray(f(_sharded(x))), x + 1)


# ---------------------------------------------------------------------------------- XLA's gaps
GAP_PROGRAMS = {
    "erf": (lambda x: lax.erf(x), (8, 8)),
    "top_k": (lambda x: lax.top_k(x, 2)[0], (8, 8)),
    "grouped convolution": (lambda x: lax.conv_general_dilated(x, jnp.ones((4, 2, 3, 3), x.dtype), (1, 1),
                                                               [(1, 1), (1, 1)], feature_group_count=2), (8, 4, 6, 6)),
}


@pytest.mark.parametrize("primitive", list(GAP_PROGRAMS))
def test_xla_gaps_still_show(primitive):
    # The primitives dmljax partitions itself (ERF, TOP_K, grouped convolutions) because XLA
    # gathers their whole batch-sharded operand: when XLA learns to split one, this fails, and
    # the wrapper may go.
    program, shape = GAP_PROGRAMS[primitive]
    text = jax.jit(program).lower(_sharded(np.ones(shape, np.float32))).compile().as_text()
    assert "all-gather" in sharding.collectives(text), (primitive, "XLA partitions it now")



# ---------------------------------------------------------------------------------- other backends
def test_float64_is_refused_on_a_backend_without_it(x64):
    # On a TPU (no FLOAT64 arithmetic in XLA's backend) a FLOAT64 tensor is refused with the
    # operator's one error; on the CPU the same call runs. The check reads jax.default_backend()
    # at each call: here the validation is asked directly for each platform.
    from dmljax._src import validate
    from dmljax._src.errors import ValidationError

    spec = dmljax.element_wise_identity.spec
    level = spec.support[0].level
    sigs = (("InputTensor", ((4,), np.dtype(np.float64))),)
    problems, _ = validate._check_tensors(spec, level, sigs, (), (), None, True, "tpu")
    error = ValidationError("element_wise_identity", spec.enum_name, level.dml_name, problems)
    assert ("InputTensor (argument `input`) has DataType FLOAT64, which XLA's TPU backend does not compute in 64 "
            "bits") in str(error)
    assert "cast to FLOAT32 explicitly" in str(error)
    assert validate._check_tensors(spec, level, sigs, (), (), None, True, "cpu")[0] == ()
    ints = (("InputTensor", ((4,), np.dtype(np.int64))),)  # INT64 is exact on a TPU (pairs of 32-bit words)
    assert validate._check_tensors(spec, level, ints, (), (), None, True, "tpu")[0] == ()
    assert dmljax.element_wise_identity(np.ones(4, np.float64)).dtype == np.float64  # here: the CPU


# ---------------------------------------------------------------------------------- the benchmarks' code
def _script(name, *args):
    import os
    import subprocess
    import sys
    from pathlib import Path

    root = Path(__file__).resolve().parents[1]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(root), os.environ.get("PYTHONPATH", "")])}
    out = subprocess.run([sys.executable, str(root / "benchmarks" / "sharding" / name), *args], capture_output=True,
                         text=True, timeout=900, env=env, cwd=root)
    assert out.returncode == 0, out.stdout[-3000:] + out.stderr[-3000:]
    return out.stdout


@pytest.mark.slow  # compiles each step for 1 and 2 devices: about a minute of CPU
def test_data_parallel_script_runs_on_virtual_devices():
    out = _script("data_parallel.py", "--cpu-devices", "2", "--size", "tiny", "--steps", "1", "--warmup", "0")
    rows = [line.split(" | ") for line in out.splitlines() if line.startswith("| cnn") or line.startswith("| block")]
    assert [(r[0], r[1]) for r in rows] == [("| cnn", "1"), ("| cnn", "2"), ("| block", "1"), ("| block", "2")], out
    assert all(float(r[-1].rstrip(" |")) < 1e-5 for r in rows), out  # the gradients, sharded vs one device


@pytest.mark.slow  # compiles the block's step for 1 and 2 devices
def test_tensor_parallel_script_all_reduces_only():
    out = _script("tensor_parallel.py", "--cpu-devices", "2", "--size", "tiny", "--steps", "1", "--warmup", "0")
    two = next(line for line in out.splitlines() if line.startswith("| 2 |"))
    assert "4 all-reduce" in two and "all-gather" not in two, out  # Megatron's two a pass, forward and back
    assert float(two.split(" | ")[-1].rstrip(" |")) < 1e-5, out


@pytest.mark.slow  # every kernel call of tests/lowered_hlo.py compiled sharded (XLA's formulas on the CPU)
def test_gpu_check_script_runs_on_virtual_devices():
    out = _script("check_gpu.py", "--cpu-devices", "2")
    assert out.rstrip().endswith(" failed") and ", 0 failed" in out, out
