"""The dmljax console script: ``dmljax run`` options and output format, ``dmljax ops`` (the
implemented operators, ``--all``, ``NAME``), ``--version``, a closed stdout and Ctrl-C, the
committed example, and runs of the installed-style entry point in a subprocess."""

import contextlib
import io
import os
import re
import subprocess
import sys
import tomllib
from pathlib import Path

import pytest

import dmljax
from dmljax._src import docgen
from dmljax._src import cli
from dmljax._src.cli import main
from dmljax._src.docstrings import support_table_text
from tests import tiers


ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "examples" / "dxdispatch_threshold.json"


def run(argv, capsys):
    status = main([str(a) for a in argv])
    c = capsys.readouterr()
    return status, c.out, c.err


def test_example_output(capsys):
    status, out, err = run(["run", EXAMPLE], capsys)
    assert status == 0, err
    lines = out.splitlines()
    assert lines[0].startswith("Running on '")
    assert re.fullmatch(r"Dispatch 'threshold': 1 iterations, \d+\.\d{4} ms median \(CPU\)", lines[1])
    # threshold(2x + 1, 0.5), NaN -> 0.5 (maxNum); the strided dispatch keeps the -9 padding
    assert lines[-3:] == [
        "Resource 'input': -3, -1.5, 0, 0.25, 2, nan",
        "Resource 'output': 0.5, 0.5, 1, 1.5, 5, 0.5",
        "Resource 'tiled': 0.5, 0.5, 1, -9, 0.5, 0.5, 1, -9",
    ]


def test_timing_options(capsys):
    status, out, _ = run(["run", EXAMPLE, "-i", "5", "-r", "2", "-w", "2", "-v", "1"], capsys)
    assert status == 0
    assert "Dispatch 'threshold': 5 iterations" in out
    assert re.search(r"CPU Timings \(Cold\) : 2 samples, [\d.]+ ms average, [\d.]+ ms min, [\d.]+ ms median, [\d.]+ ms max", out)
    assert re.search(r"CPU Timings \(Hot\)  : 3 samples", out)
    status, out, _ = run(["run", EXAMPLE, "-i", "3", "-v", "2"], capsys)
    assert "The timings of each iteration: " in out and "iteration 2: " in out
    status, out, _ = run(["run", EXAMPLE, "-i", "1", "-w", "5", "-v", "1"], capsys)
    assert "(Cold)" not in out and "CPU Timings (Hot)  : 1 samples" in out  # at least one hot sample


def test_no_timing_and_feature_level(capsys):
    status, out, _ = run(["run", EXAMPLE, "--no-timing"], capsys)
    assert status == 0 and "Dispatch" not in out
    # THRESHOLD at 1.0 takes 4 to 5 dimensions; the example's 2-D tensors stop it
    status, out, err = run(["run", EXAMPLE, "--feature-level", "1.0"], capsys)
    assert status == 1 and out == ""
    assert "at DML_FEATURE_LEVEL_1_0" in err and "has 2 dimensions" in err and "dispatchable 'threshold'" in err


def test_usage_errors(capsys):
    with pytest.raises(SystemExit) as e:
        main(["run", str(EXAMPLE), "--feature-level", "9.9"])
    assert e.value.code == 2
    assert "is not a DirectML feature level" in capsys.readouterr().err
    status, _, err = run(["run", "does-not-exist.json"], capsys)
    assert status == 1 and "does-not-exist.json: file: cannot be read" in err


@pytest.mark.parametrize("option", ["-i", "-r", "--dispatch_iterations", "--dispatch_repeat"])
@pytest.mark.parametrize("value", ["0", "-1", "x"])
def test_iterations_and_repeat_must_be_positive(option, value, capsys):
    with pytest.raises(SystemExit) as e:
        main(["run", str(EXAMPLE), option, value])
    assert e.value.code == 2
    err = capsys.readouterr().err
    assert err.startswith("usage: dmljax run ") and "error: argument " in err
    assert {"0": "0 is not allowed; give 1 or more", "-1": "-1 is negative", "x": "'x' is not an integer"}[value] in err


def test_run_errors_are_one_short_paragraph(tmp_path, capsys):
    (tmp_path / "binary.json").write_bytes(bytes(range(256)))
    status, out, err = run(["run", tmp_path / "binary.json"], capsys)
    assert status == 1 and out == ""
    assert err == (f"dmljax run: error: {tmp_path / 'binary.json'}: file: is not UTF-8 text (byte 0x80 at offset 128); "
                   "it looks like a binary file\n")
    status, out, err = run(["run", tmp_path], capsys)
    assert status == 1 and err == f"dmljax run: error: {tmp_path}: file: is a directory; expected a model's .json file\n"


def test_ops_lists_every_operator(capsys):
    status, out, _ = run(["ops"], capsys)
    assert status == 0
    level = dmljax.FeatureLevel.newest()
    for name, op in dmljax.registry().items():
        assert f"{name} (value {op.spec.value}; introduced in {op.spec.introduced.dml_name}" in out
        assert support_table_text(op.spec, level) in out


def test_ops_at_an_old_level(capsys):
    status, out, _ = run(["ops", "--feature-level", "1.0"], capsys)
    assert status == 0 and "support tables at DML_FEATURE_LEVEL_1_0" in out
    # ELEMENT_WISE_IF came in 2.0
    block = out.split("DML_OPERATOR_ELEMENT_WISE_IF ")[1].split("\n\n")[0]
    assert "not available at DML_FEATURE_LEVEL_1_0" in block


def test_ops_all_lists_the_catalog(capsys):
    status, out, _ = run(["ops", "--all"], capsys)
    assert status == 0
    entries = dmljax.catalog()
    done = sum(e.implemented for e in entries)
    lines = out.splitlines()
    assert lines[0] == "177 DirectML operators (DML_TARGET_VERSION 0x6400); dmljax implements all of them." and done == 177
    assert lines[2].split() == ["Value", "Operator", "Introduced", "Family", "dmljax"]
    rows = [ln.split() for ln in lines[3:]]
    assert [int(r[0]) for r in rows] == list(range(1, 178))  # by value
    for e, r in zip(entries, rows):
        assert r[1:5] == [e.short_name, e.introduced.version, e.family, "implemented" if e.implemented else "not"]
    assert "SCATTER_ELEMENTS" in out and "(alias SCATTER)" in out


def test_ops_all_sorted_grouped_and_filtered(capsys, unimplemented):
    from dmljax._src.catalog import FAMILIES

    status, out, _ = run(["ops", "--all", "--sort", "family"], capsys)
    heads = [ln for ln in out.splitlines() if ln.startswith("family ")]
    assert [h.split(":")[0] for h in heads] == [f"family {f}" for f in FAMILIES]
    assert "family activation: " in out and " implemented" in heads[0]
    status, out, _ = run(["ops", "--all", "--sort", "name"], capsys)
    names = [ln.split()[1] for ln in out.splitlines()[3:]]
    assert names == sorted(e.short_name for e in dmljax.catalog())
    status, out, _ = run(["ops", "--all", "--sort", "status"], capsys)
    assert out.index("\nimplemented: ") < out.index("\nnot implemented yet: ")  # two hidden (the fixture)
    status, out, _ = run(["ops", "--all"], capsys)
    assert out.splitlines()[0].endswith("dmljax implements 175, 2 not yet.")
    status, out, _ = run(["ops", "--all", "--sort", "level", "--feature-level", "2.0"], capsys)
    exist = [e for e in dmljax.catalog() if e.introduced <= dmljax.FeatureLevel.parse("2.0")]
    assert out.startswith(f"{len(exist)} of DirectML's 177 operators exist at DML_FEATURE_LEVEL_2_0;")
    assert "introduced in DML_FEATURE_LEVEL_2_0: " in out and "DML_FEATURE_LEVEL_2_1" not in out
    assert " ELEMENT_WISE_NEGATE " not in out  # 5.0


def test_ops_one_operator(capsys):
    spec = dmljax.element_wise_negate.spec
    for spelling in ("DML_OPERATOR_ELEMENT_WISE_NEGATE", "ELEMENT_WISE_NEGATE", "element_wise_negate", "156"):
        status, out, err = run(["ops", spelling], capsys)
        assert status == 0 and err == ""
        assert out.startswith("DML_OPERATOR_ELEMENT_WISE_NEGATE (value 156; introduced in DML_FEATURE_LEVEL_5_0;")
        assert support_table_text(spec) in out and f"Gradient: {spec.gradient}" in out
        assert "dmljax.element_wise_negate(input, *," in out
    status, out, _ = run(["ops", "element_wise_if", "--feature-level", "1.0"], capsys)
    assert status == 0 and "Not available at DML_FEATURE_LEVEL_1_0 (introduced in DML_FEATURE_LEVEL_2_0)" in out


def test_ops_not_implemented_and_unknown(capsys, unimplemented):
    first, second = unimplemented  # each named its own way
    status, out, err = run(["ops", first.short_name.lower(), second.short_name, "SCATTER"], capsys)
    assert status == 0 and err == ""
    assert out.splitlines()[0] == (f"{first.enum_name} (value {first.value}; introduced in "
                                   f"{first.introduced.dml_name}; family {first.family})")
    assert out.count("not implemented yet in dmljax") == 2 + (not dmljax.registry().get("DML_OPERATOR_SCATTER_ELEMENTS"))
    # an alias is named whether the operator is implemented or not
    assert "DML_OPERATOR_SCATTER_ELEMENTS (value 94;" in out and "also named DML_OPERATOR_SCATTER" in out
    assert f"  reference page: {docgen.page_url(first)}\n" in out
    assert docgen.page_url(first).endswith(first.page.removesuffix(".md"))  # dml_<name>_operator_desc
    status, out, err = run(["ops", "ELEMENT_WISE_NEGAT", "gemm"], capsys)
    assert status == 2 and out == ""
    assert err.splitlines() == ["dmljax ops: error: 'ELEMENT_WISE_NEGAT' is not a DirectML operator type; did you "
                                "mean DML_OPERATOR_ELEMENT_WISE_NEGATE, DML_OPERATOR_ELEMENT_WISE_MEAN, "
                                "DML_OPERATOR_ELEMENT_WISE_ATAN. `dmljax ops --all` lists DirectML's operators."]
    status, out, err = run(["ops", "0"], capsys)
    assert status == 2 and "0 is not a DML_OPERATOR_TYPE value (1 to 177)" in err
    assert run(["ops", "gemm", "--all"], capsys)[0] == 2
    status, _, err = run(["ops", "--sort", "name"], capsys)
    assert status == 2 and "add --all" in err


def test_version(capsys):
    import jax
    import jaxlib

    with pytest.raises(SystemExit) as e:
        main(["--version"])
    assert e.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"dmljax {dmljax.__version__} (jax {jax.__version__}, jaxlib {jaxlib.__version__}; Python ")
    assert out.count("\n") == 1


class _ClosedStdout(io.StringIO):
    """A stdout whose reader has gone: every write and flush raises BrokenPipeError."""

    def write(self, s):
        raise BrokenPipeError(32, "Broken pipe")

    def flush(self):
        raise BrokenPipeError(32, "Broken pipe")


@pytest.mark.parametrize("argv", [["ops"], ["ops", "--all"], ["ops", "gemm"], ["--version"], ["--help"],
                                  ["run", str(EXAMPLE), "--no-timing"]])
def test_closed_stdout_in_process(argv, capsys):
    with contextlib.redirect_stdout(_ClosedStdout()):
        status = main(argv)
    assert status == 141  # 128 + SIGPIPE, as a shell reports for `cat` or `yes`
    assert capsys.readouterr().err == ""


def test_keyboard_interrupt(capsys, monkeypatch):
    def interrupted(args):
        raise KeyboardInterrupt

    monkeypatch.setattr(cli, "_ops", interrupted)
    assert main(["ops"]) == 130
    assert capsys.readouterr().err == "dmljax: interrupted\n"


@pytest.mark.slow  # 1.4-4.5 s on 2 cores; the slow tier keeps it in CI
@pytest.mark.parametrize("argv", tiers.fast_sample([["ops"], ["ops", "--all"], ["--version"]], keep=1, key="pipe"))
def test_closed_pipe_in_a_subprocess(argv):
    # `dmljax ops | head -n 1`, made deterministic: the pipe's read end is closed before the child
    # starts, so its first write fails with EPIPE. No traceback, no "Exception ignored" at exit.
    code = "import sys; from dmljax._src.cli import main; sys.exit(main())"
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    r, w = os.pipe()
    os.close(r)
    try:
        p = subprocess.run([sys.executable, "-c", code, *argv], stdout=w, stderr=subprocess.PIPE, text=True,
                           env=env, timeout=120)
    finally:
        os.close(w)
    assert p.stderr == ""
    assert p.returncode == 141


def test_console_script_declared():
    meta = tomllib.loads((ROOT / "pyproject.toml").read_text())
    assert meta["project"]["scripts"]["dmljax"] == "dmljax._src.cli:main"


def test_console_script_in_a_subprocess():
    # The installed script calls dmljax._src.cli:main; run that entry point as a fresh process.
    code = "import sys; from dmljax._src.cli import main; sys.exit(main())"
    env = {**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    p = subprocess.run([sys.executable, "-c", code, "run", str(EXAMPLE), "--no-timing"],
                       capture_output=True, text=True, env=env, timeout=120)
    assert p.returncode == 0, p.stderr
    assert p.stdout.splitlines()[-1] == "Resource 'tiled': 0.5, 0.5, 1, -9, 0.5, 0.5, 1, -9"


# The names a newcomer knows from ONNX, PyTorch, JAX and WebNN lead to DirectML's operators: the
# one it leads to in full, or the several it leads to, best first, each with the names that matched.
@pytest.mark.parametrize("name, leads_to", [
    ("layernorm", ["MEAN_VARIANCE_NORMALIZATION2", "MEAN_VARIANCE_NORMALIZATION1"]),
    ("matmul", ["GEMM"]),
    ("linear", ["GEMM", "ACTIVATION_LINEAR"]),
    ("embedding", ["GATHER"]),
    ("softmax", ["ACTIVATION_SOFTMAX1", "ACTIVATION_SOFTMAX"]),
    ("gelu", ["ACTIVATION_GELU"]),
    ("conv", ["CONVOLUTION"]),
    ("attention", ["MULTIHEAD_ATTENTION1", "MULTIHEAD_ATTENTION"]),
    ("MVN", ["MEAN_VARIANCE_NORMALIZATION2", "MEAN_VARIANCE_NORMALIZATION1", "MEAN_VARIANCE_NORMALIZATION"]),
])
def test_ops_known_names(name, leads_to, capsys):
    status, out, err = run(["ops", name], capsys)
    assert status == 0 and err == ""
    first = out.splitlines()[0]
    if len(leads_to) == 1:
        assert first.startswith(f"{name!r} is not a DirectML name; it is a name of DML_OPERATOR_{leads_to[0]} (")
        assert f"\nDML_OPERATOR_{leads_to[0]} (value " in out and "Gradient: " in out  # in full
    else:
        assert first == (f"{name!r} is not a DirectML name; it is a name of {len(leads_to)} DirectML operators "
                         "(`dmljax ops NAME` shows one in full):")
        listed = [line.split()[0] for line in out.splitlines()[1:1 + len(leads_to)]]
        assert listed == [f"DML_OPERATOR_{n}" for n in leads_to]
        assert "Gradient: " not in out


def test_ops_known_names_text(capsys):
    status, out, _ = run(["ops", "softmax"], capsys)
    assert out.splitlines()[1:4] == [
        "  DML_OPERATOR_ACTIVATION_SOFTMAX1 (ONNX Softmax; PyTorch torch.softmax, torch.nn.functional.softmax; "
        "JAX jax.nn.softmax; WebNN softmax)",
        "  DML_OPERATOR_ACTIVATION_SOFTMAX (ONNX Softmax)",
        "Related (part of their names): DML_OPERATOR_ACTIVATION_LOG_SOFTMAX1, DML_OPERATOR_ACTIVATION_LOG_SOFTMAX.",
    ]
    status, out, _ = run(["ops", "lstm"], capsys)  # a DirectML name is shown as before, with its known names
    assert status == 0 and out.startswith("DML_OPERATOR_LSTM (value 77;")
    assert "Known as: ONNX `LSTM`; PyTorch `torch.nn.LSTM`; WebNN `lstm`, `lstmCell`." in out
