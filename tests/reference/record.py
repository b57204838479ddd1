"""The record that each reference module's ``REFERENCES`` dict (tests/reference/<family>/<module>.py)
holds for one operator: everything the generated tests (tests/catalog.py, tests/test_catalog.py)
need to know about it that its OpSpec does not say. Adding an operator is its OpSpec in
dmljax/_src/ops/<family>/<module>.py and one ``Reference(...)`` entry in the ``REFERENCES`` of
tests/reference/<family>/<module>.py, the module of the same name; test_catalog.py fails until
both exist.

A reference is written from the operator's page in ../shared/spec/operators/ and docs/semantics.md,
in float64 NumPy (rules.py holds the shared rules), never from dmljax's code.
"""

from __future__ import annotations

import dataclasses
from typing import Callable, Mapping, Sequence

from dmljax._src.dtypes import DataType

__all__ = ["Attrs", "Reference", "ROLES", "KNOWN_ISSUES"]

ROLES = {
    "value": "random values of the tensor's type (floats: N(0, 3); integers: the whole range and small ones)",
    "condition": "a UINT8 condition: 0, 1, 2 and 255",
    "nonzero": "values away from zero (floats: |x| >= 0.5; integers: never 0), e.g. a divisor",
    "positive": "values above zero (floats: 0.25 to 8; integers: 1 and up), e.g. a logarithm's input",
    "factor": "floats of magnitude 1/2 to 2, either sign (integers: as 'value'): a product of many stays in range",
}
"""What an input's values are drawn from, by role (tests/catalog.py draws them)."""

KNOWN_ISSUES = {
    "eager_equals_jit": "op by op (jax.disable_jit) gives other bits than the compiled operator",
}
"""The generated checks an attribute set may declare a known library issue against."""


@dataclasses.dataclass(frozen=True)
class Attrs:
    """One attribute set of the generated cases.

    dml: keyword arguments for the dmljax operator.
    ref: keyword arguments for the reference function and its gradient (None: ``dml``).
    half: the reference's keyword arguments when the operator runs with
        allow_half_precision_computation=True (None: ``ref``).
    selection: overrides the record's ``selection`` for this set (IDENTITY moves data without a
        ScaleBias and does math with one).
    known_issues: a library issue this set shows, by the check it breaks (``KNOWN_ISSUES``),
        with its description: the check then asserts that the issue still shows (so that a fix
        is noticed and the entry removed) and still checks everything else.
    since: the feature level an attribute value needs (PADDING's WRAP mode: "6.4"); the generated
        cases at older tables leave the set out.
    inputs: keyword arguments for the reference's ``make_inputs`` only (which optional inputs a
        case gives: MULTIHEAD_ATTENTION's stacked layouts, its bias and past).
    shaped: attribute values that depend on the case's input shape (an ``output_sizes``, axes
        up to the rank): ``shaped(shape) -> {keyword: value}``, merged into ``dml``, ``ref`` and
        ``half`` by ``at(shape)``.
    """

    dml: Mapping = dataclasses.field(default_factory=dict)
    ref: Mapping | None = None
    half: Mapping | None = None
    selection: bool | None = None
    known_issues: Mapping[str, str] = dataclasses.field(default_factory=dict)
    shaped: Callable[[tuple[int, ...]], Mapping] | None = None
    since: str | None = None
    inputs: Mapping = dataclasses.field(default_factory=dict)

    def at(self, shape: tuple[int, ...]) -> "Attrs":
        """This set for inputs of ``shape``: ``shaped``'s values merged into every kwargs."""
        if self.shaped is None:
            return self
        extra = dict(self.shaped(tuple(shape)))
        return dataclasses.replace(
            self, dml={**self.dml, **extra}, ref=None if self.ref is None else {**self.ref, **extra},
            half=None if self.half is None else {**self.half, **extra}, shaped=None)

    @property
    def ref_kwargs(self) -> Mapping:
        return self.dml if self.ref is None else self.ref

    @property
    def half_kwargs(self) -> Mapping:
        return self.ref_kwargs if self.half is None else self.half

    def __repr__(self) -> str:
        return repr(dict(self.dml))


@dataclasses.dataclass(frozen=True)
class Reference:
    """One operator's float64 reference and how its generated cases use it.

    fn: ``fn(*inputs, **ref_kwargs)`` -> a list of acceptable results (float64 arrays, or exact
        Python ints in object arrays; for selection and data movement the selected values in
        their own type, compared bit for bit): one, or several where DirectML allows more than
        one rounding (a ScaleBias multiply-add fused or not). For an operator with several
        outputs (TOP_K's values and indices) each result is a tuple, one array per output in the
        page's order; an output whose reference array is not float64 is compared bit for bit.
        The generated gradient tests differentiate the first output (the others hold indices).
    attrs: the attribute sets each generated case runs, or a function of the case's DataType
        giving them (CLIP1's bounds are values of the tensor's type).
    roles: input tensor (DML name) -> role (``ROLES``); others are "value".
    selection: the operator selects or moves data: FLOAT32 denormals are kept, not flushed, and
        results are compared bit for bit.
    output_types: for an output whose DataType the caller chooses (LESS_THAN's
        ``output_data_type=``): a function of that row's DataTypes giving the ones the cases use.
    grad: the float64 reference gradient ``grad(dy, *inputs, **ref_kwargs)`` -> one array per
        input (None for an input with no gradient, such as a condition); rules.elementwise_vjp
        builds it from the partial derivatives of an element-wise operator.
    no_grad: why there is no ``grad`` (e.g. "integer output"); exactly one of the two is given.
    near_kink: ``near_kink(*inputs, **ref_kwargs)`` -> a boolean mask (output-shaped) of elements
        too close to a kink (a tie, a jump) for a derivative to be compared; gradients are
        compared everywhere else.
    multiply_add: the formula itself is a multiply-add (VALUE_SCALE_2D's Scale * x + Bias), which
        a backend may fuse into an FMA or not, as a ScaleBias (docs/semantics.md#fused-multiply-add).
    shape: for an operator whose attributes fix a dimension (VALUE_SCALE_2D's Bias gives the
        Channel dimension of NCHW), a function from each generated input shape to the one the
        cases use; None: the generated shapes.
    pointwise: each output element depends only on the input elements at its own coordinates
        (element-wise operators); False for a softmax, whose row is one unit: the generated
        gradient tests then use a random cotangent (dY) and directional finite differences.
    magnitude: ``magnitude(*inputs, **ref_kwargs)`` -> output-shaped float64 sizes of the terms a
        result is the difference of (LOG_SOFTMAX's |x - max| + |ln(sum)| + 1): the budget is
        counted in ULP of the larger of it and the result. None: ULP of the result. For an
        operator with several float outputs, a tuple of one such array (or None) per output.
    grad_magnitude: the same for the gradient, ``grad_magnitude(dy, *inputs, **ref_kwargs)`` ->
        one array (or None) per input.
    ranks: the output is chosen by the inputs' order (TOP_K): any step can reorder close values, so
        the generated finite-difference checks are left out (the reference gradient still runs).
    output_type_arg: the reference's values depend on the output DataType the case chooses
        (CAST): ``fn`` and ``grad`` then take it as the keyword of that choice
        (``output_data_type=``, a DataType name).
    accumulates: the operator sums (or multiplies) many terms in an order DirectML does not
        document (docs/semantics.md#accumulating-operators), which XLA may choose differently when compiled than op by op:
        eager and jit are then each checked against the reference within budget, not for bits.
    null_inputs: the cases leave optional inputs out (None, a null desc) as the operator's calls do
        (MULTIHEAD_ATTENTION's query, key and value come stacked or not): the generated gradient
        tests differentiate the inputs that are given.
    make_inputs: ``make_inputs(rng, types, shape, **dml_kwargs)`` -> one array per input, for an
        operator whose inputs are not all random values of one shape (indices within range, a
        second input of another shape): ``types`` maps each tensor's DML name to its DataType in
        the case, ``shape`` is the case's shape. None: random values of ``shape`` by role.
    """

    fn: Callable
    attrs: Sequence[Attrs] | Callable[[DataType], Sequence[Attrs]] = (Attrs(),)
    roles: Mapping[str, str] = dataclasses.field(default_factory=dict)
    selection: bool = False
    output_types: Callable[[tuple[DataType, ...]], tuple[DataType, ...]] | None = None
    grad: Callable | None = None
    no_grad: str = ""
    near_kink: Callable | None = None
    multiply_add: bool = False
    shape: Callable[[tuple[int, ...]], tuple[int, ...]] | None = None
    pointwise: bool = True
    magnitude: Callable | None = None
    grad_magnitude: Callable | None = None
    make_inputs: Callable | None = None
    accumulates: bool = False
    output_type_arg: bool = False
    ranks: bool = False
    null_inputs: bool = False

    def case_shape(self, shape: tuple[int, ...]) -> tuple[int, ...]:
        """The input shape a generated case uses (``shape`` unless the reference maps it)."""
        return tuple(shape) if self.shape is None else tuple(self.shape(tuple(shape)))

    def attr_sets(self, data_type: DataType, shape: tuple[int, ...] | None = None) -> tuple[Attrs, ...]:
        """The attribute sets of ``data_type``; with ``shape``, each resolved for inputs of that
        shape (``Attrs.at``)."""
        sets = self.attrs(data_type) if callable(self.attrs) else self.attrs
        return tuple(sets) if shape is None else tuple(a.at(shape) for a in sets)

    def selects(self, attrs: Attrs) -> bool:
        return self.selection if attrs.selection is None else attrs.selection

    def role(self, tensor: str) -> str:
        return self.roles.get(tensor, "value")
