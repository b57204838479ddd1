"""DML_GRAPH_DESC dispatchables: a graph of operator dispatchables, its edges and bind points
(``in_i``, ``out_i``), run by ``dmljax run``; the graph's checks and their messages."""

import copy
import json
import shutil
from pathlib import Path

import numpy as np
import pytest

from dmljax._src.cli import main
from dmljax._src.errors import ValidationError
from dmljax._src.graph import DmlGraph, GraphNode, InputEdge, IntermediateEdge, OutputEdge
from tests import tiers

HERE = Path(__file__).resolve().parent
AFFINE = HERE / "models" / "graph_affine_relu.json"
QUADRATIC = tiers.SHARED / "dxdispatch" / "models" / "other_refs" / "dml_graph_quadratic.json"


def _run(path, capsys, *extra):
    status = main(["run", str(path), "--no-timing", *extra])
    out, err = capsys.readouterr()
    return status, out, err


def _printed(out: str) -> dict:
    return {line.split("'")[1]: [float(v) for v in line.split(": ", 1)[1].split(", ")]
            for line in out.splitlines() if line.startswith("Resource '")}


def test_graph_model_runs_its_nodes_through_strided_edges(capsys):
    """x * w (w broadcast by a zero stride, bound once at initialization), RELU, then a REDUCE that
    reads RELU's output transposed through its own strides: two graph outputs."""
    model = json.loads(AFFINE.read_text())
    x = np.array(model["resources"]["x"]["initialValues"], np.float32).reshape(2, 3)
    w = np.array(model["resources"]["w"]["initialValues"], np.float32)
    relu = np.maximum(x * w, 0)
    status, out, err = _run(AFFINE, capsys)
    assert status == 0, err
    got = _printed(out)
    np.testing.assert_array_equal(got["y"], relu.ravel())
    np.testing.assert_array_equal(got["z"], relu.sum(axis=1))
    assert err == ""


@tiers.needs_shared
def test_dxdispatch_quadratic_graph_sample(capsys, tmp_path):
    """DxDispatch's graph sample: y = x * (2x + 10) + c; its edges feed two inputs twice (a branch
    in progress), which dmljax mends with a note on each."""
    shutil.copy(QUADRATIC, tmp_path / "q.json")
    status, out, err = _run(tmp_path / "q.json", capsys)
    assert status == 0, err
    x, c = np.array([4, -2, 3, -5.0]), np.array([1, 2, 3, 4.0])
    assert _printed(out)["y"] == list(x * (2 * x + 10) + c)
    assert err.count("dmljax run: note:") == 2
    assert "IntermediateEdges[0] (ax+b) feeds input 0 (ATensor) of node 1 (node_1)" in err
    assert "taken as feeding input 0 (DirectML would refuse the graph as written)" in err


def _broken(tmp_path, change) -> Path:
    model = json.loads(AFFINE.read_text())
    change(model["dispatchables"]["graph"]["desc"], model)
    path = tmp_path / "broken.json"
    path.write_text(json.dumps(model))
    return path


@pytest.mark.parametrize("change, message", [
    (lambda d, m: d["IntermediateEdges"].pop(0),
     "Nodes[1] (relu) input 0 (InputTensor) has no edge"),
    (lambda d, m: d["IntermediateEdges"].append(
        {"FromNodeIndex": 2, "FromNodeOutputIndex": 0, "ToNodeIndex": 0, "ToNodeInputIndex": 0}),
     "feeds input 0 (ATensor) of node 0 (scale), which another edge feeds already"),
    (lambda d, m: d["InputEdges"][0].update(ToNodeInputIndex=2),
     "ToNodeInputIndex is 2"),
    (lambda d, m: d["OutputEdges"][1].update(FromNodeIndex=7),
     "FromNodeIndex is 7"),
    (lambda d, m: d["Nodes"][2].update(Name="missing"),
     "names dispatchable 'missing', which the model does not define as a DirectML operator"),
    (lambda d, m: d.update(InputCount=3),
     "feed graph input 2 to no node"),
    (lambda d, m: d["Nodes"][0].update(Type="DML_GRAPH_NODE_TYPE_INPUT"),
     "Nodes[0].Type"),
    (lambda d, m: m["dispatchables"]["scale"]["desc"]["OutputTensor"].update(Sizes=[3, 2]),
     "dispatchable 'scale' (DML_OPERATOR_ELEMENT_WISE_MULTIPLY):"),
], ids=["unfed", "fed-twice", "input-index", "node-index", "unknown-node", "unused-input", "node-type",
        "bad-node-desc"])
def test_a_malformed_graph_is_one_clear_error(tmp_path, capsys, change, message):
    path = _broken(tmp_path, change)
    status, out, err = _run(path, capsys)
    assert status == 1
    assert err.startswith(f"dmljax run: error: {path}:"), err
    assert message in err, err
    assert "Traceback" not in err


def test_a_cycle_is_refused():
    node = GraphNode("a", "DML_OPERATOR_ELEMENT_WISE_ADD", {
        "ATensor": {"DataType": "FLOAT32", "Sizes": [2]}, "BTensor": {"DataType": "FLOAT32", "Sizes": [2]},
        "OutputTensor": {"DataType": "FLOAT32", "Sizes": [2]}})
    b = dataclass_copy(node, "b")
    graph = DmlGraph([node, b], [InputEdge(0, 0, 0), InputEdge(0, 1, 0)],
                     [OutputEdge(1, 0, 0)], [IntermediateEdge(0, 0, 1, 1), IntermediateEdge(1, 0, 0, 1)], 1, 1)
    with pytest.raises(ValidationError, match="make a cycle through a, b"):
        graph.compile()
    acyclic = DmlGraph([node, b], [InputEdge(0, 0, 0), InputEdge(0, 0, 1), InputEdge(0, 1, 0)],
                       [OutputEdge(1, 0, 0)], [IntermediateEdge(0, 0, 1, 1)], 1, 1)
    (y,) = acyclic.compile().run(np.array([1.5, -2], np.float32))
    np.testing.assert_array_equal(y, [4.5, -6])


def dataclass_copy(node, name):
    return GraphNode(name, node.type, copy.deepcopy(dict(node.desc)))
