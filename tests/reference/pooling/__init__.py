"""float64 references for the pooling family, transcribed from the pages in
../shared/spec/operators/: the windowed poolings and their *_GRAD operators (window.py) and the
region-of-interest operators (roi.py)."""

from tests.reference.pooling import roi, window

REFERENCES = {**window.REFERENCES, **roi.REFERENCES}
