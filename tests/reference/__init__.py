"""Independent float64 NumPy references, written from the operator pages and docs/semantics.md, not
from dmljax's code. The tree follows the library's: a package per family of dmljax.catalog()
(tests/reference/<family>/, its __init__.py a docstring only) and in it one module per library
module (dmljax/_src/ops/<family>/<module>.py -> tests/reference/<family>/<module>.py), holding one
``REFERENCES`` dict from enum name to a ``record.Reference`` (the value function, the attribute
sets of the generated cases, input roles, the gradient or the reason for none) for exactly the
operators whose records live in that library module. A module whose name starts with an
underscore holds helpers its family's modules share (pooling/_common.py); rules.py holds
docs/semantics.md's shared rules and record.py the Reference record. tests/catalog.py finds the
references by walking this tree. Each value reference returns a list of acceptable results in
float64 (or exact integers): one, or two where DirectML allows a multiply-add to be fused or
not."""
