"""Pallas kernels that operators take on NVIDIA GPUs, one module an operator or operator group,
named for what it computes; each module declares where its kernels apply as ``Kernel`` records,
and ``kernel_seam.py`` decides, once a call, between a kernel and the operator's XLA formula.
Kernels import the core (numerics, window) and never the operators."""
