"""The optional comparators: PyTorch (eager and ``torch.compile``) and ONNX Runtime.

Neither is required: where one does not import (or can't run here), its columns are left out
with a note saying why.
"""

from __future__ import annotations

import numpy as np

__all__ = ["load_torch", "load_ort", "ort_session"]


def load_torch(platform_name: str):
    """``(torch module, None)``, or ``(None, note)`` where it can't be used."""
    try:
        import torch  # noqa: PLC0415
    except Exception as e:  # noqa: BLE001  (an optional package may fail to import in any way)
        return None, f"torch not importable ({type(e).__name__}: {e}): torch columns skipped."
    if platform_name == "gpu" and not torch.cuda.is_available():
        return None, "torch has no CUDA here: torch columns skipped."
    return torch, None


def load_ort(platform_name: str):
    """``(onnxruntime module, None)``, or ``(None, note)`` where it can't be used."""
    if platform_name != "cpu":
        return None, ("ONNX Runtime skipped on the GPU: host<->device copies would dominate a "
                      "one-node graph fed from numpy (no IO binding in this harness).")
    try:
        import onnx  # noqa: F401, PLC0415
        import onnxruntime  # noqa: PLC0415
    except Exception as e:  # noqa: BLE001
        return None, f"onnxruntime/onnx not importable ({type(e).__name__}): ONNX Runtime column skipped."
    return onnxruntime, None


_ONNX_TYPES = {"float32": 1, "uint8": 2, "int8": 3, "uint16": 4, "int16": 5, "int32": 6, "int64": 7,
               "bool": 9, "float16": 10, "float64": 11, "uint32": 12, "uint64": 13}


def ort_session(ort, node, arrays, threads: int):
    """An ONNX Runtime session running the one-node graph ``node`` (cases.OnnxNode) on inputs like
    ``arrays``, and the numpy feeds for those arrays."""
    from onnx import helper, numpy_helper  # noqa: PLC0415

    feeds = [np.asarray(a) for a in arrays]
    for i in node.bool_inputs:
        feeds[i] = feeds[i].astype(bool)
    data = feeds[-1].dtype  # the data type (a condition comes first)
    ins = [helper.make_tensor_value_info(f"in{i}", _ONNX_TYPES[str(a.dtype)], list(a.shape))
           for i, a in enumerate(feeds)]
    names = [f"in{i}" for i in range(len(feeds))]
    inits = []
    for j, c in enumerate(node.consts):
        inits.append(numpy_helper.from_array(np.asarray(c, np.float64).astype(data), f"c{j}"))
        names.append(f"c{j}")
    out_type = "bool" if node.bool_output else str(data)
    outs = [helper.make_tensor_value_info("out", _ONNX_TYPES[out_type], list(feeds[0].shape))]
    graph = helper.make_graph([helper.make_node(node.op_type, names, ["out"], **dict(node.attrs))],
                              "g", ins, outs, inits)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    so = ort.SessionOptions()
    so.intra_op_num_threads = threads
    so.inter_op_num_threads = 1
    so.log_severity_level = 4  # a refused node (Mod with fmod=0 on floats) is reported as a note, not logged
    sess = ort.InferenceSession(model.SerializeToString(), so, providers=["CPUExecutionProvider"])
    return sess, feeds
