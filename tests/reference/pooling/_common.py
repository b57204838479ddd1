"""What the windowed pooling references share: the geometry and the generated cases' images and
windows.

The geometry (every page): output o of a spatial dimension starts at o * Strides - StartPadding of
the input; window position k (row-major over WindowSize) adds k * Dilations; positions outside
the input are the padding. Pooled sizes: (Size + StartPadding + EndPadding - Dilations *
(WindowSize - 1) - 1) // Strides + 1."""

import itertools


_IMAGE = {4: (2, 3, 5, 4), 5: (1, 2, 4, 3, 3)}


def _image_shape(shape):
    """A case's image: (2, 3, 5, 4) for 4-D, (1, 2, 4, 3, 3) for 5-D (the generated shapes'
    spatial sizes of 1 and 2 hold few windows); other ranks (refused ones) as they are."""
    return _IMAGE.get(len(shape), tuple(shape))


def _geometry_of(kw, r):
    return (tuple(kw["window_size"]), tuple(kw["strides"]), tuple(kw.get("dilations") or (1,) * r),
            tuple(kw["start_padding"]), tuple(kw["end_padding"]))


def _pooled(spatial, window, strides, dilations, start, end):
    return tuple((s + a + b - d * (w - 1) - 1) // t + 1 for s, w, t, d, a, b in
                 zip(spatial, window, strides, dilations, start, end))


def _windows(spatial, window, strides, dilations, start, end):
    """(output position, [(window position k, input position or None), ...]) for every output."""
    pooled = _pooled(spatial, window, strides, dilations, start, end)
    for o in itertools.product(*(range(p) for p in pooled)):
        cells = []
        for k, ks in enumerate(itertools.product(*(range(w) for w in window))):
            pos = tuple(oi * t + ki * d - a for oi, ki, t, d, a in zip(o, ks, strides, dilations, start))
            inside = all(0 <= p < s for p, s in zip(pos, spatial))
            cells.append((k, pos if inside else None))
        yield o, cells


def _planes(shape):
    return itertools.product(range(shape[0]), range(shape[1]))


# -------------------------------------------------------------------------------- the cases
def _plain(dilations: bool):
    def shaped(shape):
        r = len(shape) - 2
        out = {"strides": (1,) * r, "window_size": (2,) * r, "start_padding": (0,) * r, "end_padding": (0,) * r}
        return {**out, "dilations": (1,) * r} if dilations else out
    return shaped


def _strided(dilations: bool):
    def shaped(shape):
        r = len(shape) - 2
        out = {"strides": (2, 1, 2, 1)[:r], "window_size": (3, 2, 2, 2)[:r], "start_padding": (1, 0, 1, 0)[:r],
               "end_padding": (1, 1, 0, 0)[:r]}
        return {**out, "dilations": (1, 2, 1, 1)[:r]} if dilations else out
    return shaped
