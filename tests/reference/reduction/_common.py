"""What the reduction references share: the reading of an AxisDirection and the generated
shapes' layout along the tallied axis."""


def _direction(axis_direction):
    return str(axis_direction).upper().endswith("DECREASING") or axis_direction == 1


def _axis_first(shape):
    """A 1-D vector as 8 rows along axis 0 (the cases' Axis), and a size-1 leading dimension
    swapped with the long last one, so that the tallied axis has more than one element."""
    if len(shape) == 1:
        return (8, shape[0] // 8) if shape[0] >= 16 and shape[0] % 8 == 0 else shape
    if shape[0] == 1 and shape[-1] >= 16 and shape[-1] % 8 == 0:
        return (8,) + tuple(shape[1:-1]) + (shape[-1] // 8,)
    return tuple(shape)
