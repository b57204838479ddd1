"""The data_movement family's references, one module per part (each written from its operators'
pages); ``REFERENCES`` is the whole family's."""

from tests.reference.data_movement import slicing, padding, space_depth, cast, join_split

REFERENCES = {**slicing.REFERENCES, **padding.REFERENCES, **space_depth.REFERENCES, **cast.REFERENCES, **join_split.REFERENCES}
