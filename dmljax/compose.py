"""dmljax.compose: what DirectMLX is for DirectML's C++ API, for dmljax.

Broadcasting, rank padding, reshapes and transposes are strided tensor descs over an array's
buffer (views, no operator, no arithmetic); slicing, concatenation and splitting are SLICE1, JOIN
and SPLIT; element-wise arithmetic broadcasts as NumPy does; and the compositions a network needs
take NumPy's and PyTorch's shapes: ``matmul`` and ``linear`` (GEMM), ``layer_norm``
(MEAN_VARIANCE_NORMALIZATION1), ``embedding`` (GATHER), ``conv2d`` (CONVOLUTION), ``attention``
(MULTIHEAD_ATTENTION), ``cross_entropy`` (LOG_SOFTMAX1, GATHER_ELEMENTS, REDUCE, NEGATE). Each
lowers to DirectML operators only, keeps their semantics (FLOAT16 stays FLOAT16, no type is
promoted, mixed types are refused) and names them in its docstring; all are jittable and
differentiable. A refusal is a ``dmljax.ValidationError`` headed ``compose.<name>``.

>>> import numpy as np
>>> from dmljax import compose
>>> x = np.ones((2, 5, 3), np.float32)                      # {batch, sequence, features}
>>> compose.linear(x, np.ones((4, 3), np.float32)).shape     # PyTorch's {out, in} weight
(2, 5, 4)
"""

from dmljax._src.compose.activations import gelu, log_softmax, relu, softmax
from dmljax._src.compose.arithmetic import add, divide, multiply, subtract
from dmljax._src.compose.attention import attention
from dmljax._src.compose.convolution import conv2d
from dmljax._src.compose.embedding import embedding
from dmljax._src.compose.linear import linear, matmul
from dmljax._src.compose.losses import cross_entropy
from dmljax._src.compose.normalization import layer_norm
from dmljax._src.compose.reductions import mean, sum  # noqa: A004  (NumPy's name)
from dmljax._src.compose.views import (
    broadcast_arrays,
    broadcast_shapes,
    broadcast_to,
    concatenate,
    expand_dims,
    reinterpret,
    reshape,
    slice,  # noqa: A004  (lax's name)
    split,
    squeeze,
    swapaxes,
    transpose,
)

__all__ = [
    "add",
    "attention",
    "broadcast_arrays",
    "broadcast_shapes",
    "broadcast_to",
    "concatenate",
    "conv2d",
    "cross_entropy",
    "divide",
    "embedding",
    "expand_dims",
    "gelu",
    "layer_norm",
    "linear",
    "log_softmax",
    "matmul",
    "mean",
    "multiply",
    "reinterpret",
    "relu",
    "reshape",
    "slice",
    "softmax",
    "split",
    "squeeze",
    "subtract",
    "sum",
    "swapaxes",
    "transpose",
]
