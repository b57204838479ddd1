"""Matrix products with NumPy's and PyTorch's shapes, by DML_OPERATOR_GEMM.

GEMM takes {batch..., M, K} x {batch..., K, N} with 2 to 4 dimensions and equal batch sizes.
``matmul`` gives it NumPy's rules: a 1-D operand is a row (left) or a column (right) and loses
that dimension again, batch dimensions broadcast (zero strides), more than two of them are folded
into one (a reshape of the packed views), and a matrix on the right is not broadcast at all: the
left operand's batch dimensions are folded into its rows.
"""

from __future__ import annotations

import math

from dmljax._src.compose.checks import check, same_data_type
from dmljax._src.compose.views import _broadcast_shapes, broadcast_to, reshape
from dmljax._src.errors import Violation
from dmljax._src.ops import OPERATORS

__all__ = ["matmul", "linear"]


def _operands(name: str, arrays: dict, problems: list[Violation]):
    same_data_type(arrays, problems, optional=("bias",))
    check(name, ("GEMM",), problems)
    for arg, x in arrays.items():
        if x is not None and x.ndim == 0:
            problems.append(Violation("", "", f"`{arg}` is 0-d", "an array of 1 or more dimensions"))
    check(name, ("GEMM",), problems)


def matmul(a, b):
    """``a @ b`` with NumPy's rules (``jnp.matmul``, ``torch.matmul``), by DML_OPERATOR_GEMM.

    A 1-D ``a`` is a row and a 1-D ``b`` a column, each dimension dropped from the result; the
    batch dimensions (all but the last two) broadcast. FLOAT32 products are FLOAT32 (never TF32);
    FLOAT16 stays FLOAT16 (accumulated in FLOAT32, rounded once); both operands have one DataType.

    >>> import numpy as np
    >>> from dmljax import compose
    >>> x = np.ones((2, 5, 3), np.float32)
    >>> compose.matmul(x, np.ones((3, 4), np.float32)).shape            # a batch of rows @ a matrix
    (2, 5, 4)
    >>> compose.matmul(np.ones((7, 1, 5, 3), np.float32), np.ones((2, 3, 4), np.float32)).shape
    (7, 2, 5, 4)
    """
    _operands("matmul", {"a": a, "b": b}, [])
    a_vec, b_vec = a.ndim == 1, b.ndim == 1
    a2 = reshape(a, (1, a.shape[0])) if a_vec else a
    b2 = reshape(b, (b.shape[0], 1)) if b_vec else b
    m, k = a2.shape[-2:]
    k2, n = b2.shape[-2:]
    if k != k2:
        check("matmul", ("GEMM",), [Violation(
            "", "", f"`a` {tuple(a.shape)} and `b` {tuple(b.shape)} have inner sizes {k} and {k2}",
            "a's last size equals b's second to last (b's only, for a 1-D b)")])
    batch = _broadcast_shapes("matmul", [a2.shape[:-2], b2.shape[:-2]], ["`a`'s batch sizes", "`b`'s batch sizes"], ("GEMM",))
    if b2.ndim == 2:  # one matrix on the right: the left's batch dimensions are rows
        y = OPERATORS["gemm"](reshape(a2, (math.prod(batch) * m, k)), b2)
    else:
        lead = batch if len(batch) <= 2 else (math.prod(batch),)
        y = OPERATORS["gemm"](reshape(broadcast_to(a2, (*batch, m, k)), (*lead, m, k)),
                              reshape(broadcast_to(b2, (*batch, k, n)), (*lead, k, n)))
    return reshape(y, (*batch, *(() if a_vec else (m,)), *(() if b_vec else (n,))))


def linear(x, weight, bias=None):
    """``x @ weight.T + bias``, PyTorch's ``nn.functional.linear``: ``weight`` is {out, in},
    ``bias`` {out} (or None), ``x`` {..., in}; by one DML_OPERATOR_GEMM with TransB TRANSPOSE (the
    weight is read transposed, never copied) and the bias as CTensor, broadcast over the rows
    (zero strides): the product and the bias are summed in FLOAT32 and rounded once.

    >>> import numpy as np
    >>> from dmljax import compose
    >>> w = np.array([[1, 0, 0], [1, 1, 1]], np.float32)                # 3 features in, 2 out
    >>> compose.linear(np.ones((4, 2, 3), np.float32), w, np.array([10, 20], np.float32))[0]
    Array([[11., 23.],
           [11., 23.]], dtype=float32)
    """
    problems: list[Violation] = []
    _operands("linear", {"x": x, "weight": weight, "bias": bias}, problems)
    if weight.ndim != 2:
        problems.append(Violation("", "", f"`weight` has shape {tuple(weight.shape)}", "{out_features, in_features}"))
    elif x.shape[-1] != weight.shape[1]:
        problems.append(Violation("", "", f"`x` {tuple(x.shape)} has {x.shape[-1]} features, `weight` "
                                          f"{tuple(weight.shape)} takes {weight.shape[1]}",
                                  "x's last size equals weight's second (PyTorch's {out, in} layout)",
                                  "for a weight stored {in, out}, use matmul(x, weight)"))
    if bias is not None and weight.ndim == 2 and tuple(bias.shape) != (weight.shape[0],):
        problems.append(Violation("", "", f"`bias` has shape {tuple(bias.shape)}", f"({weight.shape[0]},), one per output"))
    check("linear", ("GEMM",), problems)
    rows = math.prod(x.shape[:-1])
    out = weight.shape[0]
    c = None if bias is None else broadcast_to(bias, (rows, out))
    y = OPERATORS["gemm"](reshape(x, (rows, x.shape[-1])), weight, c, trans_b="TRANSPOSE")
    return reshape(y, (*x.shape[:-1], out))
