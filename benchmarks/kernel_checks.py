"""Pieces the GPU kernel checks and benchmarks share (scan_kernel_check.py, select_kernel_check.py, pool_kernel_check.py,
threshold_kernel_sweep.py, issue11_gpu.py): a tally of named cases that reports each one and goes on
after a failure, and a call made with a module's settings changed for its duration (a kernel
switched off, a block size tried), which is when a jitted function traces and keeps its program."""

import contextlib

import jax


class Cases:
    """Named checks, each reported as it ends; ``summary`` prints the count and gives the exit
    status (1 if any failed)."""

    def __init__(self):
        self.passed = self.failed = 0

    @contextlib.contextmanager
    def case(self, name: str):
        try:
            yield
        except Exception as e:  # noqa: BLE001  (every case is reported, the run goes on)
            self.failed += 1
            print(f"{name}: FAIL {str(e)[:600]}", flush=True)
        else:
            self.passed += 1
            print(f"{name}: ok", flush=True)

    def summary(self) -> int:
        print(f"{self.passed} passed, {self.failed} failed")
        return 1 if self.failed else 0


def with_settings(module, fn, *args, **settings):
    """``fn(*args)`` with ``module``'s attributes set to ``settings``, restored after (also when it
    raises). A jax.jit function first called here keeps the program these settings gave it."""
    keep = {name: getattr(module, name) for name in settings}
    for name, value in settings.items():
        setattr(module, name, value)
    try:
        return fn(*args)
    finally:
        for name, value in keep.items():
            setattr(module, name, value)


def compiled_with(module, fn, x, **settings):
    """``jax.jit(fn)``, traced and compiled on ``x`` with ``module``'s ``settings``: the program it
    keeps after they are restored, to time beside the default one."""
    return compiled_with_each({module: settings}, fn, x)


def compiled_with_each(settings: dict, fn, x):
    """``compiled_with`` for several modules at once: ``settings`` maps each module to its own (a
    path that two kernel modules could each take, switched off in both)."""
    f = jax.jit(fn)

    def run(v, todo):
        if not todo:
            return jax.block_until_ready(f(v))
        (module, values), *rest = todo
        return with_settings(module, lambda w: run(w, rest), v, **values)
    run(x, list(settings.items()))
    return f
