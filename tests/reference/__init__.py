"""Independent float64 NumPy references, written from the operator pages and SEMANTICS.md, not
from dmljax's code. Each reference returns a list of acceptable results in float64 (or exact
integers): one, or two where DirectML allows a multiply-add to be fused or not."""
