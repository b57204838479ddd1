"""Fuzz test of ``dmljax run``: mutated DxDispatch models and random bytes must end in exit status
0, 1 or 2 (or argparse's SystemExit 2) with at most a short message on stderr, never a traceback.

The models mutated are examples/*.json, tests/models/graph_*.json (DML_GRAPH_DESC dispatchables) and, when the shared folder is there, DxDispatch's own
models (shared/dxdispatch/models). A mutation changes a number (near misses, 2^31, 2^64, 10^400,
negatives), a string (another name of the model, a data type, a file name, non-ASCII text),
replaces the value at a random JSON path with random JSON (wrong types, null, nesting), copies
another part of the model there, deletes or adds a member, writes text json.dumps cannot (a
5,000-digit number, nesting 1,000 deep, lone surrogates), or cuts the file. Random bytes and
corrupted .npy sources are fuzzed too. Every run sees 64 MiB of memory "available"
(``dxdispatch._memory_available`` is replaced), so the sizes hypothesis finds are bounded by
dmljax's own memory check, not by the strategies. Strings have no path separators, so writeFile
stays in the example's temporary folder.

The examples are derandomized, so the suite is deterministic; the fast tier runs a third of each
test's count, the slow tier (tests/tiers.py) twice it; for a long run:

    DMLJAX_FUZZ_EXAMPLES=3000 python3 -m pytest -q -p no:cacheprovider tests/test_fuzz_run.py
"""

import io
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from unittest import mock

import numpy as np
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

import dmljax
from dmljax._src.cli import main
from dmljax._src.dxdispatch import model as dxdispatch
from tests import tiers

pytestmark = pytest.mark.fuzz
ROOT = Path(__file__).resolve().parents[1]
SHARED_MODELS = ROOT.parent / "shared" / "dxdispatch" / "models"
EXAMPLE_FILES = sorted((ROOT / "examples").glob("*.json"))
SHARED_FILES = sorted(SHARED_MODELS.glob("*.json")) if SHARED_MODELS.is_dir() else []
DATA_FILES = [p for p in SHARED_MODELS.glob("*") if p.suffix in (".npy", ".dat", ".jpg")] if SHARED_MODELS.is_dir() else []
MEMORY = 64 << 20
MAX_STDERR_LINES = 40


def implemented(type_):
    key = type_ if type_.startswith("DML_OPERATOR_") else "DML_OPERATOR_" + type_
    return key in dmljax.registry()


RUNNABLE_FILES = [p for p in SHARED_FILES if all(
    implemented(d["type"]) for d in json.loads(p.read_text())["dispatchables"].values())]


def fuzz_settings(default: int):
    count = int(os.environ.get("DMLJAX_FUZZ_EXAMPLES", "0")) or tiers.by_tier(max(1, default // 3), 2 * default)
    return settings(max_examples=count, deadline=None, derandomize=True, database=None,
                    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow,
                                           HealthCheck.data_too_large])


# ------------------------------------------------------------------------------- strategies
# Text json.dumps cannot write (it would refuse the 5,000-digit integer, and write a lone surrogate
# as itself): placeholders replaced in the serialized model.
RAW = {"\x00raw0": "9" * 5000, "\x00raw1": "[" * 1000 + "]" * 1000, "\x00raw2": "1e999",
       "\x00raw3": "-0", "\x00raw4": "-" + "9" * 400, "\x00raw5": "{" * 70 + "}" * 70,
       "\x00raw6": '"\\ud800"', "\x00raw7": '"x\\udcff.npy"'}  # lone surrogates, as JSON escapes make them
WORDS = ["nan", "inf", "-inf", "FLOAT32", "FLOAT16", "UINT8", "INT32", "INT64", "FLOAT64", "UINT4", "UNKNOWN",
         "buffer", "texture", "dispatch", "print", "writeFile", "OWNED_BY_DML", "ELEMENT_WISE_ADD",
         "ELEMENT_WISE_IDENTITY", "ACTIVATION_ELU", "hlsl", "onnx", "deferred", "DmlCompileGraph",
         "ALLOW_HALF_PRECISION_COMPUTATION", "x.npy", "x.dat", "out.npy", "out.dat", "out.png", "..", ".", "",
         "dml_element_wise_add_input.npy", "dml_element_wise_add_input.dat", "README.md", "examples",
         "\u00e4\u00f6\u00fc", "\u2603", "\U0001f600", "a\nb", "\u0085", "\x00"]
INTS = [0, -1, 1, 2, 3, 4, 16, 255, 256, 65504, 2**16, 2**24, 2**31 - 1, 2**31, 2**32 - 1, 2**32, 2**40,
        2**53 + 1, 2**63 - 1, 2**63, 2**64 - 1, 2**64, 2**70, -2**31, -2**63, 10**30, 10**400]
TEXT = st.text(st.characters(blacklist_characters="/\\", blacklist_categories=("Cs",)), max_size=12)

scalars = st.one_of(
    st.none(), st.booleans(), st.sampled_from(INTS), st.integers(), st.floats(), st.sampled_from(WORDS), TEXT)


def json_values(keys):
    return st.recursive(scalars, lambda inner: st.one_of(
        st.lists(inner, max_size=4), st.dictionaries(keys, inner, max_size=4)), max_leaves=8)


def paths(doc, prefix=()):
    """Every JSON path in ``doc`` (the root included)."""
    yield prefix
    if isinstance(doc, dict):
        for k, v in doc.items():
            yield from paths(v, prefix + (k,))
    elif isinstance(doc, list):
        for i, v in enumerate(doc):
            yield from paths(v, prefix + (i,))


def at(doc, path):
    for p in path:
        doc = doc[p]
    return doc


def all_keys(doc):
    return sorted({p[-1] for p in paths(doc) if p and isinstance(p[-1], str)})


def mutate(data, doc):
    """One random mutation of ``doc`` (in place); returns the new root."""
    every = list(paths(doc))
    numbers = [p for p in every if isinstance(at(doc, p), (int, float)) and not isinstance(at(doc, p), bool)]
    strings = [p for p in every if isinstance(at(doc, p), str)]
    keys = st.one_of(st.sampled_from(all_keys(doc) or ["x"]), TEXT)
    kind = data.draw(st.sampled_from(["number", "number", "number", "string", "string", "replace", "replace",
                                      "copy", "delete", "add", "raw"]), label="kind")
    if kind == "number" and numbers:  # sizes, offsets, counts and values: near misses and overflows
        path = data.draw(st.sampled_from(numbers), label="path")
        old = at(doc, path)
        value = data.draw(st.one_of(st.sampled_from(INTS), st.integers(-3, 3).map(lambda d: old + d),
                                    st.floats(), st.sampled_from(["nan", "1", None])), label="number")
    elif kind == "string" and strings:  # names, types, paths: another one of the model's or a word
        path = data.draw(st.sampled_from(strings), label="path")
        value = data.draw(st.one_of(st.sampled_from([at(doc, p) for p in strings]), st.sampled_from(WORDS), TEXT),
                          label="string")
    else:
        path = data.draw(st.sampled_from(every), label="path")
        if kind == "copy":  # another value of the same model: names, descs, bindings in the wrong place
            value = json.loads(json.dumps(at(doc, data.draw(st.sampled_from(every), label="from"))))
        elif kind in ("delete", "add"):
            value = None
        elif kind == "raw":
            value = data.draw(st.sampled_from(sorted(RAW)), label="raw")
        else:
            kind, value = "replace", data.draw(json_values(keys), label="value")
    if kind == "add":
        target = at(doc, path)
        if isinstance(target, dict):
            target[data.draw(keys, label="key")] = data.draw(json_values(keys), label="value")
        elif isinstance(target, list):
            target.insert(data.draw(st.integers(0, len(target)), label="at"), data.draw(json_values(keys), label="value"))
        return doc
    if not path:
        return doc if kind == "delete" else value
    parent = at(doc, path[:-1])
    if kind == "delete":
        del parent[path[-1]]
    else:
        parent[path[-1]] = value
    return doc


def serialize(doc) -> str:
    text = json.dumps(doc, ensure_ascii=False, allow_nan=True)
    for key, raw in RAW.items():
        text = text.replace(json.dumps(key, ensure_ascii=False), raw)
    return text


OPTIONS = st.sampled_from([[]] * 4 + [["--no-timing"], ["-i", "2", "-v", "2"], ["-r", "2", "-w", "0", "-v", "1"],
                                      ["--feature-level", "1.0"], ["--feature-level", "3.0"], ["-i", "0"]])


# ------------------------------------------------------------------------------- the property
def run_checked(argv, capsys):
    """``main(argv)``: an exit status of 0, 1 or 2, and a short message on stderr."""
    capsys.readouterr()
    with mock.patch.object(dxdispatch, "_memory_available", return_value=(MEMORY, None)), \
            tempfile.TemporaryDirectory() as out:  # writeFile's files: never the working directory
        try:
            status = main([str(a) for a in argv] + ([] if "--out" in argv else ["--out", out]))
        except SystemExit as e:  # argparse's usage errors
            status = e.code
            assert status == 2, status
    out, err = capsys.readouterr()
    assert status in (0, 1, 2), status
    assert "Traceback" not in err, err
    assert len(err.splitlines()) <= MAX_STDERR_LINES, err
    if status == 1:
        assert err.startswith("dmljax run: error: "), err
    if status == 0:  # a graph whose edges were mended says so in a note
        assert out.startswith("Running on '") and all(
            line.startswith("dmljax run: note: ") for line in err.splitlines()), (out, err)
    return status, out, err


def fuzz_model(data, base: Path, capsys):
    doc = json.loads(base.read_text())
    for _ in range(data.draw(st.sampled_from([1, 1, 1, 2, 3]), label="mutations")):
        doc = mutate(data, doc)
    text = serialize(doc)
    if data.draw(st.sampled_from([False] * 19 + [True]), label="cut?"):
        text = text[: data.draw(st.integers(0, len(text)), label="cut")]
    with tempfile.TemporaryDirectory() as work:
        for p in DATA_FILES:
            shutil.copy(p, work)
        model = Path(work) / base.name
        model.write_text(text, encoding="utf-8")
        run_checked(["run", model, *data.draw(OPTIONS, label="options")], capsys)


@fuzz_settings(80)
@given(data=st.data())
def test_fuzz_examples(data, capsys):
    fuzz_model(data, data.draw(st.sampled_from(EXAMPLE_FILES), label="model"), capsys)


GRAPH_FILES = sorted((ROOT / "tests" / "models").glob("graph_*.json"))


@fuzz_settings(30)
@given(data=st.data())
def test_fuzz_graph_models(data, capsys):
    """DML_GRAPH_DESC models: nodes, edges, counts and bindings mutated."""
    fuzz_model(data, data.draw(st.sampled_from(GRAPH_FILES), label="model"), capsys)


@tiers.needs_shared
@fuzz_settings(120)
@given(data=st.data())
def test_fuzz_shared_models(data, capsys):
    # Most of them use operators dmljax does not implement: they stop at that check, so the ones
    # that run are drawn four times in five.
    files = RUNNABLE_FILES if data.draw(st.integers(0, 4), label="runnable?") else SHARED_FILES
    fuzz_model(data, data.draw(st.sampled_from(files), label="model"), capsys)


@fuzz_settings(80)
@given(content=st.one_of(st.binary(max_size=200), st.text(max_size=200).map(str.encode),
                         st.sampled_from([b"", b"\xef\xbb\xbf", b"null", b"[]", b"{}", b"\xef\xbb\xbf{}",
                                          b'{"resources": {}, "dispatchables": {}, "commands": []}'])))
def test_fuzz_bytes(content, capsys):
    with tempfile.TemporaryDirectory() as work:
        model = Path(work) / "model.json"
        model.write_bytes(content)
        status, out, err = run_checked(["run", model], capsys)
    assert status == (0 if content.lstrip(b"\xef\xbb\xbf") == b'{"resources": {}, "dispatchables": {}, "commands": []}'
                      else 1), err


def npy_bytes(array) -> bytes:
    f = io.BytesIO()
    np.save(f, np.asarray(array), allow_pickle=False)
    return f.getvalue()


NPY_FILES = [npy_bytes(a) for a in ([1.5, 2.5], [[1, 2], [3, 4]], [7])]


@st.composite
def npy_contents(draw):
    """A .npy file with some of its bytes (header or data) replaced, inserted or cut."""
    content = bytearray(draw(st.sampled_from(NPY_FILES)))
    for _ in range(draw(st.integers(1, 4))):
        i = draw(st.integers(0, len(content)))
        kind = draw(st.sampled_from(["replace", "insert", "cut"]))
        if kind == "cut":
            del content[i:]
        else:
            chunk = draw(st.one_of(st.binary(min_size=1, max_size=8), st.sampled_from(
                [b"-", b"9" * 30, b"(", b"'<f8'", b"'>i2'", b"'|O'", b"True", b"[('a', '<f4')]", b"(0,)"])))
            content[i:i + (len(chunk) if kind == "replace" else 0)] = chunk
    return bytes(content)


@fuzz_settings(80)
@given(content=npy_contents(), data_type=st.sampled_from([None, "FLOAT32", "UINT8"]))
def test_fuzz_npy_sources(content, data_type, capsys):
    with tempfile.TemporaryDirectory() as work:
        (Path(work) / "x.npy").write_bytes(content)
        resource = {"initialValues": {"sourcePath": "x.npy"}}
        if data_type:
            resource["initialValuesDataType"] = data_type
        model = Path(work) / "model.json"
        model.write_text(json.dumps({"resources": {"r": resource}, "dispatchables": {},
                                     "commands": [{"type": "print", "resource": "r"}]}))
        run_checked(["run", model], capsys)


def picture_bytes(fmt: str) -> bytes:
    from PIL import Image
    f = io.BytesIO()
    Image.fromarray(np.arange(4 * 6 * 3, dtype=np.uint8).reshape(4, 6, 3)).save(f, format=fmt)
    return f.getvalue()


@st.composite
def picture_contents(draw):
    """A small PNG or JPEG with some of its bytes replaced, inserted or cut."""
    content = bytearray(picture_bytes(draw(st.sampled_from(["PNG", "JPEG"]))))
    for _ in range(draw(st.integers(1, 3))):
        i = draw(st.integers(0, len(content)))
        kind = draw(st.sampled_from(["replace", "insert", "cut"]))
        if kind == "cut":
            del content[i:]
        else:
            chunk = draw(st.binary(min_size=1, max_size=8))
            content[i:i + (len(chunk) if kind == "replace" else 0)] = chunk
    return bytes(content)


@fuzz_settings(60)
@given(content=picture_contents(), suffix=st.sampled_from([".png", ".jpg"]),
       size=st.lists(st.integers(0, 9), min_size=3, max_size=5), data_type=st.sampled_from(["FLOAT32", "FLOAT16", "UINT8"]))
def test_fuzz_image_sources(content, suffix, size, data_type, capsys):
    with tempfile.TemporaryDirectory() as work:
        (Path(work) / f"x{suffix}").write_bytes(content)
        resource = {"initialValuesDataType": data_type, "initialValues": {"sourcePath": f"x{suffix}"},
                    "resampleSize": size}
        model = Path(work) / "model.json"
        model.write_text(json.dumps({"resources": {"r": resource}, "dispatchables": {}, "commands": [
            {"type": "print", "resource": "r"},
            {"type": "writeFile", "resource": "r", "targetPath": f"y{suffix}", "dimensions": size[:4]}]}))
        run_checked(["run", model], capsys)


def test_files_that_are_not_models(tmp_path, capsys):
    os.mkfifo(tmp_path / "fifo.json")
    for path, fragment in [(tmp_path, "file: is a directory"), (tmp_path / "missing.json", "file: cannot be read"),
                           (tmp_path / "fifo.json", "file: is a FIFO"), ("/dev/zero", "file: is a character device")]:
        status, _, err = run_checked(["run", path], capsys)
        assert status == 1 and fragment in err, err


# ------------------------------------------------------------------------------- subprocesses
def run_process(args, **env):
    environment = {**os.environ, **env,
                   "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")}
    code = "import sys; from dmljax._src.cli import main; sys.exit(main())"
    return subprocess.run([sys.executable, "-c", code, *map(str, args)], capture_output=True, env=environment,
                          timeout=120)


def test_binary_file_in_a_process(tmp_path):
    model = tmp_path / "model.json"
    model.write_bytes(bytes(range(256)) * 4)
    p = run_process(["run", model])
    err = p.stderr.decode()
    assert p.returncode == 1 and p.stdout == b"", err
    assert err == f"dmljax run: error: {model}: file: is not UTF-8 text (byte 0x80 at offset 128); " \
                  "it looks like a binary file\n"


@pytest.mark.slow  # among the fast tier's heaviest (2-5 s); the slow tier keeps it
def test_non_ascii_names_on_an_ascii_console(tmp_path):
    model = tmp_path / "mod\u00e8le.json"
    model.write_text(json.dumps({
        "resources": {"entr\u00e9e \u2603": {"initialValuesDataType": "FLOAT32", "initialValues": [1, 2]}},
        "dispatchables": {}, "commands": [{"type": "print", "resource": "entr\u00e9e \u2603"},
                                          {"type": "print", "resource": "\u00e4"}]}), encoding="utf-8")
    p = run_process(["run", model], PYTHONIOENCODING="ascii")
    assert p.returncode == 1 and p.stdout == b""
    assert p.stderr.decode("ascii") == (f"dmljax run: error: {str(model).encode('ascii', 'backslashreplace').decode()}"
                                        ": command 1 (print): names resource '\\xe4', which the model does not define\n")
    model.write_text(model.read_text(encoding="utf-8").replace('"\\u00e4"', '"entr\\u00e9e \\u2603"'), encoding="utf-8")
    p = run_process(["run", model], PYTHONIOENCODING="ascii")
    assert p.returncode == 0, p.stderr
    assert p.stdout.decode("ascii").splitlines()[1:] == ["Resource 'entr\\xe9e \\u2603': 1, 2"] * 2
