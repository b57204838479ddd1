"""ResNet-50 and a BERT-base-shaped encoder, imported from ONNX by dmljax, against PyTorch eager and
``torch.compile`` on the same GPU, in one process.

    python3 benchmarks/onnx/gpu_models.py [--batch 32] [--repeats 20] [--out DIR] [--small]

Each model is built in PyTorch with random weights (a fixed seed; torchvision's ResNet-50,
transformers' BertModel with BertConfig's base sizes: 12 layers, width 768, 12 heads, sequence
128; where torchvision or transformers is not installed, the same shapes written here in plain
PyTorch, and the results say which), exported to ONNX (opset 17, TorchScript exporter) and converted to FLOAT16 by ONNX Runtime's
``float16`` tool (inputs and outputs FLOAT16 too, token ids INT64). dmljax runs the FLOAT16 ONNX
file through ``dmljax.onnx.load`` as one jitted program; PyTorch runs the same module in FLOAT16
(``.half()``), eager and under ``torch.compile`` (default mode), in ``torch.inference_mode``.
ResNet-50 runs in NCHW in every program, and PyTorch also in channels_last (cuDNN's fast layout).

Timing: after warm-up calls, ``--repeats`` rounds; in each round every program is called once, the
order rotating, each call timed with the host clock until its result is on the device
(``block_until_ready``, ``torch.cuda.synchronize``). Reported: the median milliseconds of each,
images or sequences a second, and the ratio dmljax / each PyTorch program; the first call's seconds
(trace and compile); the largest absolute difference of dmljax's outputs from PyTorch eager's, and
for ResNet-50 the share of rows whose top-1 class agrees. ``--small`` shrinks both models (a smoke
run on any machine). Writes ``gpu_models.md`` and ``gpu_models.json`` to ``--out`` (default
``benchmarks/results/<device>/onnx/``).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import statistics
import sys
import tempfile
import time
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parents[2])]

import jax  # noqa: E402
import numpy as np  # noqa: E402

import common  # noqa: E402
import dmljax  # noqa: E402
import dmljax.onnx as dx  # noqa: E402


def _own_resnet50(torch, small: bool):
    """ResNet-50 (torchvision's v1.5: the stride on the 3x3 convolution), for a machine without
    torchvision; ``small``: one block a stage."""
    nn = torch.nn

    class Bottleneck(nn.Module):
        def __init__(self, cin, width, stride):
            super().__init__()
            cout = width * 4
            self.body = nn.Sequential(
                nn.Conv2d(cin, width, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU(),
                nn.Conv2d(width, width, 3, stride, 1, bias=False), nn.BatchNorm2d(width), nn.ReLU(),
                nn.Conv2d(width, cout, 1, bias=False), nn.BatchNorm2d(cout))
            self.skip = (nn.Sequential(nn.Conv2d(cin, cout, 1, stride, bias=False), nn.BatchNorm2d(cout))
                         if stride != 1 or cin != cout else nn.Identity())

        def forward(self, x):
            return torch.relu(self.body(x) + self.skip(x))

    layers = [nn.Conv2d(3, 64, 7, 2, 3, bias=False), nn.BatchNorm2d(64), nn.ReLU(), nn.MaxPool2d(3, 2, 1)]
    cin = 64
    for width, blocks, stride in ((64, 3, 1), (128, 4, 2), (256, 6, 2), (512, 3, 2)):
        for i in range(1 if small else blocks):
            layers.append(Bottleneck(cin, width, stride if i == 0 else 1))
            cin = width * 4
    layers += [nn.AdaptiveAvgPool2d(1), nn.Flatten(), nn.Linear(cin, 1000)]
    return nn.Sequential(*layers)


def _resnet(torch, small: bool):
    try:
        import torchvision  # noqa: PLC0415
        model = (torchvision.models.resnet18 if small else torchvision.models.resnet50)(weights=None)
    except ImportError:
        model = _own_resnet50(torch, small)
    with torch.no_grad():  # batch statistics away from the initial 0 and 1, as a trained model has
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.uniform_(-0.1, 0.1)
                m.running_var.uniform_(0.5, 1.5)
    return model


def _own_bert(torch, small: bool):
    """A BERT-base-shaped encoder (BertConfig's sizes: word, position and type embeddings, 12
    post-norm layers of width 768, 12 heads, GELU feed-forward of 3072), for a machine without
    transformers."""
    nn = torch.nn
    vocab, width, layers, heads, ff = (512, 64, 2, 4, 128) if small else (30522, 768, 12, 12, 3072)

    class Layer(nn.Module):
        def __init__(self):
            super().__init__()
            self.qkv, self.out = nn.Linear(width, 3 * width), nn.Linear(width, width)
            self.norm1, self.norm2 = nn.LayerNorm(width, eps=1e-12), nn.LayerNorm(width, eps=1e-12)
            self.ff = nn.Sequential(nn.Linear(width, ff), nn.GELU(), nn.Linear(ff, width))

        def forward(self, x, bias):
            b, t, _ = x.shape
            q, k, v = self.qkv(x).view(b, t, 3, heads, width // heads).permute(2, 0, 3, 1, 4)
            scores = q @ k.transpose(-1, -2) / (width // heads) ** 0.5 + bias
            mixed = (scores.softmax(-1) @ v).transpose(1, 2).reshape(b, t, width)
            x = self.norm1(x + self.out(mixed))
            return self.norm2(x + self.ff(x))

    class Encoder(nn.Module):
        def __init__(self):
            super().__init__()
            self.words, self.positions = nn.Embedding(vocab, width), nn.Embedding(512, width)
            self.types, self.norm = nn.Embedding(2, width), nn.LayerNorm(width, eps=1e-12)
            self.layers = nn.ModuleList(Layer() for _ in range(layers))

        def forward(self, input_ids, attention_mask):
            t = input_ids.shape[1]
            x = self.words(input_ids) + self.positions.weight[:t] + self.types.weight[0]
            x = self.norm(x)
            bias = (1.0 - attention_mask[:, None, None, :].to(x.dtype)) * torch.finfo(x.dtype).min
            for layer in self.layers:
                x = layer(x, bias)
            return x

    return Encoder(), vocab


def _bert(torch, small: bool):
    try:
        import transformers  # noqa: PLC0415
    except ImportError:
        return _own_bert(torch, small)
    config = (transformers.BertConfig(vocab_size=512, hidden_size=64, num_hidden_layers=2, num_attention_heads=4,
                                      intermediate_size=128) if small else transformers.BertConfig())
    bert = transformers.BertModel(config, add_pooling_layer=False)

    class Encoder(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.bert = bert

        def forward(self, input_ids, attention_mask):
            return self.bert(input_ids=input_ids, attention_mask=attention_mask).last_hidden_state

    return Encoder(), config.vocab_size


def _inputs(name: str, batch: int, small: bool, vocab: int = 0) -> dict:
    rng = np.random.default_rng(1)
    if name == "resnet50":
        side = 64 if small else 224
        return {"image": rng.standard_normal((batch, 3, side, side)).astype(np.float16)}
    seq = 16 if small else 128
    mask = np.ones((batch, seq), np.int64)
    mask[:, seq - seq // 8:] = 0  # the last eighth of every sequence is padding
    return {"input_ids": rng.integers(1, vocab, (batch, seq)).astype(np.int64), "attention_mask": mask}


def _export(torch, module, inputs: dict, path: Path) -> Path:
    from onnxruntime.transformers import float16  # noqa: PLC0415
    import onnx  # noqa: PLC0415
    example = tuple(torch.from_numpy(v.astype(np.float32) if v.dtype == np.float16 else v) for v in inputs.values())
    plain = path.with_suffix(".fp32.onnx")
    with torch.no_grad():
        torch.onnx.export(module, example, str(plain), input_names=list(inputs), output_names=["out"],
                          opset_version=17, dynamo=False)
    half = float16.convert_float_to_float16(onnx.load(str(plain)), keep_io_types=False)
    onnx.save(half, str(path))
    return path


def _time(fn, sync) -> float:
    t = time.perf_counter()
    sync(fn())
    return (time.perf_counter() - t) * 1e3


def measure(name: str, batch: int, repeats: int, small: bool, workdir: Path) -> dict:
    import torch  # noqa: PLC0415
    torch.manual_seed(0)
    if name == "resnet50":
        module, vocab = _resnet(torch, small), 0
    else:
        module, vocab = _bert(torch, small)
    module.eval()
    inputs = _inputs(name, batch, small, vocab)
    path = _export(torch, module, inputs, workdir / f"{name}.onnx")
    import importlib.util  # noqa: PLC0415
    built = ("torchvision" if name == "resnet50" else "transformers")
    built = built if importlib.util.find_spec(built) else "plain PyTorch (benchmarks/onnx/gpu_models.py)"
    row: dict = {"model": name + (" (small)" if small else ""), "batch": batch, "built_with": built,
                 "onnx_nodes": None, "onnx_mb": round(path.stat().st_size / 2**20, 1)}

    t = time.perf_counter()
    model = dx.load(str(path))
    row["load_s"] = round(time.perf_counter() - t, 2)
    row["onnx_nodes"] = len(model.nodes)
    args = [jax.device_put(v) for v in inputs.values()]
    t = time.perf_counter()
    got = np.asarray(jax.block_until_ready(model(*args)[0]), np.float32)
    row["dmljax_first_call_s"] = round(time.perf_counter() - t, 2)

    dev = "cuda" if torch.cuda.is_available() else "cpu"
    half = module.half().to(dev) if dev == "cuda" else module  # PyTorch's CPU has few FLOAT16 kernels
    targs = [torch.from_numpy(v).to(dev) for v in inputs.values()]
    if dev == "cpu":
        targs = [a.float() if a.dtype == torch.float16 else a for a in targs]
    sync_t = (lambda _: torch.cuda.synchronize()) if dev == "cuda" else (lambda _: None)

    programs = {"dmljax": (lambda: model(*args), lambda out: jax.block_until_ready(out))}
    with torch.inference_mode():
        want = half(*targs).float().cpu().numpy()
        programs["torch eager"] = (lambda: half(*targs), sync_t)
        if name == "resnet50":
            cl = [a.contiguous(memory_format=torch.channels_last) for a in targs]
            import copy  # noqa: PLC0415
            half_cl = copy.deepcopy(half).to(memory_format=torch.channels_last)
            programs["torch eager channels_last"] = (lambda: half_cl(*cl), sync_t)
            compiled = torch.compile(half_cl)
            t = time.perf_counter()
            sync_t(compiled(*cl))
            row["torch_compile_first_call_s"] = round(time.perf_counter() - t, 2)
            programs["torch.compile channels_last"] = (lambda: compiled(*cl), sync_t)
        else:
            compiled = torch.compile(half)
            t = time.perf_counter()
            sync_t(compiled(*targs))
            row["torch_compile_first_call_s"] = round(time.perf_counter() - t, 2)
            programs["torch.compile"] = (lambda: compiled(*targs), sync_t)

        for fn, sync in programs.values():  # warm-up
            for _ in range(3):
                sync(fn())
        times: dict[str, list[float]] = {k: [] for k in programs}
        keys = list(programs)
        for r in range(repeats):
            for k in keys[r % len(keys):] + keys[:r % len(keys)]:
                times[k].append(_time(*programs[k]))

    diff = np.abs(got - want)
    row["max_abs_vs_torch_eager"] = float(np.nanmax(diff))
    row["largest_output"] = float(np.nanmax(np.abs(want)))
    if name == "resnet50":
        row["top1_agreement"] = float(np.mean(got.argmax(-1) == want.argmax(-1)))
    row["ms"] = {k: round(statistics.median(v), 3) for k, v in times.items()}
    row["per_second"] = {k: round(batch / (v / 1e3), 1) for k, v in row["ms"].items()}
    row["dmljax_over"] = {k: round(row["ms"]["dmljax"] / v, 3) for k, v in row["ms"].items() if k != "dmljax"}
    return row


def _markdown(rows: list[dict], env: dict) -> str:
    lines = ["# ONNX models on the GPU: dmljax's import against PyTorch", "",
             f"Device: {env['device']}; jax {env['jax']}, torch {env['torch']}, onnx {env['onnx']}, "
             f"onnxruntime {env['onnxruntime']}, dmljax {env['dmljax']}; {env['when']}"
             + (f"; commit {env['commit']}" if env.get("commit") else "")
             + (f"; {env['rounds']} rounds" if env.get("rounds") else "")
             + (f"; XLA_FLAGS {env['xla_flags']!r}" if env.get("xla_flags") else "") + ".", "",
             "Method: benchmarks/onnx/gpu_models.py (its docstring): FLOAT16 models with random weights, host-timed "
             "medians of interleaved calls that block until the result is ready.", ""]
    for row in rows:
        lines += [f"## {row['model']}, batch {row['batch']}", "",
                  f"Built with {row['built_with']}; {row['onnx_nodes']} ONNX nodes ({row['onnx_mb']} MB); dmljax load {row['load_s']} s, first call "
                  f"{row['dmljax_first_call_s']} s; torch.compile first call {row.get('torch_compile_first_call_s')} s; "
                  f"largest |dmljax - torch eager| {row['max_abs_vs_torch_eager']:.3g} (largest output "
                  f"{row['largest_output']:.3g})" + (f"; top-1 agreement {row['top1_agreement']:.3f}"
                                                     if 'top1_agreement' in row else "") + ".", "",
                  "| program | ms | per second | dmljax / program |", "|---|---|---|---|"]
        for k, ms in row["ms"].items():
            ratio = "" if k == "dmljax" else f"{row['dmljax_over'][k]:.3f}"
            lines.append(f"| {k} | {ms:.3f} | {row['per_second'][k]:.1f} | {ratio} |")
        lines.append("")
    return "\n".join(lines)


def _short_commit(env: dict) -> str:
    """common.environment's commit, short, "+" where the tree had uncommitted changes."""
    return env["commit"][:7] + ("+" if env["commit"] and env["uncommitted changes"] else "")


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--batch", type=int, default=32)
    p.add_argument("--repeats", type=int, default=20)
    p.add_argument("--out", default=None)
    p.add_argument("--small", action="store_true")
    p.add_argument("--models", nargs="*", default=["resnet50", "bert_base"])
    a = p.parse_args(argv)
    import onnx  # noqa: PLC0415
    import onnxruntime  # noqa: PLC0415
    import torch  # noqa: PLC0415
    device = jax.devices()[0]
    env = {"device": f"{device.platform} {getattr(device, 'device_kind', '')}".strip(), "jax": jax.__version__,
           "torch": torch.__version__, "onnx": onnx.__version__, "onnxruntime": onnxruntime.__version__,
           "dmljax": dmljax.__version__, "python": platform.python_version(),
           "when": time.strftime("%Y-%m-%d", time.gmtime()), "commit": _short_commit(common.environment()), "rounds": a.repeats,
           "xla_flags": os.environ.get("XLA_FLAGS", "")}
    rows = []
    with tempfile.TemporaryDirectory() as tmp:
        for name in a.models:
            row = measure(name, a.batch, a.repeats, a.small, Path(tmp))
            print(json.dumps(row), flush=True)
            rows.append(row)
    kind = "h200" if "H200" in env["device"] else device.platform
    out = Path(a.out or Path(__file__).resolve().parents[1] / "results" / kind / "onnx")
    out.mkdir(parents=True, exist_ok=True)
    (out / "gpu_models.json").write_text(json.dumps({"env": env, "rows": rows}, indent=1) + "\n")
    (out / "gpu_models.md").write_text(_markdown(rows, env))
    print(_markdown(rows, env))
    return 0


if __name__ == "__main__":
    sys.exit(main())
