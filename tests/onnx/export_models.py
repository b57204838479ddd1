"""Exports the models that the model comparison (tests/onnx/zoo.py) and the ONNX benchmark run:
torchvision's ResNet-18 and MobileNetV3-Small, a BERT-style encoder from transformers and a
PyTorch LSTM, all with random weights (a fixed seed), each in its plain form and ONNX Runtime's
quantized forms: static in the QOperator format, static in the QDQ format (both calibrated on
random inputs) and dynamic.

    python3 tests/onnx/export_models.py OUT_DIR [NAME ...]

needs torch, torchvision, transformers and onnxruntime (not in the test extra). The two small
models, ``lstm`` and ``bert_tiny``, are committed with their quantized forms under
tests/onnx/models/ (made by ``python3 tests/onnx/export_models.py tests/onnx/models lstm
bert_tiny``), so that the test suite runs real exported graphs where torch is not installed; the
larger ones are made into the test cache when torch is there.
"""

from __future__ import annotations

import os
import sys
from pathlib import Path

import numpy as np

SEED = 0
FORMATS = ("plain", "qoperator", "qdq", "dynamic")
"""The forms of each exported model: its float graph and ONNX Runtime's three quantizations."""
OPTIMIZED = {"bert_tiny": "bert"}
"""Models also written as ONNX Runtime's transformer optimizer leaves them (``NAME.optimized.onnx``,
its fused com.microsoft operators), by its model type."""


def forms(name: str) -> tuple[str, ...]:
    return FORMATS + (("optimized",) if name in OPTIMIZED else ())


def _inputs_resnet(rng):
    return {"image": rng.standard_normal((1, 3, 224, 224)).astype(np.float32)}


def _inputs_bert(rng, vocab=256, seq=16):
    ids = rng.integers(1, vocab, (1, seq)).astype(np.int64)
    mask = np.ones((1, seq), np.int64)
    mask[0, seq - 3:] = 0
    return {"input_ids": ids, "attention_mask": mask, "token_type_ids": np.zeros((1, seq), np.int64)}


def _inputs_lstm(rng):
    return {"sequence": rng.standard_normal((24, 2, 32)).astype(np.float32)}


MODELS = {
    "resnet18": (_inputs_resnet, True),
    "mobilenet_v3_small": (_inputs_resnet, True),
    "bert_tiny": (_inputs_bert, False),
    "lstm": (_inputs_lstm, True),
}
"""name -> (a function of a NumPy Generator giving the graph's inputs, whether it is a classifier)."""


def sample_inputs(name: str, seed: int = 1) -> dict:
    """The inputs the comparison feeds to model ``name`` (by graph input name)."""
    return MODELS[name][0](np.random.default_rng(seed))


def _module(name: str):
    import torch  # noqa: PLC0415  (the export needs torch; nothing else here does)

    torch.manual_seed(SEED)
    if name in ("resnet18", "mobilenet_v3_small"):
        import torchvision  # noqa: PLC0415
        model = getattr(torchvision.models, name)(weights=None)
        _batch_statistics(torch, model)
        return model, ["image"], ["logits"], {}
    if name == "bert_tiny":
        import transformers  # noqa: PLC0415
        config = transformers.BertConfig(vocab_size=256, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                         intermediate_size=128, max_position_embeddings=64)
        model = transformers.BertModel(config, add_pooling_layer=False)
        dims = {"input_ids": {1: "sequence"}, "attention_mask": {1: "sequence"}, "token_type_ids": {1: "sequence"}}

        class Encoder(torch.nn.Module):
            def __init__(self):
                super().__init__()
                self.bert = model

            def forward(self, input_ids, attention_mask, token_type_ids):
                out = self.bert(input_ids=input_ids, attention_mask=attention_mask, token_type_ids=token_type_ids)
                return out.last_hidden_state

        return Encoder(), ["input_ids", "attention_mask", "token_type_ids"], ["hidden"], dims

    class Tagger(torch.nn.Module):  # a two-layer LSTM and a linear head: 5 classes per step
        def __init__(self):
            super().__init__()
            self.lstm = torch.nn.LSTM(32, 48, num_layers=2)
            self.head = torch.nn.Linear(48, 5)

        def forward(self, sequence):
            y, _ = self.lstm(sequence)
            return self.head(y)

    return Tagger(), ["sequence"], ["logits"], {}


def _batch_statistics(torch, model) -> None:
    """Batch normalization's running statistics from a few random batches (a freshly initialised
    network's are 0 and 1, which leave a random MobileNet's logits near 1e-9)."""
    for m in model.modules():
        if isinstance(m, torch.nn.BatchNorm2d):
            m.momentum = None  # a cumulative average
    model.train()
    with torch.no_grad():
        for i in range(3):
            model(torch.from_numpy(sample_inputs("resnet18", seed=200 + i)["image"]))
    model.eval()


class _Calibration:
    """ONNX Runtime's CalibrationDataReader protocol over a few random input sets."""

    def __init__(self, name: str, count: int = 8):
        self._feeds = iter([sample_inputs(name, seed=100 + i) for i in range(count)])

    def get_next(self):
        return next(self._feeds, None)


def export(name: str, out_dir: str | os.PathLike) -> dict[str, Path]:
    """Exports model ``name`` and its quantized forms into ``out_dir``: form -> path."""
    import torch  # noqa: PLC0415
    from onnxruntime import quantization as q  # noqa: PLC0415

    out = Path(out_dir)
    out.mkdir(parents=True, exist_ok=True)
    module, in_names, out_names, dims = _module(name)
    module.eval()
    example = tuple(torch.from_numpy(v) for v in sample_inputs(name).values())
    paths = {form: out / f"{name}.{form}.onnx" for form in FORMATS}
    with torch.no_grad():
        torch.onnx.export(module, example, str(paths["plain"]), input_names=in_names, output_names=out_names,
                          dynamic_axes=dims or None, opset_version=17, dynamo=False)
    prepared = out / f"{name}.prepared.onnx"
    q.quant_pre_process(str(paths["plain"]), str(prepared), skip_symbolic_shape=True)
    if name in OPTIMIZED:
        from onnxruntime.transformers import optimizer  # noqa: PLC0415
        paths["optimized"] = out / f"{name}.optimized.onnx"
        opt = optimizer.optimize_model(str(paths["plain"]), model_type=OPTIMIZED[name], opt_level=0)
        opt.save_model_to_file(str(paths["optimized"]))
    try:
        for form, fmt in (("qoperator", q.QuantFormat.QOperator), ("qdq", q.QuantFormat.QDQ)):
            q.quantize_static(str(prepared), str(paths[form]), _Calibration(name), quant_format=fmt,
                              activation_type=q.QuantType.QUInt8, weight_type=q.QuantType.QInt8)
        q.quantize_dynamic(str(prepared), str(paths["dynamic"]), weight_type=q.QuantType.QInt8)
    finally:
        prepared.unlink(missing_ok=True)
    return paths


def main(argv: list[str]) -> int:
    if not argv or argv[0].startswith("-"):
        print(__doc__)
        return 2
    names = argv[1:] or list(MODELS)
    unknown = [n for n in names if n not in MODELS]
    if unknown:
        print(f"error: unknown model(s) {', '.join(unknown)}; known: {', '.join(MODELS)}", file=sys.stderr)
        return 2
    for n in names:
        for form, path in export(n, argv[0]).items():
            print(f"{n} {form}: {path} ({path.stat().st_size} bytes)")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
