"""Fine-tuning an imported ONNX model with jax.grad: a two-layer LSTM tagger exported from PyTorch
(random weights, 32 features in, 48 hidden, 5 tags a step; tests/onnx/export_models.py made it,
and it is committed as tests/onnx/models/lstm.plain.onnx), loaded by ``dmljax.onnx.load`` and
trained on a generated task with its ONNX weights as the parameters.

Task (generated): sequences of 24 steps of 32 numbers from a normal distribution; a step's tag
is which of its first five numbers is the largest. The loss is the mean cross-entropy of the
model's logits over every step. Plain gradient descent with momentum on ``model.params``, the
gradient taken through ``model.apply`` (the whole graph one jitted program: its LSTM, MatMul and
Add nodes as DirectML's LSTM, GEMM and ELEMENT_WISE_ADD, with their derivative rules). Printed:
the loss and the share of tags right before and after; where ONNX Runtime is installed, also its
logits for the fine-tuned weights written back into the ONNX file, against dmljax's.

(needs the onnx package: pip install ".[onnx]")

Run: python examples/finetune_onnx.py [--steps N] [--model PATH]
"""

import argparse
import sys
from pathlib import Path

try:
    import onnx
    from onnx import numpy_helper
except ImportError:
    sys.exit('examples/finetune_onnx.py needs onnx, of the onnx extra: pip install ".[onnx]"')

import jax
import jax.numpy as jnp
import numpy as np

import dmljax.onnx as dx

MODEL = Path(__file__).resolve().parents[1] / "tests" / "onnx" / "models" / "lstm.plain.onnx"
STEPS, BATCH, FEATURES, TAGS = 24, 2, 32, 5


def data(rng):
    """A batch of sequences {STEPS, BATCH, FEATURES} and its tags {STEPS, BATCH}."""
    x = rng.standard_normal((STEPS, BATCH, FEATURES)).astype(np.float32)
    return x, np.argmax(x[..., :TAGS], axis=-1)


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--steps", type=int, default=300, help="training steps (default 300)")
    ap.add_argument("--model", type=Path, default=MODEL, help="the ONNX tagger (default: the committed export)")
    args = ap.parse_args(argv)
    model = dx.load(args.model)
    rng = np.random.default_rng(0)
    test = [data(rng) for _ in range(16)]

    def loss(params, x, tags):
        (logits,) = model.apply(params, x)
        picked = jnp.take_along_axis(jax.nn.log_softmax(logits), tags[..., None], axis=-1)
        return -jnp.mean(picked)

    @jax.jit
    def step(params, velocity, x, tags):
        value, grads = jax.value_and_grad(loss)(params, x, tags)
        velocity = jax.tree_util.tree_map(lambda v, g: 0.9 * v + g, velocity, grads)
        return jax.tree_util.tree_map(lambda p, v: p - 0.2 * v, params, velocity), velocity, value

    evaluate = jax.jit(lambda params, x: model.apply(params, x)[0])

    def scores(params):
        losses = [float(loss(params, x, t)) for x, t in test]
        right = [np.mean(np.argmax(np.asarray(evaluate(params, x)), -1) == t) for x, t in test]
        return float(np.mean(losses)), float(np.mean(right))

    params = model.params
    before = scores(params)
    print(f"imported {args.model.name}: {len(jax.tree_util.tree_leaves(params))} parameter arrays, "
          f"{sum(p.size for p in jax.tree_util.tree_leaves(params))} values")
    print(f"before: loss {before[0]:.3f}, tags right {before[1]:.1%} (chance {1 / TAGS:.0%})")
    velocity = jax.tree_util.tree_map(jnp.zeros_like, params)
    for i in range(args.steps):
        params, velocity, value = step(params, velocity, *data(rng))
        if (i + 1) % max(1, args.steps // 5) == 0:
            print(f"step {i + 1:4d}: loss {float(value):.3f}")
    after = scores(params)
    print(f"after:  loss {after[0]:.3f}, tags right {after[1]:.1%}")
    _against_onnx_runtime(args.model, model, params, test[0][0])
    return before, after


def _against_onnx_runtime(path, model, params, x):
    """The fine-tuned weights written into the ONNX graph's initializers, run by ONNX Runtime."""
    try:
        import onnxruntime as ort
    except ImportError:
        print("ONNX Runtime is not installed: the fine-tuned model is not run by it")
        return
    proto = onnx.load(str(path))
    tuned = {name: np.asarray(value) for name, value in params.items()}
    for t in proto.graph.initializer:
        if t.name in tuned:
            t.CopyFrom(numpy_helper.from_array(tuned[t.name].astype(numpy_helper.to_array(t).dtype), t.name))
    session = ort.InferenceSession(proto.SerializeToString(), providers=["CPUExecutionProvider"])
    theirs = session.run(None, {session.get_inputs()[0].name: x})[0]
    ours = np.asarray(model.apply(params, x)[0])
    print(f"ONNX Runtime on the fine-tuned file: largest difference {np.max(np.abs(ours - theirs)):.2e} "
          f"(logits up to {np.max(np.abs(theirs)):.1f})")


if __name__ == "__main__":
    main()
