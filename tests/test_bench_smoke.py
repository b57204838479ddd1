"""The benchmark harness (dmljax/bench/): a smoke run at tiny sizes that must go end to end and
write its JSON, Markdown and plots (no timing assertions); its pieces (HLO kernel count, sizes,
names, cases from the registry, the chain, ratios); and every bad input to ``dmljax bench``
ending in a short message and a non-zero status, fuzzed too."""

import json
import string
import time
import types
from unittest import mock

import jax
import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dmljax
from dmljax._src.cli import main as dmljax_main
from dmljax._src.spec import REQUIRED
from dmljax.bench import cases, chain, memory, ratios
from dmljax.bench.cli import parse_sizes
from dmljax.bench.hlo import hlo_kernel_count
from dmljax.bench.inputs import RECIPE_LAYOUT, input_kinds, input_structs, make_inputs
from dmljax.bench.plan import Options, plan
from dmljax.bench.report import markdown
from dmljax.bench.targets import LIMITS, evaluate_targets

TINY = ["--budget-per-point", "0", "--compile-reps", "1", "--no-torch", "--no-ort", "--quiet"]
FAST = TINY + ["--no-grad", "--no-overhead", "--no-plots"]


def bench(argv, capsys):
    status = dmljax_main(["bench", *map(str, argv)])
    c = capsys.readouterr()
    return status, c.out, c.err


def assert_clean_error(status, err, *words):
    assert status in (1, 2), err
    assert err.startswith("dmljax bench: error: ") and "Traceback" not in err
    assert len(err) < 1500 and len(err.splitlines()) <= 3, err
    for w in words:
        assert w in err, err


# ------------------------------------------------------------------------------------- pieces
def test_hlo_kernel_count_reads_the_entry_computation():
    text = """HloModule m

fused_computation {
  p = f32[4]{0} parameter(0)
  ROOT n = f32[4]{0} negate(p)
}

ENTRY main {
  %x = f32[4]{0} parameter(0)
  %c = f32[] constant(1)
  %f = f32[4]{0} fusion(%x), kind=kLoop, calls=fused_computation
  ROOT %t = (f32[4]{0}, f32[4]{0}) tuple(%f, %x)
}
"""
    count, ops = hlo_kernel_count(text)
    assert count == 1 and ops == ["fusion:f"]


def test_interleaved_timer_rotates_the_groups_and_times_each_alike(monkeypatch):
    from dmljax.bench import timing

    # A clock that only the calls advance, seen by the timer alone: the machine's load cannot
    # reach the figures.
    now = [0.0]
    monkeypatch.setattr(timing, "time", types.SimpleNamespace(perf_counter=lambda: now[0], sleep=time.sleep))
    log = []

    def sleeper(name, seconds):
        def call(i):
            log.append(name)
            now[0] += seconds
            return np.zeros(())
        return call

    groups = [("a", sleeper("a", 0.002)), ("b", sleeper("b", 0.001)), ("c", sleeper("c", 0.001))]
    got = timing.time_interleaved(groups, 1, lambda out: None, budget_s=0.0, min_reps=6, max_reps=6,
                                  target_rep_s=0.0)
    assert {t.reps for t in got.values()} == {6}
    assert got["a"].s == pytest.approx(0.002) and got["b"].s == got["c"].s == pytest.approx(0.001)
    assert got["a"].p25 == pytest.approx(got["a"].p75) == pytest.approx(0.002)  # every round alike
    timed = log[6:]  # after each group's warm-up and first timed call
    firsts = [timed[3 * r] for r in range(6)]
    assert firsts == ["a", "b", "c", "a", "b", "c"]  # each round starts one group later
    assert all(sorted(timed[3 * r:3 * r + 3]) == ["a", "b", "c"] for r in range(6))


def test_sizes_parse():
    assert parse_sizes("4:8:2") == [16, 64, 256]
    assert parse_sizes("4:9:2") == [16, 64, 256, 512]  # HI always included
    assert parse_sizes("3,5") == [8, 32]
    for bad in ("abc", "", "5:3", "1:2:0", "-1", "1:", "1:2:3:4", "99999999999999999999", "63", "1.5"):
        with pytest.raises(ValueError):
            parse_sizes(bad)


def test_names_go_through_the_registry(unimplemented):
    assert cases.resolve("SCALED_ELU") is dmljax.activation_scaled_elu  # an unambiguous end
    assert cases.resolve("element_wise_if") is dmljax.element_wise_if
    assert cases.resolve(str(dmljax.element_wise_if.spec.value)) is dmljax.element_wise_if
    assert cases.resolve("ELU") is dmljax.activation_elu  # ONNX's name of it (known_names.py)
    with pytest.raises(ValueError, match="ambiguous"):
        cases.resolve("SOFTMAX")
    with pytest.raises(ValueError, match=f"{unimplemented[0].enum_name} is a DirectML operator that "
                       "dmljax does not implement yet"):
        cases.resolve(unimplemented[0].short_name)
    with pytest.raises(ValueError, match="not a DirectML operator"):
        cases.resolve("NOPE")


def test_every_registered_operator_is_a_case_or_a_note():
    selected, notes = cases.select()
    measured = {c.spec.enum_name for c in selected}
    for enum_name, op in dmljax.registry().items():
        assert enum_name in measured or any(n.startswith(op.spec.short_name + ": skipped") for n in notes)
    for c in selected:
        kinds = c.recipe.inputs or tuple("normal" for t in c.spec.inputs if not t.optional)
        structs = input_structs(c, 64, "FLOAT32", kinds)
        have = c.attrs("FLOAT32", arrays=structs if c.recipe.shape_attrs else None)
        missing = [p.arg for p in c.spec.params if p.default is REQUIRED and p.arg not in have]
        assert not missing, (c.short_name, missing)


def test_an_operator_without_a_recipe_is_skipped_or_measured_alone(monkeypatch):
    monkeypatch.delitem(cases.OPERATOR_RECIPES, "ELEMENT_WISE_THRESHOLD")  # requires Min
    monkeypatch.delitem(cases.OPERATOR_RECIPES, "ACTIVATION_ELU")  # Alpha has a default
    selected, notes = cases.select(["ELEMENT_WISE_THRESHOLD", "ACTIVATION_ELU"])
    assert [c.short_name for c in selected] == ["ACTIVATION_ELU"] and selected[0].recipe.jnp is None
    assert any(n.startswith("ELEMENT_WISE_THRESHOLD: skipped: it requires Min") for n in notes)


def test_the_chain_is_data_and_runs_only_in_the_types_it_supports():
    ccases, why = chain.chain_cases(chain.CHAIN)
    assert why == "" and [c.short_name for c in ccases] == [s.op for s in chain.CHAIN.steps]
    assert chain.unsupported(chain.CHAIN, ccases, "FLOAT32") is None
    assert "ACTIVATION_SCALED_ELU" in chain.unsupported(chain.CHAIN, ccases, "INT8")


def test_one_ratio_function():
    rec = {"n": 4, "dtype": "FLOAT32", "bytes": 48, "copy_bytes": 32,
           "variants": {"dmljax_jit": {"s": 2.0}, "jnp_jit": {"s": 1.0}, "copy": {"s": 1.0}},
           "device": {}, "paired": {ratios.paired_key("dmljax_jit", "jnp_jit"): {"ratio": 1.5, "p25": 1, "p75": 2}}}
    assert ratios.time_ratio(rec, "dmljax_jit", "jnp_jit") == ratios.Ratio(1.5, "paired", 1, 2)
    assert ratios.time_ratio(rec, "dmljax_jit", "copy").basis == "host"
    rec["device"] = {"dmljax_jit": {"s": 3.0}, "jnp_jit": {"s": 2.0}}
    assert ratios.time_ratio(rec, "dmljax_jit", "jnp_jit") == ratios.Ratio(1.5, "device")
    assert ratios.copy_fraction(rec).value == pytest.approx(48 / 32 / 2.0)  # host: both host-clock


# -------------------------------------------------------------------------------------- twins
TWIN_TYPES = ("FLOAT32", "FLOAT16")


def _shaped_twins():
    """(case, type) for every recipe that gives its own shapes and a jnp/lax twin."""
    selected, _ = cases.select()
    return [(c, d) for c in selected if c.recipe.jnp is not None and c.recipe.shapes is not None
            for d in TWIN_TYPES if input_kinds(c, d) is not None]


def _agree(dml, twin):
    a, b = jax.tree.leaves(dml), jax.tree.leaves(twin)
    assert len(a) == len(b)
    for x, y in zip(a, b):
        assert x.shape == y.shape
        np.testing.assert_allclose(np.asarray(x, np.float64), np.asarray(y, np.float64), rtol=2e-2, atol=2e-2,
                                   equal_nan=True)


def test_twins_cover_the_operators_that_have_one():
    selected, notes = cases.select()
    twinned = {c.spec.short_name for c in selected if c.recipe.jnp is not None}
    for name in ("ACTIVATION_SOFTMAX", "ACTIVATION_LOG_SOFTMAX1", "ACTIVATION_HARDMAX", "REDUCE", "ARGMAX",
                 "MEAN_VARIANCE_NORMALIZATION1", "BATCH_NORMALIZATION", "BATCH_NORMALIZATION_TRAINING",
                 "LP_NORMALIZATION", "LOCAL_RESPONSE_NORMALIZATION", "GEMM", "CONVOLUTION", "AVERAGE_POOLING",
                 "MAX_POOLING", "LP_POOLING1", "GATHER", "GATHER_ND1", "SCATTER_ELEMENTS", "SCATTER_ND",
                 "CUMULATIVE_SUMMATION", "CUMULATIVE_PRODUCT", "TOP_K", "CAST", "SLICE1", "JOIN", "SPLIT",
                 "PADDING1", "TILE", "DEPTH_TO_SPACE1", "ONE_HOT", "RESAMPLE", "UPSAMPLE_2D",
                 "ELEMENT_WISE_QUANTIZE_LINEAR", "ELEMENT_WISE_DEQUANTIZE_LINEAR"):
        assert name in twinned, name
    reduce_cases = [c for c in selected if c.spec.short_name == "REDUCE"]
    assert {c.variant for c in reduce_cases} == set(dmljax.ReduceFunction.__members__)
    assert {c.attrs("FLOAT32")["function"] for c in reduce_cases} == {c.variant for c in reduce_cases}
    assert "REDUCE[SUM]" in {c.short_name for c in reduce_cases}


def test_every_shaped_twin_traces_to_the_operator_s_shapes():
    """Every recipe with its own shapes: the operator validates them and the twin's outputs have
    the operator's shapes and types (traced, not compiled)."""
    pairs = _shaped_twins()
    assert len(pairs) > 100
    for case, dtype in pairs:
        structs = input_structs(case, 64, dtype, input_kinds(case, dtype), RECIPE_LAYOUT)
        a, b = jax.eval_shape(case.dmljax(dtype), *structs), jax.eval_shape(case.jnp(dtype), *structs)
        assert jax.tree.structure(a) == jax.tree.structure(b), case.short_name
        got = [(x.shape, x.dtype) for x in jax.tree.leaves(a)]
        assert got == [(y.shape, y.dtype) for y in jax.tree.leaves(b)], (case.short_name, dtype)


@pytest.mark.parametrize("case, dtype", _shaped_twins()[:1], ids=lambda v: getattr(v, "short_name", v))
def test_a_shaped_twin_agrees_with_its_operator(case, dtype):
    # the fast tier's one twin of its own shapes; the slow tier checks every one of them
    # (test_every_twin_agrees_with_its_operator: plan.py gives each the recipe's shapes)
    xs = make_inputs(case, 256, dtype, 0, input_kinds(case, dtype), RECIPE_LAYOUT)
    _agree(jax.jit(case.dmljax(dtype))(*xs), jax.jit(case.jnp(dtype))(*xs))


def test_a_twin_that_disagrees_fails_the_check():
    x = np.array([[1.0, 2.0], [3.0, 4.0]], np.float32)
    _agree((x, x.argmax(1)), [x * 1.01, x.argmax(1)])  # within the loose tolerance
    for other in ([x * 1.1, x.argmax(1)], [x.T, x.argmax(1)], [x[:1], x.argmax(1)], [x], [x, x.argmin(1)]):
        with pytest.raises(AssertionError):
            _agree((x, x.argmax(1)), other)


@pytest.mark.slow
def test_every_twin_agrees_with_its_operator():
    """Every operator with a twin, in every layout plan.py picks for it, FLOAT32 and FLOAT16."""
    p = plan(Options(dtypes=TWIN_TYPES, sizes=(256,), no_torch=True, no_ort=True, no_chain=True))
    twins = [q for q in p.pairs if q.case.recipe.jnp is not None]
    assert len(twins) > 250
    shaped = {(c.short_name, d) for c, d in _shaped_twins()}
    planned = {(q.case.short_name, q.dtype) for q in twins if q.layout == RECIPE_LAYOUT}
    assert shaped <= planned, sorted(shaped - planned)  # every twin of its own shapes, in them
    failed, no_float_twin = [], set()
    for q in twins:
        xs = make_inputs(q.case, 256, q.dtype, 0, q.kinds, q.layout)
        try:
            twin = jax.jit(q.case.jnp(q.dtype))(*xs)
        except TypeError:
            no_float_twin.add(q.case.short_name)
            continue
        try:
            _agree(jax.jit(q.case.dmljax(q.dtype))(*xs), twin)
        except AssertionError as e:
            failed.append(f"{q.case.short_name} {q.dtype}: {str(e)[:200]}")
    assert not failed, "\n".join(failed)
    # jnp's bitwise functions take integers only; DirectML's also take the bits of a float tensor
    assert no_float_twin == {"ELEMENT_WISE_BIT_AND", "ELEMENT_WISE_BIT_OR", "ELEMENT_WISE_BIT_XOR",
                             "ELEMENT_WISE_BIT_NOT", "ELEMENT_WISE_BIT_COUNT"}, no_float_twin


def test_the_report_flags_twins_over_the_cpu_goal():
    def rec(op, ratio):
        return {"op": f"DML_OPERATOR_{op}", "dtype": "FLOAT16", "n": 1024, "bytes": 8, "copy_bytes": 8,
                "variants": {"dmljax_jit": {"s": 1.0}, "jnp_jit": {"s": 1.0}}, "device": {},
                "paired": {ratios.paired_key("dmljax_jit", "jnp_jit"): {"ratio": ratio, "p25": ratio, "p75": ratio}}}
    res = {"meta": {"platform": "cpu", "device": "cpu", "date": "", "jax": "", "jaxlib": "", "dmljax": "",
                    "numpy": "", "torch": None, "onnxruntime": None, "python": "", "cpu_count": 2, "method": ""},
           "sizes": [1024], "dtypes": ["FLOAT16"], "throughput": [rec("GEMM", 1.3), rec("REDUCE[SUM]", 1.2)],
           "notes": []}
    goal = [t for t in evaluate_targets(res) if "the goal for every twin" in t["target"]]
    assert [(t["target"].split(":")[0], t["met"], t["limit"]) for t in goal] == [
        ("GEMM FLOAT16", False, f"<= {LIMITS['cpu_time_vs_twin']:.3f}"), ("REDUCE[SUM] FLOAT16", True, "<= 1.250")]
    md = markdown(res)
    assert "| GEMM | FLOAT16 | **1.300** | 1.300-1.300 | **over, p25 too** |" in md
    assert "| REDUCE[SUM] | FLOAT16 | 1.200 | 1.200-1.200 | within |" in md
    assert "1 of 2 over the goal: GEMM FLOAT16 (1.300).\nOf those, 1 with p25 over it too: GEMM FLOAT16." in md
    res["meta"]["platform"] = "gpu"
    assert "Against the jnp/lax twin" not in markdown(res)


# ---------------------------------------------------------------------------------- smoke run
@pytest.mark.slow
def test_smoke_run_writes_json_markdown_and_plots(tmp_path, capsys):
    status, out, err = bench(["--ops", "ELEMENT_WISE_IF", "ACTIVATION_SCALED_ELU", "ELEMENT_WISE_THRESHOLD",
                              "--dtypes", "FLOAT32", "--sizes", "6,8", "--out", tmp_path, "--chain", *TINY], capsys)
    assert status == 0, err
    res = json.loads((tmp_path / "results.json").read_text())
    assert {r["op"] for r in res["throughput"]} == {
        "DML_OPERATOR_ELEMENT_WISE_IF", "DML_OPERATOR_ACTIVATION_SCALED_ELU", "DML_OPERATOR_ELEMENT_WISE_THRESHOLD"}
    assert {r["n"] for r in res["throughput"]} == {64, 256}
    for r in res["throughput"]:
        assert {"dmljax_jit", "dmljax_call", "jnp_jit", "copy"} <= set(r["variants"])
        assert all(v["s"] > 0 for v in r["variants"].values())
    assert res["meta"]["jax"] and res["meta"]["device"]
    assert res["compile"] and res["overhead"] and res["fwd_bwd"] and res["chain"]
    assert res["targets"]
    md = (tmp_path / "results.md").read_text()
    assert "| ELEMENT_WISE_IF | FLOAT32 |" in md
    assert "time(dmljax in jit) / time(jnp formula in jit)" in md
    assert "issue" not in md.lower() and "seed" not in md.lower()
    # the same comparison reads the same in the throughput table, the size table and the targets
    rec = next(r for r in res["throughput"] if r["op"].endswith("_IF") and r["n"] == 256)
    value = ratios.time_ratio(rec, "dmljax_jit", "jnp_jit").text()
    assert md.count(f"| {value} |") >= 3
    pytest.importorskip("matplotlib")
    assert (tmp_path / "throughput_FLOAT32.png").stat().st_size > 0


# ------------------------------------------------------------------------------ bad inputs
def test_unknown_operator(capsys, tmp_path, unimplemented):
    status, out, err = bench(["--ops", "NOPE", "--out", tmp_path], capsys)
    assert_clean_error(status, err, "'NOPE' is not a DirectML operator")
    missing = unimplemented[0]
    status, out, err = bench(["--ops", "SOFTMAX", missing.short_name, "--out", tmp_path], capsys)
    assert_clean_error(status, err, "ambiguous", f"{missing.enum_name} is a DirectML operator that dmljax does not "
                       "implement")


@pytest.mark.parametrize("argv, words", [
    (["--sizes", "abc"], ["--sizes", "abc"]),
    (["--sizes", "5:3"], ["LO must not exceed HI"]),
    (["--dtypes", "BFLOAT16"], ["not a DirectML data type"]),
    (["--budget-per-point", "nan"], ["finite"]),
    (["--threads", "0"], ["--threads"]),
    (["--ops"], ["--ops"]),
    (["--bogus"], ["--bogus"]),
])
def test_argument_errors(argv, words, capsys, tmp_path):
    status, out, err = bench([*argv, "--out", tmp_path], capsys)
    assert status == 2 and out == ""
    assert_clean_error(status, err, *words)


@pytest.mark.slow  # among the fast tier's heaviest (2-5 s); the slow tier keeps it
def test_a_size_that_cannot_fit_is_refused_before_running(capsys, tmp_path):
    status, out, err = bench(["--ops", "ELEMENT_WISE_IF", "--sizes", "40", "--out", tmp_path], capsys)
    assert_clean_error(status, err, "2^40 elements", "available")
    assert status == 1 and not (tmp_path / "results.json").exists()


def test_a_size_that_does_not_fit_is_skipped_when_others_fit(monkeypatch, capsys, tmp_path):
    monkeypatch.setattr(memory, "available", lambda: (100 * 10**6, "a test's figure"))
    status, out, err = bench(["--ops", "ELEMENT_WISE_IF", "--dtypes", "FLOAT32", "--sizes", "4,22",
                              "--out", tmp_path, "--no-chain", *FAST], capsys)
    assert status == 0, err
    res = json.loads((tmp_path / "results.json").read_text())
    assert {r["n"] for r in res["throughput"]} == {16}
    assert any("2^22 elements: ELEMENT_WISE_IF FLOAT32 needs" in n and "a test's figure" in n for n in res["notes"])


def test_integer_type_runs_the_operator_and_skips_the_chain(capsys, tmp_path):
    status, out, err = bench(["--ops", "ELEMENT_WISE_IF", "ACTIVATION_SCALED_ELU", "--dtypes", "INT8",
                              "--sizes", "4", "--chain", "--out", tmp_path, *FAST], capsys)
    # an operator asked for that cannot be measured fails the run, after the others' results are written
    assert status == 1
    assert err == ("dmljax bench: error: 1 operator asked for could not be measured: ACTIVATION_SCALED_ELU: "
                   "none of INT8 is in its support table\n")
    res = json.loads((tmp_path / "results.json").read_text())
    assert [(r["op"], r["dtype"]) for r in res["throughput"]] == [("DML_OPERATOR_ELEMENT_WISE_IF", "INT8")]
    assert "jnp_jit" in res["throughput"][0]["variants"]
    assert not res["chain"]
    assert any(n.startswith("chain of five operators INT8: skipped") for n in res["notes"])
    assert any(n.startswith("INT8: skipped for ACTIVATION_SCALED_ELU") for n in res["notes"])


@pytest.mark.slow  # among the fast tier's heaviest (2-5 s); the slow tier keeps it
def test_ops_measures_matrix_and_convolution_operators_and_no_chain(capsys, tmp_path):
    status, out, err = bench(["--ops", "GEMM", "CONVOLUTION", "--dtypes", "FLOAT32", "--sizes", "6",
                              "--out", tmp_path, *FAST], capsys)
    assert status == 0, err
    res = json.loads((tmp_path / "results.json").read_text())
    assert sorted(r["op"] for r in res["throughput"]) == ["DML_OPERATOR_CONVOLUTION", "DML_OPERATOR_GEMM"]
    assert all(r["variants"] for r in res["throughput"])
    assert not res["chain"] and not any(n.startswith("chain of") for n in res["notes"])


def test_an_operator_no_layout_fits_fails_the_run(capsys, tmp_path):
    status, out, err = bench(["--ops", "LSTM", "GEMM", "--dtypes", "FLOAT32", "--sizes", "6",
                              "--out", tmp_path, *FAST], capsys)
    assert status == 1
    assert err.startswith("dmljax bench: error: 1 operator asked for could not be measured: LSTM: not measured: "
                          "dmljax refuses the benchmark's call in every layout of its inputs (flat, square, "
                          "square, small, square, ones); flat: ValidationError: lstm (DML_OPERATOR_LSTM)"), err
    res = json.loads((tmp_path / "results.json").read_text())
    assert [r["op"] for r in res["throughput"]] == ["DML_OPERATOR_GEMM"]


def test_no_supported_type_at_all(capsys, tmp_path):
    status, out, err = bench(["--ops", "SCALED_ELU", "--dtypes", "INT8", "--no-chain", "--out", tmp_path], capsys)
    assert_clean_error(status, err, "nothing to measure", "INT8")


def test_64_bit_types_need_64_bit_mode(capsys, tmp_path):
    status, out, err = bench(["--ops", "ELEMENT_WISE_IF", "--dtypes", "FLOAT64", "--out", tmp_path], capsys)
    assert_clean_error(status, err, "FLOAT64", "JAX_ENABLE_X64=1")
    with jax.enable_x64(True):
        status, out, err = bench(["--ops", "ELEMENT_WISE_IF", "--dtypes", "FLOAT64", "--sizes", "4",
                                  "--out", tmp_path, *FAST], capsys)
    assert status == 0, err
    res = json.loads((tmp_path / "results.json").read_text())
    assert res["meta"]["x64"] and [r["dtype"] for r in res["throughput"]] == ["FLOAT64"]
    assert res["throughput"][0]["bytes"] == 16 * (1 + 8 + 8 + 8)  # UINT8 condition, 3 FLOAT64 tensors


def test_unwritable_output_folder(capsys, tmp_path):
    (tmp_path / "file").write_text("")
    status, out, err = bench(["--ops", "ELEMENT_WISE_IF", "--sizes", "4", "--out", tmp_path / "file", *FAST], capsys)
    assert_clean_error(status, err, "--out")


# ------------------------------------------------------------------------------------ fuzzing
VALID_NAMES = [n.removeprefix("DML_OPERATOR_") for n in dmljax.registry()] + ["SCALED_ELU", "IF", "element_wise_add"]
NAMES = VALID_NAMES + ["ELU", "NOPE", "0", "88", "", " ", "DML_OPERATOR_",
                       "ELEMENT_WISE_IF\n", "_", "x" * 300]
TYPES = list(dmljax.DataType.__members__) + ["float32", "BFLOAT16", "", "7", "FLOAT32 "]
VALID_SIZES = ["2", "3,4", "2:4", "2:4:2", " 3 ", "3,", "16", "20"]  # 2^20 does not fit the 80 MB below
SIZES = VALID_SIZES + ["4:2", "40", "31", "abc", "", ",", "1:2:0", "-1", "2:", "99999999999999999999", "1.5", "٣"]


@pytest.mark.slow  # among the fast tier's heaviest (2-5 s); the slow tier keeps it
@settings(max_examples=15, deadline=None, derandomize=True, database=None,
          suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow])
@given(ops=st.lists(st.one_of(st.sampled_from(VALID_NAMES), st.sampled_from(NAMES),
                              st.text(string.ascii_uppercase + "_", max_size=12)), min_size=1, max_size=2),
       dtypes=st.lists(st.one_of(st.sampled_from(["FLOAT32", "FLOAT16", "INT8", "UINT8"]), st.sampled_from(TYPES)),
                       min_size=1, max_size=2),
       sizes=st.one_of(st.sampled_from(VALID_SIZES), st.sampled_from(SIZES), st.text(string.digits + ":,", max_size=5)))
def test_fuzzed_arguments_exit_cleanly(ops, dtypes, sizes, capsys, tmp_path_factory):
    """Every run sees 80 MB "available", so that the sizes drawn are bounded by the bench's own
    memory check (up to 2^16 elements here), not by the strategies."""
    out = tmp_path_factory.mktemp("fuzz")
    with mock.patch.object(memory, "available", lambda: (80 * 10**6, "the fuzz test's figure")):
        status = dmljax_main(["bench", "--ops", *ops, "--dtypes", *dtypes, f"--sizes={sizes}", "--out", str(out),
                              "--no-chain", *FAST])
    err = capsys.readouterr().err
    if status == 0:
        for r in json.loads((out / "results.json").read_text())["throughput"]:
            assert r["n"] <= 1 << 16
    else:
        assert_clean_error(status, err)
