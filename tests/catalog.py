"""Cases generated from the operator records: every operator x support table x data type x
{fewest, most, 4} dimensions, and the negative cases just outside each table."""

import dataclasses

import jax
import numpy as np

from dmljax._src.dtypes import DataType
from dmljax._src.feature_level import FeatureLevel
from dmljax._src.registry import get_operator, registry

SHAPE8 = (2, 3, 1, 2, 1, 1, 2, 1)
ALL_TYPES = tuple(DataType)
# Operators that select or move data: FLOAT32 denormals pass through them unflushed.
SELECTION = {"DML_OPERATOR_ELEMENT_WISE_IF"}

# Attributes each generated case uses (the records supply the defaults of the others).
ATTRS = {
    "DML_OPERATOR_ELEMENT_WISE_THRESHOLD": [{"min": 0.5}, {"min": -1.25, "scale_bias": (0.75, -0.5)}],
    "DML_OPERATOR_ELEMENT_WISE_CONSTANT_POW": [{"exponent": 3}, {"exponent": 0.5, "scale_bias": (2.0, 1.0)}],
    "DML_OPERATOR_ACTIVATION_SCALED_ELU": [{}, {"alpha": 1.0, "gamma": 2.0}],
}


def shape_of(ndim):
    return SHAPE8[:ndim]


@dataclasses.dataclass(frozen=True)
class Case:
    op_name: str
    level: FeatureLevel
    data_type: DataType
    ndim: int

    @property
    def id(self):
        return f"{self.op_name[len('DML_OPERATOR_'):]}-{self.level.version}-{self.data_type.name}-{self.ndim}d"


def seed_ops():
    return {k: v for k, v in registry().items() if k in ATTRS or k in {
        "DML_OPERATOR_ELEMENT_WISE_IF", "DML_OPERATOR_ELEMENT_WISE_MODULUS_FLOOR",
        "DML_OPERATOR_ELEMENT_WISE_LOGICAL_LESS_THAN", "DML_OPERATOR_ELEMENT_WISE_MULTIPLY"}}


def _main_tensor(spec):
    """The tensor whose DataType a case varies: the last input (ATensor/InputTensor/BTensor)."""
    return spec.inputs[-1].dml_name


def positive_cases(names=None):
    """Every table x data type x {fewest, most, 4} dimensions of the operators ``names`` (default:
    the seed operators)."""
    cases = []
    for name in names or seed_ops():
        spec = get_operator(name).spec
        main = _main_tensor(spec)
        for table in spec.support:
            sup = table.tensors[main]
            lo, hi = sup.dims
            for dt in sup.data_types:
                for ndim in sorted({lo, hi, 4} & set(range(lo, hi + 1))):
                    cases.append(Case(name, table.level, dt, ndim))
    return cases


def negative_cases(names=None):
    """(case, what) pairs just outside a table: one dimension too few/many, and each data type
    the main tensor's row does not list; plus the level just below the operator's introduction."""
    out = []
    for name in names or seed_ops():
        spec = get_operator(name).spec
        main = _main_tensor(spec)
        for table in spec.support:
            sup = table.tensors[main]
            lo, hi = sup.dims
            dt0 = sup.data_types[0]
            if lo - 1 >= 0:
                out.append((Case(name, table.level, dt0, lo - 1), "dims"))
            out.append((Case(name, table.level, dt0, hi + 1), "dims"))
            for dt in ALL_TYPES:
                if dt not in sup.data_types:
                    out.append((Case(name, table.level, dt, lo), "type"))
        below = [lv for lv in FeatureLevel if lv < spec.introduced]
        if below:
            t = spec.support[-1].tensors[main]
            out.append((Case(name, below[-1], t.data_types[0], t.dims[0]), "level"))
    return out


def random_tensor(rng, data_type, shape, role="value"):
    if role == "condition":
        return rng.choice(np.array([0, 1, 2, 255], np.uint8), size=shape)
    if data_type.is_float:
        x = rng.standard_normal(shape) * 3.0
        return x.astype(data_type.dtype)
    info = np.iinfo(data_type.dtype)
    if data_type in (DataType.INT4, DataType.UINT4):
        return rng.integers(int(info.min), int(info.max) + 1, size=shape).astype(data_type.dtype)
    vals = rng.integers(int(info.min), int(info.max), size=shape, endpoint=True, dtype=data_type.dtype)
    small = rng.integers(max(int(info.min), -5), 6, size=shape).astype(data_type.dtype)
    return np.where(rng.random(shape) < 0.5, vals, small)


def inputs_for(spec, data_type, shape, rng):
    """Random inputs for every input tensor: the condition is UINT8, the rest ``data_type``."""
    return [random_tensor(rng, DataType.UINT8 if t.dml_name == "ConditionTensor" else data_type,
                          shape, "condition" if t.dml_name == "ConditionTensor" else "value")
            for t in spec.inputs]


def abstract_inputs(spec, data_type, shape):
    return [jax.ShapeDtypeStruct(shape, np.uint8 if t.dml_name == "ConditionTensor" else data_type.dtype)
            for t in spec.inputs]
