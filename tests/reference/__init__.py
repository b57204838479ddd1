"""Independent float64 NumPy references, written from the operator pages and SEMANTICS.md, not
from dmljax's code: one module per family of dmljax.catalog() (element_wise_arithmetic.py,
activation.py, ...), each with one ``REFERENCES`` dict from enum name to a ``record.Reference``
(the value function, the attribute sets of the generated cases, input roles, the gradient or the
reason for none); rules.py holds SEMANTICS.md's shared rules. Each value reference returns a list
of acceptable results in float64 (or exact integers): one, or two where DirectML allows a
multiply-add to be fused or not."""
