"""ONNX's backend node tests (onnx.backend.test.case.node, generated in memory: this onnx wheel
ships no backend/test/data/node folder) of the operators the mapping table maps. The fast tier
runs the cases of a few operators' modules; the slow tier runs them all and prints the share of
all node tests that pass. Inputs that DirectML takes as attributes (axes, shapes, K) are graph
inputs in these tests: they are given to load as static_inputs, as ONNX Runtime's DirectML
provider requires them on the CPU."""

from __future__ import annotations

import importlib

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the ONNX import tests need the onnx package (the test extra)")

from onnx import numpy_helper  # noqa: E402
from onnx.backend.test.case import node as node_cases  # noqa: E402

import dmljax.onnx as dx  # noqa: E402
from dmljax._src.onnx.table import TABLE  # noqa: E402

MAPPED = {r.op_type for r in TABLE}

PASS_SHARE_FLOOR = 0.386
"""The share of all of ONNX's node tests (mapped or not) that must pass: measured 729 of 1,884
(38.7%; 76.3% of the mapped operators' 956); a mapping that breaks drops it."""


def _arrays(xs):
    return [numpy_helper.to_array(x) if isinstance(x, onnx.TensorProto) else x for x in xs]


def run_case(case) -> str:
    """'pass', or why not: 'unmapped', 'refused: ...', 'error: ...', 'values'."""
    graph = case.model.graph
    if len(graph.node) != 1 or graph.node[0].op_type not in MAPPED:
        return "unmapped"
    inputs, outputs = case.data_sets[0]
    inputs, outputs = _arrays(inputs), _arrays(outputs)
    names = [i.name for i in graph.input]
    try:
        model = dx.load(case.model)
    except dx.OnnxImportError as e:
        needed = [n for n in names if f"needs graph input {n!r}" in str(e)]
        if not needed:
            return f"refused: {e.violations[0].found}"
        try:
            model = dx.load(case.model, static_inputs={n: inputs[names.index(n)] for n in needed})
        except dx.OnnxImportError as e2:
            return f"refused: {e2.violations[0].found}"
        inputs = [x for n, x in zip(names, inputs) if n not in needed]
    try:
        got = model(*inputs)
    except Exception as e:  # noqa: BLE001  (DirectML refusing a type the node test uses, and the like)
        return f"error: {type(e).__name__}: {' '.join(str(e).split())[:160]}"
    for g, w in zip(got, outputs):
        g, w = np.asarray(g), np.asarray(w)
        if g.shape != w.shape or w.dtype == object:
            return "values"
        if not np.allclose(g.astype(np.float64), w.astype(np.float64), rtol=case.rtol, atol=max(case.atol, 1e-6),
                           equal_nan=True):
            return "values"
    return "pass"


MODULES = ("relu", "reshape", "concat", "gemm", "softmax", "layernormalization", "conv", "resize", "reducesum", "slice",
           "gather", "lstm")
"""Operator modules whose every case (but the known differences below) must pass; the first three
run in the fast tier."""

KNOWN = {"test_reduce_sum_empty_set": "a DirectML tensor has no zero size",
         "test_reduce_sum_empty_set_non_reduced_axis_zero": "a DirectML tensor has no zero size"}
"""Cases of MODULES that may fail, and why."""

REFUSED = {"mode='cubic'": "DirectML's RESAMPLE interpolates NEAREST_NEIGHBOR and LINEAR only",
           "tf_crop_and_resize": "Resize's region of interest is not mapped",
           "antialias=1": "Resize's antialiasing is not mapped",
           "keep_aspect_ratio_policy": "Resize's aspect-ratio policies other than stretch are not mapped",
           "layout=1": "the recurrent operators' batch-major layout is not mapped"}
"""Refusals of MODULES' cases (at load, with a message holding the key) that are known, and why."""


@pytest.mark.parametrize("module", [m if i < 3 else pytest.param(m, marks=pytest.mark.slow)
                                    for i, m in enumerate(MODULES)])
def test_node_cases_of_a_module_pass(module):
    before = len(node_cases._NodeTestCases)
    importlib.import_module(f"onnx.backend.test.case.node.{module}")
    cases = node_cases._NodeTestCases[before:] or [c for c in node_cases._NodeTestCases if module in c.name.replace("_", "")]
    results = {c.name: run_case(c) for c in cases if "expanded" not in c.name and "bfloat16" not in c.name}
    assert results
    failing = {k: v for k, v in results.items() if v != "pass" and k not in KNOWN
               and not (v.startswith("refused: ") and any(key in v for key in REFUSED))}
    assert not failing, failing


@pytest.mark.slow
def test_share_of_node_tests_that_pass():
    cases = node_cases.collect_testcases(None)
    results = {c.name: run_case(c) for c in cases}
    passed = sum(r == "pass" for r in results.values())
    mapped = sum(r != "unmapped" for r in results.values())
    share = passed / len(results)
    print(f"\nONNX node tests: {passed} of {len(results)} pass ({share:.1%}); {passed} of {mapped} of the mapped "
          f"operators' ({passed / max(mapped, 1):.1%})")
    for name, r in sorted(results.items()):
        if r not in ("pass", "unmapped"):
            print(f"  {name}: {r}")
    assert share >= PASS_SHARE_FLOOR
