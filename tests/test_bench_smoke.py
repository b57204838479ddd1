"""Smoke run of the benchmark harness (tiny sizes, a few seconds): it must run end to end and write
its JSON, Markdown and plots. No timing assertions."""

import json

import pytest

from dmljax._src import bench


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
    count, ops = bench.hlo_kernel_count(text)
    assert count == 1 and ops == ["fusion:f"]


def test_sizes_parse():
    assert bench._sizes("4:8:2") == [16, 64, 256]
    assert bench._sizes("3,5") == [8, 32]


def test_smoke_run_writes_json_markdown_and_plots(tmp_path):
    args = bench.build_parser().parse_args([
        "--ops", "ELEMENT_WISE_IF", "ACTIVATION_SCALED_ELU", "ELEMENT_WISE_THRESHOLD",
        "--dtypes", "FLOAT32", "--sizes", "6,8", "--out", str(tmp_path),
        "--budget-per-point", "0.002", "--compile-reps", "1", "--no-torch", "--no-ort", "--quiet",
    ])
    assert bench.main(args=args) == 0
    res = json.loads((tmp_path / "results.json").read_text())
    assert {r["op"] for r in res["throughput"]} == {
        "DML_OPERATOR_ELEMENT_WISE_IF", "DML_OPERATOR_ACTIVATION_SCALED_ELU", "DML_OPERATOR_ELEMENT_WISE_THRESHOLD"}
    assert {r["n"] for r in res["throughput"]} == {64, 256}
    for r in res["throughput"]:
        assert {"dmljax_jit", "dmljax_call", "jnp_jit", "copy"} <= set(r["variants"])
        assert all(v["s"] > 0 for v in r["variants"].values())
    assert res["meta"]["jax"] and res["meta"]["device"]
    assert res["compile"] and res["overhead"] and res["fwd_bwd"]
    assert res["targets"]
    md = (tmp_path / "results.md").read_text()
    assert "| ELEMENT_WISE_IF | FLOAT32 |" in md
    pytest.importorskip("matplotlib")
    assert (tmp_path / "throughput_FLOAT32.png").stat().st_size > 0
