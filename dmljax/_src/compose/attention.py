"""Multi-head scaled dot-product attention by DML_OPERATOR_MULTIHEAD_ATTENTION."""

from __future__ import annotations

import math
import operator

import numpy as np
from jax import lax

from dmljax._src.compose.checks import check, data_type, same_data_type
from dmljax._src.compose.views import _broadcast_shapes, broadcast_to, reshape
from dmljax._src.errors import Violation, quote
from dmljax._src.ops import OPERATORS

__all__ = ["attention"]

_OPS = ("MULTIHEAD_ATTENTION",)
_MASK_OPS = ("ELEMENT_WISE_LOGICAL_EQUALS", "ELEMENT_WISE_LOGICAL_NOT", "ELEMENT_WISE_LOGICAL_AND", "CAST")


def _keep(mask, problems):
    """The mask as UINT8 0/1 (1: attend): a bool mask is its bytes, an integer one is compared
    with 0 (ELEMENT_WISE_LOGICAL_EQUALS, then ELEMENT_WISE_LOGICAL_NOT)."""
    if np.dtype(mask.dtype) == np.bool_:
        return lax.convert_element_type(mask, np.uint8)  # a bool is a byte of 0 or 1: its bytes, unchanged
    dt = data_type(mask, "mask", problems)
    if dt is None:
        return None
    if dt.is_float:
        problems.append(Violation("", "", f"`mask` has DataType {dt.name}", "bool or an integer type (nonzero: attend)",
                                  "for an additive float mask, add it to the scores yourself"))
        return None
    zero = broadcast_to(np.zeros((1,), dt.dtype), tuple(mask.shape))
    return OPERATORS["element_wise_logical_not"](OPERATORS["element_wise_logical_equals"](mask, zero))


def attention(query, key, value, mask=None, *, num_heads: int = 1, scale: float | None = None,
              causal: bool = False):
    """Multi-head attention of already projected ``query`` {B, T, H * dk}, ``key`` {B, S, H * dk}
    and ``value`` {B, S, H * dv} (or the same without B): per head, ``softmax(scale * q k^T +
    masked) v``, the heads side by side in the result {B, T, H * dv}; by one
    DML_OPERATOR_MULTIHEAD_ATTENTION (HeadCount ``num_heads``, Scale ``scale``, default
    ``1 / sqrt(dk)``). Its blockwise softmax never holds the {T, S} matrix.

    ``mask`` (optional) is bool or integer, True or nonzero where a query may attend to a key,
    broadcast (NumPy's rule, zero strides) to {B, H, T, S}: {T, S}, {B, 1, 1, S} and so on.
    ``causal=True`` lets query i attend to keys 0 to i only (top-left aligned, as PyTorch's
    ``is_causal``). A mask becomes the operator's BOOLEAN INT32 MaskTensor (an integer mask through
    ELEMENT_WISE_LOGICAL_EQUALS and ELEMENT_WISE_LOGICAL_NOT, a mask with ``causal`` through
    ELEMENT_WISE_LOGICAL_AND, then CAST), with MaskFilterValue -inf: a masked key gets weight 0
    exactly, and a query with every key masked gives NaN, as in PyTorch.

    >>> import numpy as np
    >>> from dmljax import compose
    >>> q = np.ones((1, 2, 4), np.float32)
    >>> v = np.arange(8, dtype=np.float32).reshape(1, 2, 4)
    >>> compose.attention(q, q, v, num_heads=2, causal=True)      # query 0 sees key 0 only
    Array([[[0., 1., 2., 3.],
            [2., 3., 4., 5.]]], dtype=float32)
    """
    problems: list[Violation] = []
    same_data_type({"query": query, "key": key, "value": value}, problems)
    check("attention", _OPS, problems)
    try:
        heads = operator.index(num_heads)
    except TypeError:
        heads = 0
    if heads < 1 or isinstance(num_heads, bool):
        problems.append(Violation("", "", f"`num_heads` is {quote(num_heads)}", "a positive integer"))
    ranks = {query.ndim, key.ndim, value.ndim}
    if len(ranks) != 1 or ranks - {2, 3}:
        problems.append(Violation("", "", f"`query`, `key` and `value` have shapes {tuple(query.shape)}, "
                                          f"{tuple(key.shape)}, {tuple(value.shape)}",
                                  "{B, T, H * dk}, {B, S, H * dk}, {B, S, H * dv}, or all without B"))
    check("attention", _OPS, problems)
    q, k, v = (reshape(t, (1, *t.shape)) if t.ndim == 2 else t for t in (query, key, value))
    b, t_len, d = q.shape
    s_len = k.shape[1]
    if k.shape[0] != b or v.shape[0] != b or v.shape[1] != s_len or k.shape[2] != d:
        problems.append(Violation("", "", f"`query`, `key` and `value` have shapes {tuple(query.shape)}, "
                                          f"{tuple(key.shape)}, {tuple(value.shape)}",
                                  "one batch, key and value one length, query and key one width"))
    if heads >= 1 and (d % heads or v.shape[2] % heads):
        problems.append(Violation("", "", f"widths {d} and {v.shape[2]} for {heads} heads", "multiples of num_heads"))
    if scale is None and not problems:
        scale = 1.0 / math.sqrt(d // heads)
    check("attention", _OPS, problems)
    full = (b, heads, t_len, s_len)
    keep = None
    ops = _OPS
    if mask is not None:
        ops = _OPS + _MASK_OPS
        mshape = tuple(np.shape(mask))
        if len(mshape) > 4 or any(m not in (1, f) for m, f in zip(mshape[::-1], full[::-1])):
            problems.append(Violation("", "", f"`mask` of shape {mshape} does not broadcast to {{B, H, T, S}} {full}",
                                      "sizes of 1 or those, aligned at the end (NumPy's rule)"))
        check("attention", ops, problems)
        keep = _keep(mask if mshape else reshape(mask, (1,)), problems)
        check("attention", ops, problems)
    if causal:
        tri = np.tril(np.ones((t_len, s_len), np.uint8))
        if keep is None:
            keep = tri
        else:
            shape = _broadcast_shapes("attention", [tuple(keep.shape), tri.shape], ["`mask`", "the causal mask"], ops)
            keep = OPERATORS["element_wise_logical_and"](broadcast_to(keep, shape), broadcast_to(tri, shape))
    int_mask = None
    if keep is not None:
        int_mask = broadcast_to(OPERATORS["cast"](keep, output_data_type="INT32"), full)
    out, _, _ = OPERATORS["multihead_attention"](
        q, k, v, mask=int_mask, scale=float(scale), head_count=heads, mask_filter_value=float("-inf"),
        mask_type="BOOLEAN" if int_mask is not None else "NONE")
    return reshape(out, out.shape[1:]) if query.ndim == 2 else out
