"""float64 references for the normalization family, transcribed from the pages
(dml_batch_normalization*, dml_mean_variance_normalization*, dml_local_response_normalization*
and dml_lp_normalization_operator_desc.md in ../shared/spec/operators/) and SEMANTICS.md (section
8: accumulating operators): batch.py (the batch normalizations and their *_GRAD operators),
mean_variance.py (MEAN_VARIANCE_NORMALIZATION, 1 and 2), local.py (LOCAL_RESPONSE_NORMALIZATION,
its GRAD, LP_NORMALIZATION); common.py holds the statistics layout and the complex-step
gradients. ``REFERENCES`` is the whole family's."""

from tests.reference.normalization import batch, local, mean_variance

REFERENCES = {**batch.REFERENCES, **mean_variance.REFERENCES, **local.REFERENCES}
