"""The one place that decides between a Pallas kernel and an operator's XLA formula, and the
switches that turn kernels off.

A kernel module (``kernels/``) declares each path it offers as a ``Kernel``: the switch's name,
the rule of where the kernel pays (a function of the call's static facts, written beside the
measured constants it reads) and the benchmark that measured the rule. An operator asks
``choose`` once a call, with the kernels it could take in order of preference and the call's
facts; the ``Route`` it gets runs the XLA formula alone, or the kernel on CUDA and the XLA formula
elsewhere (``jax.lax.platform_dependent``, picked at lowering time, so CPU and TPU programs never
contain a kernel).

``use_kernels`` (public as ``dmljax.use_kernels``) turns kernels off and on again within a
``with`` block, for comparing the two paths; ``force_kernels`` takes the named ones wherever they
can run, whatever their rule says, for the benchmarks that measure the rules; ``packed_memory``
(public as ``dmljax.packed_memory``) tells the rules that the program's arrays lie in memory as
their shapes are written, the last dimension innermost (DirectML's packed strides), where
otherwise XLA chooses each array's memory order; the operators' compile caches and jax.jit's (a
user's function jitted outside the block) key on the three. A
path need not be a Pallas kernel: another form of the formula (CONVOLUTION as a matrix product) is
declared and switched the same way.
Under a sharded input, a kernel (a custom call XLA cannot split) runs on each device's slice
where the operator says which leading axes of its operands are independent (``Route.run``'s
``lead``): the kernel is wrapped in ``partition.along_leading_axes``, a partitioning rule.
This module is core: it imports nothing of dmljax's but the core's partition.py and numerics.py.
"""

from __future__ import annotations

import contextlib
import contextvars
import dataclasses
from typing import Callable, Iterator

import jax
from jax import lax

from dmljax._src.numerics import in_gradient_rule
from dmljax._src.partition import along_leading_axes

__all__ = ["Kernel", "Route", "choose", "use_kernels", "force_kernels", "packed_memory", "memory", "switches",
           "kernel_names", "disabled_kernels", "forced_kernels"]


@dataclasses.dataclass(frozen=True, eq=False)
class Kernel:
    """One path to a Pallas kernel: ``name`` is its switch (several paths to one kernel share
    it), ``applies(*facts)`` the measured rule of where it is taken, ``measured`` the benchmark
    that measured the rule, ``runs(*facts)`` where it can run at all (None: where it applies),
    which ``force_kernels`` reaches."""

    name: str
    applies: Callable[..., bool]
    measured: str
    runs: Callable[..., bool] | None = None

    def __post_init__(self):
        _NAMES.add(self.name)


_NAMES: set[str] = set()
_DISABLED: contextvars.ContextVar[frozenset[str]] = contextvars.ContextVar("dmljax_disabled_kernels",
                                                                           default=frozenset())


_FORCED: contextvars.ContextVar[frozenset[str]] = contextvars.ContextVar("dmljax_forced_kernels",
                                                                         default=frozenset())
_PACKED: contextvars.ContextVar[bool] = contextvars.ContextVar("dmljax_packed_memory", default=False)
_JIT_KEY = (jax.make_user_context(default_value=(frozenset(), frozenset(), False))
            if hasattr(jax, "make_user_context") else lambda value: contextlib.nullcontext())
"""The switches as a part of jax.jit's cache key: a function a user jitted outside a block is
traced afresh inside it (else jit would reuse the trace, with the kernels it chose outside). A jax
without user contexts keys only the operators' own caches on them."""


@contextlib.contextmanager
def _switched(var: contextvars.ContextVar, value: frozenset) -> Iterator[None]:
    token = var.set(value)
    try:
        with _JIT_KEY(switches()):
            yield
    finally:
        var.reset(token)


def kernel_names() -> tuple[str, ...]:
    """The switches' names, sorted (once the operators are imported: ``import dmljax``)."""
    return tuple(sorted(_NAMES))


def disabled_kernels() -> frozenset[str]:
    """The kernels turned off where this is called (one of ``switches``)."""
    return _DISABLED.get()


def forced_kernels() -> frozenset[str]:
    """The kernels forced where this is called (one of ``switches``)."""
    return _FORCED.get()


def switches() -> tuple[frozenset[str], frozenset[str], bool]:
    """Every switch in force where this is called (the kernels turned off, those forced, packed
    memory): the part of each compile cache's key (the operators', a compiled operator's, a loaded
    ONNX model's, and jax.jit's) that a block of this module changes."""
    return _DISABLED.get(), _FORCED.get(), _PACKED.get()


def memory() -> str:
    """The memory order the rules assume where this is called (one of ``switches``): "packed"
    within ``packed_memory``, else "xla" (XLA's choice: the order its layout assignment gives each
    array of the program)."""
    return "packed" if _PACKED.get() else "xla"


@contextlib.contextmanager
def packed_memory(packed: bool = True) -> Iterator[None]:
    """Within the block, operators traced take the program's arrays to lie in memory as their
    shapes are written, the last dimension innermost: DirectML's packed strides, NCHW for a
    convolution's tensors. A rule that depends on memory order then chooses the form that reads
    that order directly (a 1 x 1 FLOAT16 or FLOAT32 CONVOLUTION as one matrix product an image,
    kernels/convolution_gemm.py), where outside it XLA's layout assignment chooses each array's
    order (channels innermost around a GPU convolution) and the rules follow that choice.

    True where the arrays of a program come and go in the caller's memory, packed, and meet no
    operation that XLA would rather give another order: a program of one operator (an operator
    called outside any ``jax.jit`` is such a program, and takes this by itself, as does a
    ``dmljax.compile_operator`` whose descs are all packed), or a network of 1 x 1 convolutions.
    In a network whose other convolutions XLA runs channels innermost, the block makes XLA
    transpose around each 1 x 1 convolution instead. The same values either way: only the form of
    the formula changes, as with ``use_kernels``. ``packed=False`` gives XLA the choice again.

    >>> import dmljax
    >>> from dmljax._src.kernel_seam import memory
    >>> with dmljax.packed_memory():
    ...     memory()
    'packed'
    >>> memory()
    'xla'
    """
    if not isinstance(packed, bool):
        raise TypeError(f"packed_memory: packed is {packed!r}; expected True or False")
    with _switched(_PACKED, packed):
        yield


def _known(names) -> None:
    unknown = [n for n in names if n not in _NAMES]
    if unknown:
        raise ValueError(f"{', '.join(map(repr, unknown))} {'is' if len(unknown) == 1 else 'are'} not "
                         f"{'a dmljax kernel' if len(unknown) == 1 else 'dmljax kernels'}; the kernels are "
                         f"{', '.join(kernel_names())}")


@contextlib.contextmanager
def force_kernels(*names: str) -> Iterator[None]:
    """Within the block, the named kernels are taken wherever they can run (``Kernel.runs``),
    before any other and whatever their measured rule says, unless switched off: how a benchmark
    times each path a rule chooses between, to measure the rule. Not public: a user's program
    keeps the measured rules.

    >>> from dmljax._src.kernel_seam import force_kernels, forced_kernels
    >>> with force_kernels("softmax"):
    ...     sorted(forced_kernels())
    ['softmax']
    """
    _known(names)
    with _switched(_FORCED, _FORCED.get() | frozenset(names)):
        yield


@contextlib.contextmanager
def use_kernels(enabled: bool = True, *names: str) -> Iterator[None]:
    """Within the block, the named Pallas kernels (all of them if none is named) are taken where
    their rules apply (``enabled=True``) or never (``False``: the operators' XLA formulas
    everywhere). Kernels run on NVIDIA GPUs only; elsewhere this changes nothing, but for the forms
    of the formula that a rule takes on the CPU (``convolution_phases``, ``convolution_squeezed``,
    ``integer_matmul_rows``) and an imported ONNX model's channels-last call (``channels_last``,
    known once ``dmljax.onnx`` is imported).
    The choice is made when an operator is traced: inside the block, operators and functions
    jitted outside it are traced afresh.

    >>> import dmljax
    >>> with dmljax.use_kernels(False, "softmax"):
    ...     pass
    >>> with dmljax.use_kernels(False, "softmaxx"):  # doctest: +ELLIPSIS
    ...     pass
    Traceback (most recent call last):
    ...
    ValueError: 'softmaxx' is not a dmljax kernel; the kernels are ...
    """
    if not isinstance(enabled, bool):
        raise TypeError(f"use_kernels: enabled is {enabled!r}; expected True or False")
    _known(names)
    chosen = frozenset(names or _NAMES)
    current = _DISABLED.get()
    with _switched(_DISABLED, current - chosen if enabled else current | chosen):
        yield


@dataclasses.dataclass(frozen=True)
class Route:
    """What ``choose`` decided: ``kernel`` is the path taken on CUDA, or None for the XLA formula
    on every platform."""

    kernel: Kernel | None

    def run(self, xla: Callable, cuda: Callable, *operands, lead: int = 0, whole: tuple[int, ...] = ()):
        """``xla(*operands)``, or on CUDA ``cuda(*operands)`` where a kernel was chosen. ``lead``:
        how many leading axes of the operands (those at the positions ``whole`` excepted, which
        every device gets whole) and of the results the kernel treats as independent: on
        several devices each runs the kernel on its slice of them (the other axes whole)."""
        if self.kernel is None or in_gradient_rule():
            # a gradient rule is traced to be transposed (derivatives.backward_rule), and JAX has no
            # transpose of a Pallas call (nor of the partitioning wrapper): a rule runs the formula
            return xla(*operands)
        kernel = along_leading_axes(cuda, lead, whole) if lead else cuda
        return lax.platform_dependent(*operands, cuda=kernel, default=xla)


def choose(*kernels: Kernel, facts: tuple) -> Route:
    """The first of ``kernels`` that is forced (``force_kernels``) and can run, else the first
    that is switched on and whose rule applies to ``facts``, else the XLA formula."""
    off, forced = _DISABLED.get(), _FORCED.get()
    for kernel in kernels:
        if kernel.name in forced and kernel.name not in off and (kernel.runs or kernel.applies)(*facts):
            return Route(kernel)
    for kernel in kernels:
        if kernel.name not in off and kernel.applies(*facts):
            return Route(kernel)
    return Route(None)
