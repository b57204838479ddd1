"""The INT8 x INT8 -> INT32 matrix product of MATRIX_MULTIPLY_INTEGER and its relatives for one
row of A, as a product of two rows, and the measured rule (``RULE``) of where that form is taken.

XLA's CPU backend (jax 0.10.2) hands an INT8 x INT8 -> INT32 ``dot`` of two or more rows to
YNNPACK's integer GEMM, which reads the bytes as they are; a ``dot`` of one row (a matrix-vector
product: a recurrent step's Ht-1 x R, a fully connected layer at batch 1) it widens instead, both
operands converted to INT32 in memory (four bytes an element of B, on every call) and multiplied by
its own loop. The form here appends a second row to A, so that the product is a GEMM of two rows
that YNNPACK takes, and drops that row's outputs, or reads them: a row of ones gives B's column
sums (``sum_k B[k, n]``), which the zero points' expansion needs wherever A has a zero point
(MATRIX_MULTIPLY_INTEGER's ``- za * colsum(B)``; a UINT8 A is read as INT8 with an offset, so it
always has one), in the same pass over B instead of a second. The row is ones where the caller
asks for the column sums, zeros otherwise.

Exactness: the same INT32 sums (integer arithmetic; bit for bit the one-row ``dot``), and the
column sums exact in INT32 (at most 128 K in size).

Where the form is taken: ``RULE``, per platform, measured by
benchmarks/quantization/integer_rows.py (the CPU, paired with the one-row product as written).
"""

from __future__ import annotations

import jax.numpy as jnp
import numpy as np
from jax import lax

from dmljax._src.kernel_seam import Kernel, disabled_kernels, forced_kernels

__all__ = ["RULE", "INTEGER_MATMUL_ROWS", "rows_kind", "rows_on_cpu", "two_row_product"]

RULE: dict[str, dict[str, str]] = {
    "cpu": {"one row": "two rows"},
    "cuda": {"one row": "xla"},
}
"""platform -> the kind of call (``rows_kind``) -> "two rows" (this form) or "xla" (the product as
written).

The CPU's, measured by benchmarks/quantization/integer_rows.py (benchmarks/results/cpu/
quantization/integer_rows.md: 2-core Xeon, shared, load averages 4.0-5.5; jax 0.10.2; the form's
time over the written product's through dmljax.matrix_multiply_integer of a UINT8 A with a zero point
by an INT8 B with one, median of alternating paired repetitions in one process): "two rows",
0.24-0.96x over K x N from 64 x 64 to 4,096 x 4,096 (geometric mean 0.45): 0.96x at 64 x 64,
0.71-0.74x at 256 x 256 and 128 x 512 (an LSTM step's R), 0.53x at 256 x 1,024, 0.24-0.39x from
1,024 x 1,024 up (the written one-row product 2.4-42 ms there, XLA's INT8 product of two rows 0.08-2.2
ms). Two rows or more are left as written: XLA's product of 2 to 64 rows already runs in YNNPACK,
and an exact FLOAT32 form (K in slices of 1,024, each within 2^24, converted and added in INT32)
took 1.0-10x its time there (0.83-1.18x of the one-row product: B converted to FLOAT32 on every
call costs what the widening did).

CUDA's: the product as written (cuBLAS's integer kernel takes one row), not measured."""


def rows_kind(a_shape, b_shape, dtype) -> str | None:
    """"one row" for an INT8 ``a`` {batch..., 1, K} (B {batch..., K, N}); None for any other call."""
    del b_shape
    if np.dtype(dtype) != np.int8 or len(a_shape) < 2 or a_shape[-2] != 1:
        return None
    return "one row"


def _runs(*facts) -> bool:
    return rows_kind(*facts) is not None


def _rule(platform: str):
    def applies(*facts) -> bool:
        kind = rows_kind(*facts)
        return kind is not None and RULE[platform].get(kind, "xla") == "two rows"
    applies.__name__ = applies.__qualname__ = f"applies_on_{platform}"
    return applies


INTEGER_MATMUL_ROWS = Kernel("integer_matmul_rows", _rule("cuda"), measured="benchmarks/quantization/integer_rows.py",
                             runs=_runs)
"""The form's switch, and CUDA's rule (the seam's ``choose``)."""
_APPLIES_ON_CPU = _rule("cpu")


def rows_on_cpu(*facts) -> bool:
    """Whether a call ``(a_shape, b_shape, dtype)`` takes the form on the CPU: the CPU's rule,
    under the seam's switches (``use_kernels(False, "integer_matmul_rows")`` turns it off,
    ``force_kernels`` forces it wherever it can run)."""
    name = INTEGER_MATMUL_ROWS.name
    if name in disabled_kernels():
        return False
    if name in forced_kernels():
        return _runs(*facts)
    return _APPLIES_ON_CPU(*facts)


def two_row_product(x, y, column_sums: bool):
    """(``x`` {batch..., 1, K} times ``y`` {batch..., K, N}, INT8 into INT32, {batch..., 1, N};
    ``sum_k y[..., k, n]`` {batch..., 1, N} in INT32, or None where ``column_sums`` is False), as
    one INT8 ``dot_general`` of two rows: ``x`` with a row of ones (or zeros) below it."""
    nb = x.ndim - 2
    batch = tuple(range(nb))
    fill = jnp.full(x.shape, 1 if column_sums else 0, np.int8)
    p = lax.dot_general(jnp.concatenate([x, fill], axis=-2), y, (((nb + 1,), (nb,)), (batch, batch)),
                        preferred_element_type=np.int32)
    return p[..., :1, :], (p[..., 1:, :] if column_sums else None)
