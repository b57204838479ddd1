"""float64 references for the element-wise logical family (comparisons, boolean logic, NaN and
infinity tests, selection), transcribed from the pages (dml_element_wise_*_operator_desc.md in
../shared/spec/operators/) and docs/semantics.md."""

import math
import operator

import numpy as np

from tests.reference.record import Attrs, Reference
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


def _compare(relation):
    """f(a, b) = relation(a, b): 1 for true, 0 for false. Integers as exact Python ints (64-bit
    ones never pass through a float); floats as math reads them (FLOAT32 denormals flushed), in
    float64, where NaN compares false (IEEE-754) and -0.0 equals +0.0."""
    def fn(a, b):
        a_np, b_np = np.asarray(a), np.asarray(b)
        if np.issubdtype(a_np.dtype, np.integer):
            pairs = zip(a_np.ravel().tolist(), b_np.ravel().tolist())
            return [np.array([int(relation(int(x), int(y))) for x, y in pairs],
                             dtype=np.int64).reshape(a_np.shape)]
        xs, ys = read(a_np).ravel().tolist(), read(b_np).ravel().tolist()
        return [np.array([int(relation(x, y)) for x, y in zip(xs, ys)],
                         dtype=np.int64).reshape(a_np.shape)]
    return fn


def _logic(rule):
    """C's logic on integer tensors: non-zero is true, the result 1 or 0."""
    def fn(*xs):
        arrays = [np.asarray(x) for x in xs]
        flat = [[int(v) != 0 for v in x.ravel().tolist()] for x in arrays]
        return [np.array([int(rule(*vs)) for vs in zip(*flat)], dtype=np.int64).reshape(arrays[0].shape)]
    return fn


def element_wise_is_nan(x):
    # 1 if the input is NaN (IEEE-754), 0 otherwise.
    return [np.array([int(math.isnan(v)) for v in np.asarray(x, np.float64).ravel().tolist()],
                     dtype=np.int64).reshape(np.shape(x))]


def element_wise_is_infinity(x, infinity_mode="EITHER"):
    # f(x) = isinf(x) && ((x > 0 && POSITIVE) || (x < 0 && NEGATIVE) || EITHER)
    def f(v):
        return math.isinf(v) and ((v > 0 and infinity_mode == "POSITIVE")
                                  or (v < 0 and infinity_mode == "NEGATIVE")
                                  or infinity_mode == "EITHER")
    return [np.array([int(f(v)) for v in np.asarray(x, np.float64).ravel().tolist()],
                     dtype=np.int64).reshape(np.shape(x))]


def _each(types):
    return types


_NO_GRAD_COMPARE = "integer output (1 or 0 in UINT8 or UINT32): no gradient reaches A or B"
_NO_GRAD_LOGIC = "integer inputs and output (UINT8 or UINT32): no gradient"
_NO_GRAD_TEST = "integer output (1 or 0): no gradient reaches the input"
# Boolean inputs: 0, 1, 2 and 255, so that a non-zero value other than 1 is read as true.
_BOOL_ROLES = {"ATensor": "condition", "BTensor": "condition"}


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
        no_grad=_NO_GRAD_COMPARE,
    ),
    "DML_OPERATOR_ELEMENT_WISE_LOGICAL_EQUALS": Reference(
        _compare(operator.eq), output_types=_each, no_grad=_NO_GRAD_COMPARE),
    "DML_OPERATOR_ELEMENT_WISE_LOGICAL_GREATER_THAN": Reference(
        _compare(operator.gt), output_types=_each, no_grad=_NO_GRAD_COMPARE),
    "DML_OPERATOR_ELEMENT_WISE_LOGICAL_GREATER_THAN_OR_EQUAL": Reference(
        _compare(operator.ge), output_types=_each, no_grad=_NO_GRAD_COMPARE),
    "DML_OPERATOR_ELEMENT_WISE_LOGICAL_LESS_THAN_OR_EQUAL": Reference(
        _compare(operator.le), output_types=_each, no_grad=_NO_GRAD_COMPARE),
    "DML_OPERATOR_ELEMENT_WISE_LOGICAL_AND": Reference(
        _logic(lambda a, b: a and b), roles=_BOOL_ROLES, no_grad=_NO_GRAD_LOGIC),
    "DML_OPERATOR_ELEMENT_WISE_LOGICAL_OR": Reference(
        _logic(lambda a, b: a or b), roles=_BOOL_ROLES, no_grad=_NO_GRAD_LOGIC),
    "DML_OPERATOR_ELEMENT_WISE_LOGICAL_XOR": Reference(
        _logic(lambda a, b: a != b), roles=_BOOL_ROLES, no_grad=_NO_GRAD_LOGIC),
    "DML_OPERATOR_ELEMENT_WISE_LOGICAL_NOT": Reference(
        _logic(lambda x: not x), roles={"InputTensor": "condition"}, no_grad=_NO_GRAD_LOGIC),
    "DML_OPERATOR_ELEMENT_WISE_IS_NAN": Reference(
        element_wise_is_nan, output_types=_each, no_grad=_NO_GRAD_TEST),
    "DML_OPERATOR_ELEMENT_WISE_IS_INFINITY": Reference(
        element_wise_is_infinity,
        attrs=(Attrs(),
               Attrs({"infinity_mode": "DML_IS_INFINITY_MODE_POSITIVE"}, ref={"infinity_mode": "POSITIVE"}),
               Attrs({"infinity_mode": 2}, ref={"infinity_mode": "NEGATIVE"})),
        output_types=_each, no_grad=_NO_GRAD_TEST),
}
