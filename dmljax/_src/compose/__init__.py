"""The composition layer (dmljax.compose): what DirectMLX is for DirectML's C++ API. Strided views
in views.py, NumPy-style element-wise arithmetic, activations and reductions, and the common
compositions of a network (matmul and linear, layer_norm, embedding, conv2d, attention,
cross_entropy), each lowered to DirectML operators only."""
