"""The quantization family of DirectML's catalog: one module an operator or operator group, each record
with its formula below it (`dmljax ops --all --sort family` lists the family's operators); and
fake_quantization.py's ``quantize_dequantize``, a composition of two of them with a straight-through
gradient for training (not a DirectML operator)."""
