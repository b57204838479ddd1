"""RNN, LSTM and GRU, the recurrent family: each page's record, with its formula below it.

The pages' equations are images that the reference pages lack; ONNX's RNN, LSTM and GRU define
the same equations in text with the same gate orders (RNN: i; LSTM: i, o, f, c; GRU: z, r, h),
and their tensors map onto DirectML's 4-D ones by a leading 1 (ONNX's 3-D X {seq, batch, input}
is DirectML's {1, seq, batch, input}; W {dirs, G*hidden, input} is {1, dirs, G*hidden, input}; R
likewise; B {dirs, 2*G*hidden} is {1, 1, dirs, 2*G*hidden}; initial_h/initial_c {dirs, batch,
hidden} are {1, dirs, batch, hidden}; sequence_lens {batch} is {1, 1, 1, batch} UINT32; P {dirs,
3*hidden} is {1, 1, dirs, 3*hidden}; Y {seq, dirs, batch, hidden} is DirectML's 4-D
OutputSequenceTensor as it is; Y_h/Y_c {dirs, batch, hidden} are {1, dirs, batch, hidden}).

One engine runs the three: the input projection X x W^T + Wb for every step and direction is one
GEMM before the loop; ``lax.scan`` runs the steps, both directions of a bidirectional network
stacked in one scan (the backward direction reads each sequence reversed within its own length),
a single direction without a directions axis (its step's product a plain 2-D GEMM).
The loop's derivative (``_Steps.jvp``, a ``custom_jvp`` that JAX transposes for reverse mode,
never a ``custom_vjp``) is the formula's by JAX's own rules, laid out for reverse mode: it keeps
only each step's states (H, and C for the LSTM), recomputes the gates from them with one GEMM
over every step, runs one loop back holding one product by RecurrenceTensor a step (two for the
GRU without LinearBeforeReset, as its forward step), and takes RecurrenceTensor's gradient as one
GEMM over every step. FLOAT16 networks multiply through GEMM's FLOAT16 product (``half_dot``), so
those products' transposes are FLOAT16 products too (on the H200, batch 64, hidden 1,024, 512
steps: the LSTM's forward + backward in 15.5 ms, against 18.8 with JAX's transposes, which widen
R, W and X to FLOAT32 and take TF32 products).
"""

from __future__ import annotations

import functools

import jax
import jax.numpy as jnp
import numpy as np
from jax import lax
from jax.ad_checkpoint import checkpoint_name

from dmljax._src.catalog import PREFIX
from dmljax._src.dtypes import FLOAT32_FLOAT16, DataType
from dmljax._src.enums import RecurrentNetworkDirection
from dmljax._src.errors import Violation
from dmljax._src.fused import FusedActivation
from dmljax._src.half_products import half_dot, half_dot_dims
from dmljax._src.numerics import compute_dtype, load, max_num, min_num
from dmljax._src.op import operator
from dmljax._src.ops.factories import apply_fused
from dmljax._src.spec import OpSpec, ParamSpec, SameDataType, SilentChoice, TensorSpec, table
from dmljax._src.validate import TensorInfo

F32, F16 = DataType.FLOAT32, DataType.FLOAT16
U32 = (DataType.UINT32,)
Direction = RecurrentNetworkDirection

STATE_NAME = "dmljax_recurrent_state"
"""The name (``jax.ad_checkpoint.checkpoint_name``) of the carried states, the only values of a
step that reverse mode keeps."""

# The activations each operator applies, per direction, in the pages' order, and ONNX's defaults
# for them (the pages give none: dmljax's choice, README).
_DEFAULTS = {
    "RNN": ("DML_OPERATOR_ACTIVATION_TANH",),
    "LSTM": ("DML_OPERATOR_ACTIVATION_SIGMOID", "DML_OPERATOR_ACTIVATION_TANH", "DML_OPERATOR_ACTIVATION_TANH"),
    "GRU": ("DML_OPERATOR_ACTIVATION_SIGMOID", "DML_OPERATOR_ACTIVATION_TANH"),
}
_GATES = {"RNN": 1, "LSTM": 4, "GRU": 3}


def num_directions(direction) -> int:
    return 2 if direction is Direction.BIDIRECTIONAL else 1


def default_activations(short: str, direction) -> tuple[FusedActivation, ...]:
    """ONNX's default activations for ``short`` (RNN: f = Tanh; LSTM: f = Sigmoid, g = h = Tanh;
    GRU: f = Sigmoid, g = Tanh), repeated for each direction."""
    return tuple(FusedActivation(n) for n in _DEFAULTS[short]) * num_directions(direction)


# ---------------------------------------------------------------------------------- validation
def _shape_checks(short: str):
    """The Sizes each page gives its tensors, from InputTensor {1, seq_length, batch_size,
    input_size}, the Direction (num_directions) and hidden_size (WeightTensor's third Sizes / the
    gate count); and ActivationDescCount against the Direction."""
    gates = _GATES[short]

    def check(tensors, attrs, level) -> list[Violation]:
        problems = []
        x, w, r = tensors.get("InputTensor"), tensors.get("WeightTensor"), tensors.get("RecurrenceTensor")
        direction = attrs.get("Direction")
        descs = attrs.get("ActivationDescs")
        if direction is not None and descs is not None:
            want = len(_DEFAULTS[short]) * num_directions(direction)
            if len(descs) != want:
                problems.append(Violation(
                    "ActivationDescCount", "activation_descs", f"is {len(descs)} with Direction {direction.dml_name}",
                    f"{want}: {', '.join(('f()', 'g()', 'h()')[:len(_DEFAULTS[short])])} for "
                    f"{'forward, then for backward' if want > len(_DEFAULTS[short]) else 'the direction'}",
                    "leave activation_descs out (None) for ONNX's defaults"))
        if x is None or w is None or r is None or direction is None or any(len(t.shape) != 4 for t in (x, w, r)):
            return problems
        _, seq, batch, inp = x.shape
        dirs = num_directions(direction)
        if x.shape[0] != 1:
            problems.append(Violation("InputTensor", "input", f"has Sizes {list(x.shape)}",
                                      "{1, seq_length, batch_size, input_size}"))
        if w.shape[2] % gates:
            problems.append(Violation("WeightTensor", "weight", f"has Sizes {list(w.shape)}",
                                      f"{{1, num_directions, {gates} * hidden_size, input_size}}: "
                                      f"a third Sizes that {gates} divides" if gates > 1 else ""))
            return problems
        hidden = w.shape[2] // gates
        g = f"{gates} * hidden_size" if gates > 1 else "hidden_size"
        expect = {
            "WeightTensor": ((1, dirs, gates * hidden, inp), f"{{1, num_directions, {g}, input_size}}"),
            "RecurrenceTensor": ((1, dirs, gates * hidden, hidden), f"{{1, num_directions, {g}, hidden_size}}"),
            "BiasTensor": ((1, 1, dirs, 2 * gates * hidden), f"{{1, 1, num_directions, {2 * gates} * hidden_size}}"),
            "HiddenInitTensor": ((1, dirs, batch, hidden), "{1, num_directions, batch_size, hidden_size}"),
            "CellMemInitTensor": ((1, dirs, batch, hidden), "{1, num_directions, batch_size, hidden_size}"),
            "SequenceLengthsTensor": ((1, 1, 1, batch), "{1, 1, 1, batch_size}"),
            "PeepholeTensor": ((1, 1, dirs, 3 * hidden), "{1, 1, num_directions, 3 * hidden_size}"),
        }
        facts = (f"num_directions = {dirs} ({direction.dml_name}), seq_length = {seq}, batch_size = {batch}, "
                 f"input_size = {inp}, hidden_size = {hidden}")
        for name, (sizes, text) in expect.items():
            t = tensors.get(name)
            if t is not None and tuple(t.shape) != sizes:
                arg = name[: -len("Tensor")]
                problems.append(Violation(name, _arg(arg), f"has Sizes {list(t.shape)}",
                                          f"{text} = {list(sizes)} ({facts})"))
        return problems
    return check


def _arg(name: str) -> str:
    return {"Weight": "weight", "Recurrence": "recurrence", "Bias": "bias", "HiddenInit": "hidden_init",
            "CellMemInit": "cell_mem_init", "SequenceLengths": "sequence_lengths", "Peephole": "peephole"}[name]


def _lengths_within(values, attrs, level) -> list[Violation]:
    """A sequence length is at most seq_length (a tracer's values are clamped to it)."""
    x, lengths = values.get("InputTensor"), values.get("SequenceLengthsTensor")
    if x is None or lengths is None or x.ndim != 4:
        return []
    seq = x.shape[1]
    bad = np.asarray(lengths).reshape(-1)
    bad = bad[bad > seq]
    if bad.size:
        return [Violation("SequenceLengthsTensor", "sequence_lengths", f"holds {int(bad[0])}",
                          f"0 to seq_length = {seq} (InputTensor's second Sizes)")]
    return []


def _outputs(short: str):
    gates = _GATES[short]

    def infer(tensors, attrs, problems):
        x, w = tensors["InputTensor"], tensors["WeightTensor"]
        dirs = num_directions(attrs["Direction"])
        hidden = w.shape[2] // gates
        _, seq, batch, _ = x.shape
        dt = x.data_type
        out = {"OutputSequenceTensor": TensorInfo((seq, dirs, batch, hidden), dt),
               "OutputSingleTensor": TensorInfo((1, dirs, batch, hidden), dt)}
        if short == "LSTM":
            out["OutputCellSingleTensor"] = TensorInfo((1, dirs, batch, hidden), dt)
        return out
    return infer


def _growth(sizes, attrs) -> dict:
    """Per step, input_size + hidden_size products summed and a few element-wise roundings; the
    state carries each step's error into the next, so the budget grows with seq_length times
    that (docs/semantics.md#accumulating-operators), in ULP of the largest output value (Reference magnitude). FLOAT16
    rounds the states to FLOAT16 each step: about one FLOAT16 ULP a step."""
    seq = sizes[1] if len(sizes) == 4 else 1
    inp = sizes[3] if len(sizes) == 4 else 1
    r = attrs.get("RecurrenceTensor")
    hidden = r[3] if r is not None and len(r) == 4 else 1
    return {F32: 4 * seq * (inp + hidden + 8), F16: 2 * seq + 2, "half": 4 * seq * (inp + hidden + 8)}


# ---------------------------------------------------------------------------------- records
_ACT_DOC = ("The activation descs f(){more}, {n} a direction (forward's, then backward's when "
            "BIDIRECTIONAL): each an element-wise activation desc (dmljax.FusedActivation, e.g. "
            "FusedActivation('ACTIVATION_SCALED_TANH', alpha=1.0, beta=0.5), a name, or {{'Type': ..., "
            "'Desc': {{...}}}}); ActivationDescCount is its length. None (the default): ONNX's defaults, {dflt}.")
_DIRECTION_DOC = "FORWARD (the default, ONNX's), BACKWARD or BIDIRECTIONAL (DML_RECURRENT_NETWORK_DIRECTION)."
_LENGTHS_NOTE = (
    "SequenceLengthsTensor (UINT32 {1, 1, 1, batch_size}) gives each batch entry its own length L <= "
    "seq_length (ONNX Runtime's rules, which the page leaves open): the forward direction runs steps 0 to L - "
    "1, the backward direction runs from the sequence's own last valid step L - 1 down to 0; "
    "OutputSequenceTensor holds zeros at steps L and after, and OutputSingleTensor (and "
    "OutputCellSingleTensor) the state of the last step run (for the backward direction, step 0's), or zeros "
    "where L = 0.")
_LAYOUT_NOTE = (
    "Layouts: InputTensor {{1, seq_length, batch_size, input_size}}; WeightTensor {{1, num_directions, G * "
    "hidden_size, input_size}} and RecurrenceTensor {{1, num_directions, G * hidden_size, hidden_size}}, the gates "
    "stacked in the order {order}; BiasTensor {{1, 1, num_directions, 2 * G * hidden_size}}: [Wb, Rb] for each "
    "direction; HiddenInitTensor{cell} {{1, num_directions, batch_size, hidden_size}}; outputs OutputSequenceTensor "
    "{{seq_length, num_directions, batch_size, hidden_size}} and OutputSingleTensor{cello} {{1, num_directions, "
    "batch_size, hidden_size}} (ONNX's 3-D tensors with a leading 1). Returns all outputs, in the page's order; "
    "an output that a caller does not use is left out of the compiled program under jax.jit, and a DxDispatch "
    "desc may leave either out. ")
_NUMERICS_NOTE = (
    "Numerics: the input projection and each step's recurrent product are FLOAT32 products "
    "(precision HIGHEST, never TF32); FLOAT16 tensors are multiplied in FLOAT16 and accumulated in FLOAT32, "
    "the gates are computed in FLOAT32 and the states (H{c}) rounded to the tensors' type at every step, as "
    "if each step's state were written to its FLOAT16 output and read back. Each activation is its own "
    "operator's formula (e.g. ACTIVATION_SIGMOID's); the activation of each direction is its own. The order of "
    "the sums is the library's: a budget growing with seq_length * (input_size + hidden_size), in ULP of "
    "the largest output value. ")


def _record(short: str, summary: str, formula: str, inputs: tuple, outputs: tuple, params: tuple,
            gradient: str, notes: str, silent: tuple = ()) -> OpSpec:
    names = [t.dml_name for t in inputs + outputs]
    row = {n: ("4", U32 if n == "SequenceLengthsTensor" else FLOAT32_FLOAT16) for n in names}
    return OpSpec(
        enum_name=PREFIX + short,
        summary=summary,
        formula=formula,
        tensors=inputs + outputs,
        support=(table("1.0", **row),),
        params=params,
        constraints=(SameDataType(tuple(n for n in names if n != "SequenceLengthsTensor")),),
        ulp={F32: 8, F16: 2},
        ulp_half=8,
        ulp_growth=_growth,
        gradient=gradient,
        notes=notes,
        extra_checks=(_shape_checks(short),),
        value_checks=(_lengths_within,),
        infer_outputs=_outputs(short),
        silent=silent,
    )


def _tensors(*names):
    return tuple(TensorSpec(n, "input", optional=n not in ("InputTensor", "WeightTensor", "RecurrenceTensor"))
                 for n in names)


def _activation_param(more: str, n: str, dflt: str) -> ParamSpec:
    return ParamSpec("ActivationDescs", "DML_OPERATOR_DESC[]", default=None, nullable=True,
                     count="ActivationDescCount", doc=_ACT_DOC.format(more=more, n=n, dflt=dflt))


_DIRECTION = ParamSpec("Direction", "DML_RECURRENT_NETWORK_DIRECTION", default=Direction.FORWARD,
                       enum=RecurrentNetworkDirection, doc=_DIRECTION_DOC)
_GRADIENT = ("Back-propagation through time: the derivative of the formula on the branch each activation "
             "selects (each activation's own rule), through every step and both states, in reverse and forward "
             "mode; reverse mode keeps each step's states only, recomputes the gates from them (one product "
             "over every step) and goes back through the steps with one product by RecurrenceTensor a step. "
             "FLOAT16 tensors: each product's gradient is GEMM's (its cotangent rounded to FLOAT16, FLOAT16 "
             "products accumulated in FLOAT32), so the gates' cotangents reach the products as FLOAT16 values. "
             "DirectML has no *_GRAD operator for it. SequenceLengthsTensor (UINT32) gets none.")

RNN = _record(
    "RNN",
    summary="Performs a one-layer simple recurrent neural network (RNN) function on the input.",
    formula=("Equation for the forward direction\n(the page's image; ONNX's equations in text)\n"
             "Ht = f(Xt * (Wi^T) + Ht-1 * (Ri^T) + Wbi + Rbi)\n"
             "(backward direction: WBi, RBi, WBbi, RBbi and the sequence reversed; ONNX's RNN equation)"),
    inputs=_tensors("InputTensor", "WeightTensor", "RecurrenceTensor", "BiasTensor", "HiddenInitTensor",
                    "SequenceLengthsTensor"),
    outputs=(TensorSpec("OutputSequenceTensor", "output", optional=True),
             TensorSpec("OutputSingleTensor", "output", optional=True)),
    params=(_activation_param("", "one", "ACTIVATION_TANH"), _DIRECTION),
    gradient=_GRADIENT,
    notes=(_LAYOUT_NOTE.format(order="i (G = 1)", cell="", cello="") + _NUMERICS_NOTE.format(c="")
           + _LENGTHS_NOTE),
    silent=(
        SilentChoice(
            "RNN, LSTM, GRU: the equations",
            "ONNX's RNN, LSTM and GRU equations, with their gate orders (RNN i; LSTM i, o, f, c; GRU z, r, h)",
            "The pages' equations are images that the reference pages lack; ONNX Runtime's DirectML provider "
            "maps ONNX's nodes onto these operators with the same gate orders.",
            also=("LSTM", "GRU")),
        SilentChoice(
            "RNN, LSTM, GRU: layouts",
            "ONNX's 3-D tensors with a leading 1: X {1, seq, batch, input}, W {1, dirs, G * hidden, input}, R "
            "{1, dirs, G * hidden, hidden}, B {1, 1, dirs, 2 * G * hidden} = [Wb, Rb], initial states {1, "
            "dirs, batch, hidden}, P {1, 1, dirs, 3 * hidden} (Pi, Po, Pf)",
            "The pages give these Sizes; the order of W's rows and B's halves is ONNX's.",
            also=("LSTM", "GRU")),
        SilentChoice(
            "RNN, LSTM, GRU: ActivationDescs left out",
            "ONNX's defaults, per direction: RNN Tanh; LSTM Sigmoid, Tanh, Tanh; GRU Sigmoid, Tanh",
            "The pages require the descs and give no default.",
            also=("LSTM", "GRU")),
        SilentChoice(
            "RNN, LSTM, GRU: which activations",
            "The element-wise activations any host may fuse (LINEAR, SIGMOID, HARD_SIGMOID, TANH, SCALED_TANH, "
            "RELU, LEAKY_RELU, THRESHOLDED_RELU, ELU, CELU, SCALED_ELU, SOFTPLUS, PARAMETRIC_SOFTPLUS, "
            "SOFTSIGN, IDENTITY, SHRINK, GELU), each with its own record's members",
            "The pages say \"activation operators\" without a list; ONNX's recurrent activations are all among "
            "these.",
            also=("LSTM", "GRU")),
        SilentChoice(
            "RNN, LSTM, GRU: SequenceLengthsTensor",
            "ONNX Runtime's rules: zeros in OutputSequenceTensor at and past each sequence's length; the "
            "single outputs hold the last step run (the backward direction starts at the sequence's own last "
            "valid step, so its last step is step 0); a length of 0 gives zero states; a length above "
            "seq_length is refused where known, clamped inside a trace",
            "The pages only say each batch entry has its own length.",
            also=("LSTM", "GRU")),
        SilentChoice(
            "RNN, LSTM, GRU: FLOAT16",
            "Products FLOAT16 x FLOAT16 accumulated in FLOAT32, gates in FLOAT32, the states rounded to "
            "FLOAT16 at every step",
            "As if each step's state were written to its FLOAT16 output tensor and read back; a budget growing "
            "with seq_length.",
            also=("LSTM", "GRU")),
        SilentChoice(
            "RNN, LSTM, GRU: FLOAT16 gradients",
            "Each product's gradient is GEMM's: its cotangent (the gates') rounded to FLOAT16, FLOAT16 products "
            "accumulated in FLOAT32, rounded once to FLOAT16",
            "DirectML has no *_GRAD operator for them; a DirectML graph of their gradient holds the gates' "
            "cotangents in FLOAT16 tensors, and the states' cotangents are FLOAT16 already.",
            also=("LSTM", "GRU")),
        SilentChoice(
            "RNN: RecurrenceTensor",
            "Required",
            "The field's text calls it \"an optional tensor\" but it is not _Maybenull_ and the table lists it "
            "as an Input."),
        SilentChoice(
            "RNN, LSTM, GRU: optional outputs",
            "The functions return every output in the page's order; a DxDispatch desc may leave any out (only "
            "those it gives are written)",
            "Under jax.jit an unused output costs nothing.",
            also=("LSTM", "GRU")),
    ),
)


@operator(RNN)
def rnn(input, weight, recurrence, bias=None, hidden_init=None, sequence_lengths=None, *, activation_descs,
        direction, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> x = np.ones((1, 2, 1, 1), np.float32)          # seq_length 2, batch 1, input 1
        >>> w = np.full((1, 1, 1, 1), 0.5, np.float32)
        >>> r = np.ones((1, 1, 1, 1), np.float32)
        >>> seq, last = dmljax.rnn(x, w, r, activation_descs=["ACTIVATION_RELU"])
        >>> seq.ravel(), last.ravel()                     # H1 = 0.5, H2 = 0.5 + 0.5
        (Array([0.5, 1. ], dtype=float32), Array([1.], dtype=float32))
    """
    return _run("RNN", input, weight, recurrence, bias, hidden_init, None, sequence_lengths, None,
                activation_descs, direction, allow_half_precision_computation)


LSTM = _record(
    "LSTM",
    summary=("Performs a one-layer long short term memory (LSTM) function on the input. This operator uses "
             "multiple gates to perform this layer. These gates are performed multiple times in a loop, dictated "
             "by the sequence length dimension and the SequenceLengthsTensor."),
    formula=("Equation for the forward direction\n(the page's image; ONNX's equations in text)\n"
             "it = f(Xt*(Wi^T) + Ht-1*(Ri^T) + Pi (.) Ct-1 + Wbi + Rbi)\n"
             "ft = f(Xt*(Wf^T) + Ht-1*(Rf^T) + Pf (.) Ct-1 + Wbf + Rbf)   (CoupleInputForget: ft = 1 - it)\n"
             "ct = g(Xt*(Wc^T) + Ht-1*(Rc^T) + Wbc + Rbc)\n"
             "Ct = ft (.) Ct-1 + it (.) ct\n"
             "ot = f(Xt*(Wo^T) + Ht-1*(Ro^T) + Po (.) Ct + Wbo + Rbo)\n"
             "Ht = ot (.) h(Ct)\n"
             "(UseClipThreshold: every activation's input x is clip(x) = min(max(x, -ClipThreshold), "
             "ClipThreshold), h's too; backward direction: WB, RB, WBb, RBb, PB and the sequence reversed; "
             "ONNX's LSTM equations)"),
    inputs=_tensors("InputTensor", "WeightTensor", "RecurrenceTensor", "BiasTensor", "HiddenInitTensor",
                    "CellMemInitTensor", "SequenceLengthsTensor", "PeepholeTensor"),
    outputs=(TensorSpec("OutputSequenceTensor", "output", optional=True),
             TensorSpec("OutputSingleTensor", "output", optional=True),
             TensorSpec("OutputCellSingleTensor", "output", optional=True)),
    params=(_activation_param(", g() and h()", "three", "ACTIVATION_SIGMOID, ACTIVATION_TANH, ACTIVATION_TANH"),
            _DIRECTION,
            ParamSpec("ClipThreshold", "FLOAT", default=0.0,
                      doc="The cell clip threshold, used when UseClipThreshold is TRUE (default 0.0)."),
            ParamSpec("UseClipThreshold", "BOOL", default=False,
                      doc="TRUE to clip each activation's input to [-ClipThreshold, +ClipThreshold] (default FALSE)."),
            ParamSpec("CoupleInputForget", "BOOL", default=False,
                      doc="TRUE to couple the input and forget gates: ft = 1 - it (default FALSE).")),
    gradient=_GRADIENT + " The clip's gradient is CLIP_GRAD's: 1 strictly inside the bounds, 0 at and beyond.",
    notes=(_LAYOUT_NOTE.format(order="i, o, f, c (G = 4)", cell=" and CellMemInitTensor",
                               cello=" and OutputCellSingleTensor")
           + "PeepholeTensor {1, 1, num_directions, 3 * hidden_size} holds Pi, Po, Pf. "
           + _NUMERICS_NOTE.format(c=" and C") + _LENGTHS_NOTE
           + " The clip (ONNX Runtime's reading of 'applied to the input of activations') bounds the inputs of "
             "f, g and h, h's input being the clipped Ct while Ct itself is carried unclipped; NaN clips to "
             "-ClipThreshold (maxNum, then minNum: docs/semantics.md#minimum-and-maximum). A coupled forget gate ignores Pf and the "
             "forget rows of W, R and B."),
    silent=(
        SilentChoice(
            "LSTM: the clip",
            "UseClipThreshold bounds the inputs of f, g and h to [-ClipThreshold, ClipThreshold]; h's input is "
            "the clipped Ct while Ct is carried unclipped; NaN clips to -ClipThreshold (maxNum, minNum); the "
            "gradient is CLIP_GRAD's",
            "The page says the clip \"is applied to the input of activations\"; ONNX Runtime's LSTM clips h's "
            "input and carries Ct unclipped the same way."),
        SilentChoice(
            "LSTM: CoupleInputForget",
            "ft = 1 - it; Pf and the forget rows of W, R and B are ignored",
            "ONNX's input_forget."),
    ),
)


@operator(LSTM)
def lstm(input, weight, recurrence, bias=None, hidden_init=None, cell_mem_init=None, sequence_lengths=None,
         peephole=None, *, activation_descs, direction, clip_threshold, use_clip_threshold, couple_input_forget,
         allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> x = np.zeros((1, 3, 1, 2), np.float32)         # seq_length 3, batch 1, input 2
        >>> w = np.zeros((1, 1, 4, 2), np.float32)         # hidden_size 1: gates i, o, f, c
        >>> r = np.zeros((1, 1, 4, 1), np.float32)
        >>> b = np.array([0, 0, 0, 2, 0, 0, 0, 0], np.float32).reshape(1, 1, 1, 8)  # Wbc = 2
        >>> seq, h, c = dmljax.lstm(x, w, r, b)
        >>> c.ravel()                                     # C = 0.5 C + 0.5 tanh(2), three times
        Array([0.8435241], dtype=float32)
    """
    return _run("LSTM", input, weight, recurrence, bias, hidden_init, cell_mem_init, sequence_lengths, peephole,
                activation_descs, direction, allow_half_precision_computation,
                clip=clip_threshold if use_clip_threshold else None, couple=couple_input_forget)


GRU = _record(
    "GRU",
    summary=("Performs a (standard layers) one-layer gated recurrent unit (GRU) function on the input. This "
             "operator uses multiple gates to perform this layer. These gates are performed multiple times in a "
             "loop dictated by the sequence length dimension and the SequenceLengthsTensor."),
    formula=("Equation for the forward direction\n(the page's image; ONNX's equations in text)\n"
             "zt = f(Xt*(Wz^T) + Ht-1*(Rz^T) + Wbz + Rbz)\n"
             "rt = f(Xt*(Wr^T) + Ht-1*(Rr^T) + Wbr + Rbr)\n"
             "ht = g(Xt*(Wh^T) + (rt (.) Ht-1)*(Rh^T) + Rbh + Wbh)     (LinearBeforeReset FALSE)\n"
             "ht = g(Xt*(Wh^T) + (rt (.) (Ht-1*(Rh^T) + Rbh)) + Wbh)   (LinearBeforeReset TRUE)\n"
             "Ht = (1 - zt) (.) ht + zt (.) Ht-1\n"
             "(backward direction: WB, RB, WBb, RBb and the sequence reversed; ONNX's GRU equations)"),
    inputs=_tensors("InputTensor", "WeightTensor", "RecurrenceTensor", "BiasTensor", "HiddenInitTensor",
                    "SequenceLengthsTensor"),
    outputs=(TensorSpec("OutputSequenceTensor", "output", optional=True),
             TensorSpec("OutputSingleTensor", "output", optional=True)),
    params=(_activation_param(" and g()", "two", "ACTIVATION_SIGMOID, ACTIVATION_TANH"), _DIRECTION,
            ParamSpec("LinearBeforeReset", "BOOL", default=False,
                      doc=("TRUE to apply the hidden gate's linear transformation before multiplying by the "
                           "reset gate's output (default FALSE)."))),
    gradient=_GRADIENT,
    notes=(_LAYOUT_NOTE.format(order="z, r, h (G = 3)", cell="", cello="") + _NUMERICS_NOTE.format(c="")
           + _LENGTHS_NOTE),
)


@operator(GRU)
def gru(input, weight, recurrence, bias=None, hidden_init=None, sequence_lengths=None, *, activation_descs,
        direction, linear_before_reset, allow_half_precision_computation):
    """Example:
        >>> import numpy as np, dmljax
        >>> x = np.zeros((1, 2, 1, 1), np.float32)
        >>> w = np.zeros((1, 1, 3, 1), np.float32)         # hidden_size 1: gates z, r, h
        >>> r = np.zeros((1, 1, 3, 1), np.float32)
        >>> h0 = np.ones((1, 1, 1, 1), np.float32)
        >>> seq, last = dmljax.gru(x, w, r, hidden_init=h0)
        >>> seq.ravel()                                   # H = 0.5 * 0 + 0.5 * H, twice
        Array([0.5 , 0.25], dtype=float32)
    """
    return _run("GRU", input, weight, recurrence, bias, hidden_init, None, sequence_lengths, None,
                activation_descs, direction, allow_half_precision_computation, linear_before_reset=linear_before_reset)


# ---------------------------------------------------------------------------------- the engine
def _product(x, y, form: str, dt: DataType, ct):
    """``x`` [..., M, K] times ``y`` in ``form``'s layout ("NT": y [..., N, K]; "NN": y [..., K, N])
    over their leading (batch) dimensions, two tensor-type operands: FLOAT32 at precision HIGHEST;
    FLOAT16 operands as they are, accumulated in FLOAT32 (``ct``) by GEMM's FLOAT16 product
    (``half_dot``), whose transposes take FLOAT16 operands: reverse mode rounds each product's
    cotangent to FLOAT16, as GEMM's gradient does, and runs FLOAT16 products, where JAX's own
    transposes would widen RecurrenceTensor and the inputs to FLOAT32 products (TF32 on a GPU)."""
    if dt is F16 and ct == np.float32:
        return half_dot(x, y, form=form)
    return lax.dot_general(x, y, half_dot_dims(form, x.ndim - 2), precision=lax.Precision.HIGHEST if dt is F32 else None,
                           preferred_element_type=ct)


def _reverse(a, lengths):
    """``a`` [seq, batch, ...] with each batch entry's first ``lengths`` steps reversed (ONNX's
    ReverseSequence); the whole axis without lengths. An involution."""
    if lengths is None:
        return a[::-1]
    t = lax.broadcasted_iota(np.int32, (a.shape[0], a.shape[1]), 0)
    idx = jnp.where(t < lengths[None, :], lengths[None, :] - 1 - t, t)
    return jnp.take_along_axis(a, idx.reshape(idx.shape + (1,) * (a.ndim - 2)), axis=0)


def _clip(x, threshold):
    """min(max(x, -t), t) (maxNum/minNum: NaN gives -t); CLIP_GRAD's gradient, 1 strictly inside."""
    if threshold is None:
        return x
    t = np.asarray(threshold, x.dtype)
    clipped = min_num(max_num(x, -t), t)
    inside = (x > -t) & (x < t)
    return jnp.where(inside, x, lax.stop_gradient(clipped))


def _act(acts, k: int, x, half: bool, threshold=None):
    """Activation ``k`` (f = 0, g = 1, h = 2) of each direction on ``x`` [dirs, ...] (any shape for
    one direction): one call when the directions share it."""
    x = _clip(x, threshold)
    per = [a[k] for a in acts]
    if all(p == per[0] for p in per):
        return apply_fused(per[0], x, half)
    return jnp.concatenate([apply_fused(p, x[d:d + 1], half) for d, p in enumerate(per)], axis=0)


def _run(short, x, w, r, b, h0, c0, lengths, p, activation_descs, direction, half, **options):
    """The network under ``jax.checkpoint``: reverse mode keeps the inputs and each step's carried
    states (named ``STATE_NAME``) and recomputes the rest (the input projection and the gates, each
    one GEMM over every step) as it goes back, so that its memory is the forward pass's states: no
    more."""
    network = functools.partial(_network, short, activation_descs=activation_descs, direction=direction,
                                half=half, **options)
    policy = jax.checkpoint_policies.save_only_these_names(STATE_NAME)
    return jax.checkpoint(network, policy=policy, prevent_cse=False)(x, w, r, b, h0, c0, lengths, p)


def _network(short, x, w, r, b, h0, c0, lengths, p, *, activation_descs, direction, half, clip=None, couple=False,
             linear_before_reset=False):
    dt = DataType.from_dtype(x.dtype)
    ct = compute_dtype(dt, half)
    st = dt.dtype if not half else ct  # the states' type between steps: the tensors'
    dirs = num_directions(direction)
    g = _GATES[short]
    _, seq, batch, _ = x.shape
    hidden = w.shape[2] // g
    gh = g * hidden
    n_act = len(_DEFAULTS[short])
    descs = activation_descs if activation_descs is not None else default_activations(short, direction)
    acts = [descs[d * n_act:(d + 1) * n_act] for d in range(dirs)]
    backward = [direction is Direction.BACKWARD or d == 1 for d in range(dirs)]

    def read(v):  # a tensor as math reads it: FLOAT32 flushed; FLOAT16 kept for the products
        return load(v, half) if dt is F32 or half else v

    xs, ws, rs = read(x[0]), read(w[0]), read(r[0])  # [seq, batch, in], [dirs, gh, in], [dirs, gh, hidden]
    if lengths is not None:
        lengths = jnp.minimum(lengths.reshape(batch), np.uint32(seq)).astype(np.int32)
    # One direction runs without a directions axis: each step's product is the plain 2-D one
    # ([batch, hidden] x [hidden, gh]), not one batched over an axis of size 1, and the loop reads
    # the input projection as the GEMM writes it (no transpose); two directions stack theirs on an
    # axis after seq.
    one = dirs == 1

    def own(v):  # a [dirs, ...] value as the loop sees it: its directions axis dropped for one direction
        return v[0] if one else v

    # The input projection for every step and direction: one GEMM of [seq batch, in] by W read as
    # [dirs gh, in] (contracted on its last axis), [seq, batch, dirs, gh], then [seq, (dirs,) batch,
    # gh]. (One direction drops its axis of 1 from the product's result, not from W.)
    proj = _product(xs.reshape(seq * batch, -1), ws.reshape(dirs * gh, -1), "NT", dt, ct).reshape(seq, batch, dirs, gh)
    proj = proj[:, :, 0] if one else jnp.swapaxes(proj, 1, 2)
    bias_in = bias_rec = None
    if b is not None:
        bb = load(b[0, 0], half)  # [dirs, 2 gh]
        wb, rb = bb[:, :gh], bb[:, gh:]
        if short == "GRU" and linear_before_reset:  # Rbh stays inside rt (.) (...)
            bias_in = wb + jnp.concatenate([rb[:, :2 * hidden], jnp.zeros_like(rb[:, 2 * hidden:])], axis=1)
            bias_rec = own(rb[:, None, 2 * hidden:])
        else:
            bias_in = wb + rb
    if bias_in is not None:
        proj = proj + own(bias_in)[..., None, :]
    if one and backward[0]:
        proj = _reverse(proj, lengths)
    elif any(backward):
        parts = [_reverse(proj[:, d], lengths) if backward[d] else proj[:, d] for d in range(dirs)]
        proj = jnp.stack(parts, axis=1)

    h = jnp.zeros((dirs, batch, hidden), st) if h0 is None else read(h0[0]).astype(st)
    c = None
    if short == "LSTM":
        c = jnp.zeros((dirs, batch, hidden), st) if c0 is None else read(c0[0]).astype(st)
    peep = None
    if p is not None:
        pp = own(load(p[0, 0], half)[:, None, :])  # [(dirs,) 1, 3 hidden]: Pi, Po, Pf
        peep = (pp[..., :hidden], pp[..., hidden:2 * hidden], pp[..., 2 * hidden:])

    steps = _Steps(short, acts, half, dt, ct, st, hidden, clip, couple, linear_before_reset)
    hs, cs, h, c = _states(steps, proj, own(rs), own(h), None if c is None else own(c), peep, bias_rec, lengths)
    if one:  # the directions axis back
        hs, h, c = hs[:, None], h[None], None if c is None else c[None]
    ys = hs  # [seq, dirs, batch, hidden]: zeros at the steps past each sequence's length
    if lengths is not None:
        valid = (lax.broadcasted_iota(np.int32, (seq, batch), 0) < lengths[None, :])[:, None, :, None]
        ys = jnp.where(valid, hs, jnp.zeros_like(hs))
    if any(backward):  # the backward steps back in place
        ys = jnp.stack([_reverse(ys[:, d], lengths) if backward[d] else ys[:, d] for d in range(dirs)], axis=1)
    finals = [h] if c is None else [h, c]
    if lengths is not None:
        ran = (lengths > 0)[None, :, None]
        finals = [jnp.where(ran, v, jnp.zeros_like(v)) for v in finals]
    out = (ys.astype(dt.dtype),) + tuple(v[None].astype(dt.dtype) for v in finals)
    return out


def _states(steps, proj, rs, h0, c0, peep, bias_rec, lengths):
    """Every step's states, ``lax.scan`` over the projected inputs ``proj`` [seq, (dirs,) batch, G
    hidden]: (H at each step, C at each step or None, the last H, the last C or None), the
    states [seq, (dirs,) batch, hidden] (no directions axis for one direction). Its derivative
    (``_Steps.jvp``) is the formula's, by JAX's own rules for every operation; it is laid out so
    that reverse mode keeps these states only."""
    @jax.custom_jvp
    def states(proj, rs, h0, c0, peep, bias_rec, lengths):
        return steps.scan(proj, rs, h0, c0, peep, bias_rec, lengths)

    states.defjvp(steps.jvp)
    return states(proj, rs, h0, c0, peep, bias_rec, lengths)


def _partials(f, *args):
    """The derivatives of an element-wise ``f`` [seq, (dirs,) ...] -> [seq, (dirs,) ...] with respect
    to each of ``args`` at every element (JAX's derivative of ``f``: each activation's own
    rule), every step at once; and ``f``'s value."""
    vf = jax.vmap(f)  # over the steps: an activation sees [(dirs,) ...], two directions on axis 0
    out = []
    for k, a in enumerate(args):
        def one(v, k=k):
            return vf(*args[:k], v, *args[k + 1:])
        value, d = jax.jvp(one, (a,), (jnp.ones_like(a),))
        out.append(d)
    return value, out


COLUMNS_FROM_ROWS = 2
"""On the CPU, each step's product by RecurrenceTensor reads R^T (R's rows as columns, transposed
once before the loop) where Ht-1 has this many rows (the batch) or more. Where R reaches the loop
in its own row-major layout (an argument of the program: an imported model's call, whose weights
onnx/prepare.py prepares), XLA's CPU backend hands the product by R as written (contracted on its
last axis) to YNNPACK, which lays R out again on every step; where R is computed in the program
(flushed) XLA picks its layout itself, and the transposition costs nothing. A single row is a
matrix-vector product, which gains nothing and keeps its order of sums. Measured on the 2-core
Xeon (load average 2, jax 0.10.2; paired, a ``lax.scan`` of ``tanh(h x R^T + x)`` at precision
HIGHEST, R an argument, as written against transposed before the loop): batch 2, hidden 48: 0.63x
the time a step, hidden 128: 0.45x; batch 4, hidden 256: 0.56x; batch 1, hidden 48 to 256:
0.99-1.04x; ``dmljax.lstm``, ``gru`` and ``rnn`` jitted whole (batch 2, hidden 48): 0.98-1.03x.
The products are FLOAT32 sums in another order where YNNPACK blocks K differently (hidden 128 and
up; the same bits at 48): docs/semantics.md's rule for accumulating operators. ONNX's LSTM export
of tests/onnx/zoo.py (batch 2, hidden 48) is benchmarked in benchmarks/onnx/models.py."""


class _Recurrence:
    """RecurrenceTensor's rows [(dirs,) G hidden, hidden] as each step's product reads them: as
    they are (``rows``), and, where Ht-1 has ``COLUMNS_FROM_ROWS`` rows or more, each block of rows
    a step multiplies (``blocks``: (first, end) pairs) transposed once, before the loop, for the
    CPU (``columns``; None for one row)."""

    def __init__(self, rows, blocks, batch: int):
        self.rows = rows
        self.columns = None
        if batch >= COLUMNS_FROM_ROWS:
            self.columns = {b: jnp.swapaxes(rows[..., b[0]:b[1], :], -1, -2) for b in blocks}


class _Steps:
    """One network's step, cut where its math is element-wise per hidden unit (the gates' activations
    and the states' update) and where it multiplies by RecurrenceTensor.

    Forward, ``scan`` runs the page's formula step by step. Its derivative (``jvp``) is that of the
    same formula, written so that reverse mode is cheap and keeps only the states: each step's
    tangent is the element-wise partial derivatives (computed for every step at once from the
    states, by JAX's own rules for each activation) times the tangents of the step's inputs, plus
    one product by RecurrenceTensor (two for a GRU without LinearBeforeReset), and the tangent of
    RecurrenceTensor (and of the peepholes and Rbh) enters as one product over every step
    (H x dR^T), outside the loop. Transposed by JAX, the backward loop then holds one product a step
    and RecurrenceTensor's gradient is one GEMM after it; under the network's ``jax.checkpoint``
    the partial derivatives are recomputed from the states going back, not kept."""

    def __init__(self, short, acts, half, dt, ct, st, hidden, clip, couple, linear_before_reset):
        self.short, self.acts, self.half, self.dt, self.ct, self.st = short, acts, half, dt, ct, st
        self.hidden, self.clip, self.couple, self.lbr = hidden, clip, couple, linear_before_reset

    # -- the formula's element-wise pieces, [(dirs,) batch, hidden] in the compute type
    def act(self, k, x, threshold=None):
        return _act(self.acts, k, x, self.half, threshold)

    def lstm_c(self, peep, gi, gf, gc, cf):
        if peep is not None:
            gi, gf = gi + peep[0] * cf, gf + peep[2] * cf
        i = self.act(0, gi, self.clip)
        f = 1 - i if self.couple else self.act(0, gf, self.clip)
        cc = self.act(1, gc, self.clip)
        return f * cf + i * cc

    def lstm_h(self, peep, go, cn):
        if peep is not None:
            go = go + peep[1] * cn
        o = self.act(0, go, self.clip)
        return o * self.act(2, cn, self.clip)

    def gru_gated(self, gr, hf):  # rt (.) Ht-1 (LinearBeforeReset FALSE)
        return self.act(0, gr) * hf

    def gru_h(self, gz, gh, hf):  # gh: Xt*(Wh^T) + (rt (.) Ht-1)*(Rh^T) + Rbh + Wbh
        z = self.act(0, gz)
        return (1 - z) * self.act(1, gh) + z * hf

    def gru_lbr(self, gz, gr, xh, lin, hf):  # lin: Ht-1*(Rh^T) + Rbh
        z = self.act(0, gz)
        rg = self.act(0, gr)
        return (1 - z) * self.act(1, xh + rg * lin) + z * hf

    # -- products by RecurrenceTensor's rows
    def blocks(self):
        """The blocks of R's rows a step multiplies by: the GRU's z and r gates', then its h gate's,
        then (LinearBeforeReset: the tangent's) all three; all of them for the RNN and the LSTM."""
        hid, g = self.hidden, _GATES[self.short]
        if self.short != "GRU":
            return ((0, g * hid),)
        return ((0, 2 * hid), (2 * hid, 3 * hid)) + (((0, 3 * hid),) if self.lbr else ())

    def recurrence(self, rs, batch: int) -> _Recurrence:
        return _Recurrence(rs, self.blocks(), batch)

    def recurrent(self, hp, r: _Recurrence, block):
        """One step: Ht-1 x R[block]^T, batched over the directions if two; on the CPU by R^T's
        columns where ``r`` has them (``COLUMNS_FROM_ROWS``)."""
        rows = r.rows[..., block[0]:block[1], :]

        def written(hp, rows, *columns):
            return _product(hp, rows, "NT", self.dt, self.ct)

        if r.columns is None:
            return written(hp, rows)

        def by_columns(hp, rows, columns):
            return _product(hp, columns, "NN", self.dt, self.ct)

        return lax.platform_dependent(hp, rows, r.columns[block], cpu=by_columns, default=written)

    def recurrent_all(self, hs, rows):  # every step at once: [seq, (dirs,) batch, rows]
        seq, n = hs.shape[0], rows.shape[-2]
        if rows.ndim == 2:
            return _product(hs.reshape(-1, hs.shape[-1]), rows, "NT", self.dt, self.ct).reshape(hs.shape[:-1] + (n,))
        dirs, batch = hs.shape[1:3]
        flat = jnp.swapaxes(hs, 0, 1).reshape(dirs, seq * batch, -1)  # [dirs, seq batch, hidden]
        return jnp.swapaxes(_product(flat, rows, "NT", self.dt, self.ct).reshape(dirs, seq, batch, n), 0, 1)

    def store(self, v):  # a state written to its tensor type (FLOAT32 denormals flushed)
        return load(v.astype(self.st)) if self.st == np.float32 else v.astype(self.st)

    # -- forward
    def step(self, r, peep, bias_rec, hp, cp, xw):
        """The formula of one step: the new states in the compute type (C None but for the LSTM);
        ``r``: the network's ``_Recurrence``."""
        ct, hid = self.ct, self.hidden
        hf = hp.astype(ct)
        first, *rest = self.blocks()
        if self.short == "RNN":
            return self.act(0, xw + self.recurrent(hp, r, first)), None
        if self.short == "GRU":
            zr = xw[..., :2 * hid] + self.recurrent(hp, r, first)
            if self.lbr:
                lin = self.recurrent(hp, r, rest[0])
                lin = lin if bias_rec is None else lin + bias_rec
                return self.gru_lbr(zr[..., :hid], zr[..., hid:], xw[..., 2 * hid:], lin, hf), None
            gated = self.gru_gated(zr[..., hid:], hf).astype(self.st)
            return self.gru_h(zr[..., :hid], xw[..., 2 * hid:] + self.recurrent(gated, r, rest[0]), hf), None
        gates = xw + self.recurrent(hp, r, first)
        gi, go, gf, gc = (gates[..., k * hid:(k + 1) * hid] for k in range(4))
        cn = self.lstm_c(peep, gi, gf, gc, cp.astype(ct))
        return self.lstm_h(peep, go, cn), cn

    def scan(self, proj, rs, h0, c0, peep, bias_rec, lengths):
        r = self.recurrence(rs, h0.shape[-2])

        def step(carry, inputs):
            hp, cp = carry
            xw, t = inputs
            hn, cn = self.step(r, peep, bias_rec, hp, cp, xw)
            hn = self.store(hn)
            cn = None if cn is None else self.store(cn)
            if lengths is not None:  # past its length a sequence keeps its last states
                valid = (t < lengths)[:, None]
                hn = jnp.where(valid, hn, hp)
                cn = None if cn is None else jnp.where(valid, cn, cp)
            return (hn, cn), (hn, cn)

        (h, c), (hs, cs) = lax.scan(step, (h0, c0), (proj, jnp.arange(proj.shape[0], dtype=np.int32)))
        return hs, cs, h, c

    # -- derivative
    def jvp(self, primals, tangents):
        proj, rs, h0, c0, peep, bias_rec, lengths = primals
        dproj, drs, dh0, dc0, dpeep, dbias_rec, _ = tangents
        ct, hid = self.ct, self.hidden
        hs, cs, h, c = self.scan(*primals)
        # What reverse mode keeps (the network's jax.checkpoint policy): the states, no more.
        hs = checkpoint_name(hs, STATE_NAME)
        cs = None if cs is None else checkpoint_name(cs, STATE_NAME)
        hp = jnp.concatenate([h0[None], hs[:-1]], axis=0)  # Ht-1 at every step
        hf = hp.astype(ct)
        gates = proj[..., :2 * hid] if self.short == "GRU" else proj
        rows = rs[..., :2 * hid, :] if self.short == "GRU" else rs
        gates = gates + self.recurrent_all(hp, rows)
        du = dproj[..., :2 * hid] if self.short == "GRU" else dproj  # the gates' tangent but Ht-1's
        du = du + self.recurrent_all(hp, drs[..., :2 * hid, :] if self.short == "GRU" else drs)
        if self.short == "RNN":
            _, (coef,) = _partials(lambda g: self.act(0, g), gates)
            xs = (du, coef)
        elif self.short == "LSTM":
            cf = jnp.concatenate([c0[None], cs[:-1]], axis=0).astype(ct)
            gi, go, gf, gc = (gates[..., k * hid:(k + 1) * hid] for k in range(4))
            cn, dc = _partials(lambda *a: self.lstm_c(peep, *a), gi, gf, gc, cf)
            _, dh = _partials(lambda *a: self.lstm_h(peep, *a), go, cn)
            if dpeep is not None:
                du = du + jnp.concatenate([dpeep[0] * cf, dpeep[1] * cn, dpeep[2] * cf, jnp.zeros_like(cf)], -1)
            zero = jnp.zeros_like(cf)  # Ct's partials by gate (i, o, f, c): o enters Ht only
            xs = (du, jnp.stack([dc[0], zero, zero if self.couple else dc[1], dc[2]], -2), dc[3], dh[0], dh[1])
        elif self.lbr:
            lin = self.recurrent_all(hp, rs[..., 2 * hid:, :])
            lin = lin if bias_rec is None else lin + bias_rec
            dlin = self.recurrent_all(hp, drs[..., 2 * hid:, :])
            dlin = dlin if dbias_rec is None else dlin + dbias_rec
            _, d = _partials(self.gru_lbr, gates[..., :hid], gates[..., hid:], proj[..., 2 * hid:], lin, hf)
            xs = (jnp.concatenate([du, dlin], -1), d[2] * dproj[..., 2 * hid:], jnp.stack(d[:2] + d[3:4], -2), d[4])
        else:
            gated, dg = _partials(self.gru_gated, gates[..., hid:], hf)
            gated = gated.astype(self.st)
            gh = proj[..., 2 * hid:] + self.recurrent_all(gated, rs[..., 2 * hid:, :])
            _, dn = _partials(self.gru_h, gates[..., :hid], gh, hf)
            dgh = dproj[..., 2 * hid:] + self.recurrent_all(gated, drs[..., 2 * hid:, :])
            zero = jnp.zeros_like(hf)  # by gate (z, r): the gated state takes r, Ht z
            xs = (du, dgh, jnp.stack([zero, dg[0]], -2), dg[1], jnp.stack([dn[0], zero], -2), dn[1], dn[2])
        t = jnp.arange(proj.shape[0], dtype=np.int32)
        r = self.recurrence(rs, h0.shape[-2])

        def step(carry, inputs):
            dhp, dcp = carry
            xs, t = inputs
            dhn, dcn = self.tangent_step(r, dhp, dcp, *xs)
            dhn = dhn.astype(self.st)
            dcn = None if dcn is None else dcn.astype(self.st)
            if lengths is not None:
                valid = (t < lengths)[:, None]
                dhn = jnp.where(valid, dhn, dhp)
                dcn = None if dcn is None else jnp.where(valid, dcn, dcp)
            return (dhn, dcn), (dhn, dcn)

        (dh, dc), (dhs, dcs) = lax.scan(step, (dh0, dc0), (xs, t))
        return (hs, cs, h, c), (dhs, dcs, dh, dc)

    def tangent_step(self, r, dhp, dcp, *xs):
        """One step's tangent: ``xs`` are the step's slices of what ``jvp`` made for every step, the
        partials by gate stacked on a gate axis, so that going back a step's gates' cotangent is one
        element-wise expression; ``r``: the network's ``_Recurrence``."""
        ct, hid = self.ct, self.hidden
        dhf = dhp.astype(ct)
        first, *rest = self.blocks()

        def by_gate(v):  # [(dirs,) batch, k hidden] -> [(dirs,) batch, k, hidden]
            return v.reshape(v.shape[:-1] + (v.shape[-1] // hid, hid))
        if self.short == "RNN":
            du, coef = xs
            return coef * (du + self.recurrent(dhp, r, first)), None
        if self.short == "LSTM":
            du, c_by_gate, c_by_c, h_by_o, h_by_c = xs
            dg = by_gate(du + self.recurrent(dhp, r, first))
            dcn = (c_by_gate * dg).sum(-2) + c_by_c * dcp.astype(ct)
            return h_by_o * dg[..., 1, :] + h_by_c * dcn, dcn
        if self.lbr:
            du, dx, h_by_gate, h_by_h = xs  # gates z, r and Ht-1*(Rh^T) + Rbh
            dg = by_gate(du + self.recurrent(dhp, r, rest[1]))
            return dx + (h_by_gate * dg).sum(-2) + h_by_h * dhf, None
        du, dgh, gated_by_gate, gated_by_h, h_by_gate, h_by_gh, h_by_h = xs
        dzr = by_gate(du + self.recurrent(dhp, r, first))
        dgated = ((gated_by_gate * dzr).sum(-2) + gated_by_h * dhf).astype(self.st)
        dgh = dgh + self.recurrent(dgated, r, rest[0])
        return (h_by_gate * dzr).sum(-2) + h_by_gh * dgh + h_by_h * dhf, None
