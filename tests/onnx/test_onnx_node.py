"""ONNX's backend node tests (onnx.backend.test.case.node, generated in memory: this onnx wheel
ships no backend/test/data/node folder): a case runs when every node of it is mapped (the
"expanded" cases are an operator's function body). The fast tier runs the cases of a few
operators' modules; the slow tier runs them all, checks the share that passes, and checks that
tests/onnx/node_status.md (every case that does not pass, by category, with its reason) is current. Inputs that DirectML takes as attributes (axes, shapes, K) are graph
inputs in these tests: they are given to load as static_inputs, as ONNX Runtime's DirectML
provider requires them on the CPU."""

from __future__ import annotations

import difflib
import importlib
from pathlib import Path

import numpy as np
import pytest

onnx = pytest.importorskip("onnx", reason="the ONNX import tests need the onnx package (the test extra)")

from onnx import numpy_helper  # noqa: E402
from onnx.backend.test.case import node as node_cases  # noqa: E402

import dmljax.onnx as dx  # noqa: E402
from dmljax._src.onnx.docs import NOT_EXPRESSIBLE  # noqa: E402
from dmljax._src.onnx.table import FOLDED, TABLE  # noqa: E402

MAPPED = {(r.domain, r.op_type) for r in TABLE if r.domain != "com.microsoft"} | {("", op) for op in FOLDED}
"""(domain, operator) of the rows ONNX's node tests can reach: ai.onnx's and the preview domains'."""


def _unmapped(graph) -> list[str]:
    return sorted({n.op_type for n in graph.node if ("" if n.domain == "ai.onnx" else n.domain, n.op_type) not in MAPPED})

PASS_SHARE_FLOOR = 0.771
"""The share of all of ONNX's node tests that must pass: measured 1,453 of 1,884 (77.1%; the rest, by
category and reason, in tests/onnx/node_status.md); a mapping that breaks drops it."""


def _arrays(xs):
    return [numpy_helper.to_array(x) if isinstance(x, onnx.TensorProto) else x for x in xs]


def run_case(case) -> str:
    """'pass', or why not: 'unmapped: OPS', 'refused: ...', 'error: ...', 'values'. A case of several
    nodes (an operator's function body, "expanded") runs when every node is mapped. Inputs the loader
    needs static are given as static_inputs; where a function body carries one to an operator that
    needs it static, the integer inputs are (ONNX Runtime's DirectML provider keeps them on the CPU)."""
    graph = case.model.graph
    unmapped = _unmapped(graph)
    if unmapped:
        return "unmapped: " + ", ".join(unmapped)
    inputs, outputs = case.data_sets[0]
    inputs, outputs = _arrays(inputs), _arrays(outputs)
    names = [i.name for i in graph.input]
    static: list[str] = []
    while True:
        try:
            model = dx.load(case.model, static_inputs={n: inputs[names.index(n)] for n in static} or None)
            got = model(*[x for n, x in zip(names, inputs) if n not in static])
            break
        except dx.OnnxImportError as e:
            more = [n for n in names if f"needs graph input {n!r}" in str(e) and n not in static]
            if not more and "depends on the model's runtime values" in str(e):  # through a function body
                more = [i.name for i in graph.input if i.name not in static
                        and i.type.tensor_type.elem_type in (onnx.TensorProto.INT32, onnx.TensorProto.INT64)]
            if not more:
                return f"refused: {e.violations[0].found}"
            static += more
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
           "gather", "lstm", "adam", "melweightmatrix", "flexattention", "linear_attention")
"""Operator modules whose every case (but the known differences below) must pass: the first three
run on their own in the fast tier; the slow tier checks all of them inside the run of every node
test (``test_share_of_node_tests_that_pass``), which runs their cases anyway."""
FAST_MODULES = MODULES[:3]

KNOWN = {"test_reduce_sum_empty_set": "a DirectML tensor has no zero size",
         "test_reduce_sum_empty_set_non_reduced_axis_zero": "a DirectML tensor has no zero size"}
"""Cases of MODULES that may fail, and why."""

REFUSED = {"mode='cubic'": "DirectML's RESAMPLE interpolates NEAREST_NEIGHBOR and LINEAR only",
           "antialias=1": "Resize's antialiasing is not mapped"}
"""Refusals of MODULES' cases (at load, with a message holding the key) that are known, and why."""


def module_cases(module: str) -> list:
    """The node tests of one of onnx.backend.test.case.node's modules (``module``): those its import
    adds, or where it was imported before, those whose names hold its name. "expanded" cases (an
    operator's function body) and bfloat16 ones are left out."""
    before = len(node_cases._NodeTestCases)
    importlib.import_module(f"onnx.backend.test.case.node.{module}")
    cases = node_cases._NodeTestCases[before:] or [c for c in node_cases._NodeTestCases
                                                   if module.replace("_", "") in c.name.replace("_", "")]
    return [c for c in cases if "expanded" not in c.name and "bfloat16" not in c.name]


def failing(results: dict[str, str]) -> dict[str, str]:
    """The results of MODULES' cases that break the rule: neither a pass, nor a known difference, a
    known refusal, or a case that is not expressible or differs by DirectML's rule (node_status.md)."""
    return {k: v for k, v in results.items() if v != "pass" and k not in KNOWN
            and not (v.startswith("refused: ") and any(key in v for key in REFUSED))
            and classify(k, v)[0] == "still failing"}


@pytest.mark.parametrize("module", FAST_MODULES)
def test_node_cases_of_a_module_pass(module):
    results = {c.name: run_case(c) for c in module_cases(module)}
    assert results
    assert not failing(results)


STATUS = Path(__file__).with_name("node_status.md")
"""Every node test that does not pass, by category, with its reason: written by running this file
(`PYTHONPATH=$PWD python3 tests/onnx/test_onnx_node.py`), checked current by the slow tier."""

_TYPES = "has no DirectML data type"
CASE_RULES = (
    # (a substring of the case's name, category, reason)
    *((t, "not expressible", f"{n} {_TYPES}") for t, n in (
        ("FLOAT8", "float8"), ("e4m3", "float8"), ("e5m2", "float8"), ("E8M0", "float8 e8m0"), ("e8m0", "float8 e8m0"),
        ("FLOAT4", "float4"), ("float4", "float4"), ("INT2", "int2"), ("int2", "int2"), ("BFLOAT16", "bfloat16"),
        ("bfloat16", "bfloat16"), ("_string", "a string"), ("STRING", "a string"))),
    *((t, "not expressible", "4-bit integers are outside CAST's and the quantization operators' type tables")
      for t in ("INT4", "int4")),
    ("bf16", "not expressible", f"bfloat16 {_TYPES}"),
    *((t, "not expressible", "sequences and optionals have no DirectML tensor")
      for t in ("_seq", "optional", "_opt", "test_sequence_", "split_to_sequence")),
    *((t, "not expressible", "QUANTIZED_LINEAR_MATRIX_MULTIPLY's scales are FLOAT32 only")
      for t in ("qlinearmatmul_2D_int8_float16", "qlinearmatmul_2D_uint8_float16", "qlinearmatmul_3D_int8_float16",
                "qlinearmatmul_3D_uint8_float16")),
    ("quantizelinear_blocked_symmetric", "not expressible", "ELEMENT_WISE_QUANTIZE_LINEAR's outputs are UINT8 and INT8"),
    ("quantizelinear_int16", "not expressible", "ELEMENT_WISE_QUANTIZE_LINEAR's outputs are UINT8 and INT8"),
    ("quantizelinear_uint16", "not expressible", "ELEMENT_WISE_QUANTIZE_LINEAR's outputs are UINT8 and INT8"),
    ("empty_set", "not expressible", "a DirectML tensor has no zero size"),
    *((t, "not expressible", "a DirectML tensor has no zero size") for t in (
        "zero_size", "tril_zero", "triu_zero", "causal_conv_with_state_kernel_size_one")),
    *((t, "not expressible", "DirectML's SCATTER_ELEMENTS and SCATTER_ND have no reduction")
      for t in ("scatter_elements_with_duplicate_indices", "scatter_elements_with_reduction", "scatternd_add",
                "scatternd_max", "scatternd_min", "scatternd_multiply")),
    ("test_bitshift", "not expressible", "BIT_SHIFT_LEFT/RIGHT take unsigned integers only"),
    ("test_training_dropout", "not expressible",
     "random: DirectML's RANDOM_GENERATOR (Philox) cannot reproduce the test's NumPy draws"),
    *((t, "not expressible", "RESAMPLE interpolates NEAREST_NEIGHBOR and LINEAR only")
      for t in ("scales_cubic", "sizes_cubic")),
    ("linear_antialias", "not expressible", "RESAMPLE has no antialiasing filter"),
    *((t, "not expressible", "a DirectML tensor has no zero size (the function body splits off an empty part)")
      for t in ("rotary_embedding_expanded", "rotary_embedding_interleaved_expanded",
                "rotary_embedding_3d_input_expanded", "rotary_embedding_no_position_ids_expanded",
                "rotary_embedding_no_position_ids_interleaved_expanded")),
    ("test_roialign_mode_max", "differs by DirectML's rule", "RoiAlign: ROI_ALIGN1's MAX takes the largest "
     "interpolated sample; ONNX's reference takes the largest of each sample's four weighted corners"),
    ("test_averagepool_3d_dilations_large_count_include_pad_is_1_ceil_mode_is_True", "differs by DirectML's rule",
     "AveragePool: ceil_mode's last window is extra end padding, which AVERAGE_POOLING1's IncludePadding counts; "
     "ONNX's reference counts the pads only"),
    ("test_attention_4d_causal_fp16", "differs by DirectML's rule", "Attention: DirectML computes FLOAT16 in FLOAT32 "
     "(without ALLOW_HALF_PRECISION_COMPUTATION); ONNX's reference rounds every step to float16 (one float16 step "
     "apart)"),
    ("test_l2normalization_axis_0", "differs by DirectML's rule", "LpNormalization: LP_NORMALIZATION divides by the "
     "norm (its Epsilon 0: ONNX has none), so a vector of zeros gives NaN where ONNX's reference gives 0"),
)
"""Node tests that cannot pass, by a part of their name: their types or attributes fall outside
DirectML's tables ("not expressible"), or DirectML's rule gives other values than ONNX's reference
("differs by DirectML's rule", also listed in docs/onnx.md)."""


NOT_MAPPED_YET: dict[str, str] = {}
"""Operators DirectML can express that dmljax does not map yet, and why (their cases are 'still
failing')."""


def classify(name: str, result: str) -> tuple[str, str]:
    """(category, reason) of a node test's result: 'pass', 'not expressible', "differs by DirectML's
    rule" or 'still failing'."""
    if result == "pass":
        return "pass", ""
    for key, category, reason in CASE_RULES:
        if key in name:
            return category, reason
    if result.startswith("unmapped: "):
        ops = result[len("unmapped: "):].split(", ")
        reasons = [f"{op}: {NOT_EXPRESSIBLE[op]}" for op in ops if op in NOT_EXPRESSIBLE]
        if reasons:
            return "not expressible", "; ".join(reasons)
        if all(op in NOT_MAPPED_YET for op in ops):
            return "still failing", "; ".join(f"{op}: {NOT_MAPPED_YET[op]}" for op in ops)
    return "still failing", result


CATEGORIES = ("pass", "not expressible", "differs by DirectML's rule", "still failing")


def status_markdown(results: dict[str, tuple[str, str]]) -> str:
    """``results``: case name -> (operators, run_case's result)."""
    rows = {k: classify(k, r) for k, (_, r) in results.items()}
    counts = {c: sum(v[0] == c for v in rows.values()) for c in CATEGORIES}
    lines = ["# ONNX node tests in dmljax", "",
             "Generated by `PYTHONPATH=$PWD python3 tests/onnx/test_onnx_node.py` from ONNX's backend node tests "
             "(onnx.backend.test.case.node) of the installed onnx package; the slow tier checks it is current. "
             "Do not edit by hand.", "",
             "| Category | Tests |", "|---|---|", *(f"| {c} | {n} |" for c, n in counts.items()),
             f"| all | {len(rows)} |", ""]
    for category in CATEGORIES[1:]:
        groups: dict[tuple[str, str], list[str]] = {}
        for name, (c, reason) in sorted(rows.items()):
            if c == category:
                ops = results[name][0]
                groups.setdefault((ops if ", " not in ops else "(a function body)", reason), []).append(name)
        lines += [f"## {category} ({counts[category]})", ""]
        if not groups:
            lines += ["None.", ""]
            continue
        lines += ["| Operators | Reason | Tests |", "|---|---|---|"]
        for (ops, reason), names in sorted(groups.items()):
            reason = reason.replace("|", "\\|")
            lines.append(f"| {ops} | {reason} | {len(names)}: {', '.join(n[len('test_'):] for n in names)} |")
        lines.append("")
    return "\n".join(lines)


def all_results() -> dict[str, tuple[str, str]]:
    out = {}
    for case in node_cases.collect_testcases(None):
        ops = ", ".join(sorted({n.op_type for n in case.model.graph.node}))
        out[case.name] = (ops, run_case(case))
    return out


@pytest.mark.slow
def test_share_of_node_tests_that_pass():
    names = {m: [c.name for c in module_cases(m)] for m in MODULES[len(FAST_MODULES):]}  # before all_results imports all
    results = all_results()
    for module, cases in names.items():
        assert cases, module
        assert not failing({k: results[k][1] for k in cases}), module
    passed = sum(r == "pass" for _, r in results.values())
    share = passed / len(results)
    print(f"\nONNX node tests: {passed} of {len(results)} pass ({share:.1%})")
    assert share >= PASS_SHARE_FLOOR
    fresh = status_markdown(results)
    if STATUS.read_text(encoding="utf-8") != fresh:
        diff = "".join(list(difflib.unified_diff(STATUS.read_text(encoding="utf-8").splitlines(True),
                                                 fresh.splitlines(True), "tests/onnx/node_status.md", "measured",
                                                 n=0))[:40])
        pytest.fail("tests/onnx/node_status.md is stale: regenerate it with `PYTHONPATH=$PWD python3 "
                    f"tests/onnx/test_onnx_node.py` and commit it.\n{diff}", pytrace=False)


if __name__ == "__main__":
    STATUS.write_text(status_markdown(all_results()), encoding="utf-8")
    print(f"wrote {STATUS}")
