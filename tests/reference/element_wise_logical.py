"""float64 references for the element-wise logical family (comparisons, selection), transcribed
from the pages (dml_element_wise_*_operator_desc.md in ../shared/spec/operators/) and
SEMANTICS.md."""

import numpy as np

from tests.reference.record import Reference
from tests.reference.rules import read


# ---------------------------------------------------------------------------------------------
def element_wise_if(condition, a, b):
    # f(cond, a, b) = a, if cond != 0; b, otherwise. Pure selection: returned in the input type.
    return [np.where(np.asarray(condition) != 0, a, b)]


def if_grad(dy, condition, a, b):
    # The selected side gets dY, the other nothing; the condition has no gradient.
    take_a = np.asarray(condition) != 0
    dy = np.asarray(dy, np.float64)
    return None, np.where(take_a, dy, 0.0), np.where(take_a, 0.0, dy)


# ---------------------------------------------------------------------------------------------
def element_wise_logical_less_than(a, b):
    # f(a, b) = (a < b): 1 for true, 0 for false.
    a_np, b_np = np.asarray(a), np.asarray(b)
    if np.issubdtype(a_np.dtype, np.integer):
        return [np.array([int(x) < int(y) for x, y in zip(a_np.ravel(), b_np.ravel())],
                         dtype=object).reshape(a_np.shape).astype(np.int64)]
    with np.errstate(invalid="ignore"):
        return [(read(a_np) < read(b_np)).astype(np.int64)]


def _each(types):
    return types


REFERENCES = {
    "DML_OPERATOR_ELEMENT_WISE_IF": Reference(
        element_wise_if,
        roles={"ConditionTensor": "condition"},
        selection=True,
        grad=if_grad,
    ),
    "DML_OPERATOR_ELEMENT_WISE_LOGICAL_LESS_THAN": Reference(
        element_wise_logical_less_than,
        output_types=_each,
        no_grad="integer output (1 or 0 in UINT8 or UINT32): no gradient reaches A or B",
    ),
}
