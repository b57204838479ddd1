"""The data_movement family's references, one module per part (each written from its operators'
pages); ``REFERENCES`` is the whole family's."""

from tests.reference.data_movement import cast, fold, join_split, padding, sequences, slicing, space_depth

REFERENCES = {**slicing.REFERENCES, **padding.REFERENCES, **space_depth.REFERENCES, **cast.REFERENCES, **join_split.REFERENCES, **sequences.REFERENCES,
              **fold.REFERENCES}
