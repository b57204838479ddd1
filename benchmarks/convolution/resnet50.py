"""Every convolution of ResNet-50 (and MobileNetV2's depthwise and grouped ones, and transposed
convolutions: CONVOLUTION's BACKWARD direction), forward, backward-data and backward-filter, NCHW
and NHWC memory, FLOAT16 and FLOAT32, against lax and torch (cuDNN) in one run; and for each shape
every form CONVOLUTION can take, so that kernels/convolution_gemm.py's RULE and
kernels/convolution_phases.py's RULE['cuda'] are read off one run.

    python benchmarks/convolution/resnet50.py [--out DIR] [--groups resnet50,mobilenet_v2,transposed]
        [--batches 32,128] [--dtypes float16,float32] [--layouts NCHW,NHWC] [--windows 1,3,7] [--labels " s2"]
        [--forms xla,rows,columns,phases,rule,taps,depthwise,unflushed]
        [--budget-s 360] [--no-torch] [--filter-gradient partials|product|xla]
    (SMOKE=1: small shapes, any machine)

Per shape, batch, type, layout and direction:
- dmljax ``xla``: dmljax.convolution with every form and kernel off (XLA's convolution between
  the FLOAT32 flush passes); ``rows`` and ``columns``: the two matrix-product forms
  (kernels/convolution_gemm.py), forced (``force_kernels``: a private switch, for measuring the
  rule) where the window is 1 x 1; ``phases``: BACKWARD with strides as forward convolutions of
  its output's phases (kernels/convolution_phases.py), forced the same way, and ``rule``: the
  program as the rules stand (a form for each direction); ``taps``: the FLOAT32 Pallas kernel
  where its rule takes it; ``depthwise``: the FLOAT32 depthwise kernels
  (kernels/convolution_depthwise.py), forced in every direction where they can run (the input's
  gradient at unit strides), so that its rule's constants are read off one run. ``unflushed``
  (only where --forms names it): ``xla`` with the FLOAT32 flushes taken out, against DirectML's
  denormal rule: what the flush passes cost, never a form the operator takes.
  FLOAT16 accumulates in FLOAT32, FLOAT32 is true FLOAT32 (never TF32). NHWC: the caller's NHWC
  input, HWIO filter and NHWC cotangent seen as logical NCHW around the operator in one jit, as a
  DirectML desc's strides would give them.
- ``lax``: lax.conv_general_dilated in the layout's own dimension numbers (FLOAT32 at precision
  HIGHEST, FLOAT16 in and out); its gradients by jax.vjp.
- ``torch``: torch.nn.functional's convolution and aten's convolution_backward (cuDNN, benchmark
  mode, TF32 off; channels_last for NHWC), CUDA events over 20 calls, where torch sees a GPU.

Directions: ``fwd`` the output; ``bwd_data`` the input's gradient (jax.vjp by the input alone);
``bwd_filter`` the filter's. Time: device time where the backend records it (CUPTI kernel
durations: benchmarks/common.py), else the host clock. A case that fails is reported and the run
goes on; cases not started within ``--budget-s`` seconds are listed as skipped, so one command
stays within its time. Writes <group>.json and <group>.md for each group run, and rule.json and
rule.md: for each kind of 1 x 1 call and type, and each kind of BACKWARD call with strides, type
and direction, each form's total time over the run's shapes and layouts (and directions, for the
1 x 1 calls) and its worst ratio to the best form, and the RULE entry they give; and for the 1 x 1
calls with NCHW memory, packed.md: by output size, each form's time against XLA's convolution and
the fastest, which give convolution_gemm.py's PACKED_RULE (the program's arrays NCHW as written:
dmljax.packed_memory, which a program of the operator alone takes by itself). Each NCHW point
also names the form PACKED_RULE takes and its ratios. ``--rule-from JSON...`` measures nothing and
writes rule.md and packed.md from earlier runs' points (at most 10 files, to DIR; default benchmarks/results/<device>/convolution).
``--filter-gradient METHOD`` makes every columns form's filter gradient take one method of
convolution_gemm.FILTER_GRADIENTS (the run's method says which); ``--rule-from`` of such runs writes
filter_gradient.md instead: per type and output size, each method's range of ratios to lax's filter
gradient, which give convolution_gemm.py's FILTER_GRADIENT.
"""

import argparse
import contextlib
import json
import os
import re
import sys
import time
import traceback
from pathlib import Path

sys.path[:0] = [str(Path(__file__).resolve().parents[1]), str(Path(__file__).resolve().parents[2])]
os.environ.setdefault("XLA_PYTHON_CLIENT_PREALLOCATE", "false")  # torch shares the GPU

import jax  # noqa: E402
import jax.numpy as jnp  # noqa: E402
import numpy as np  # noqa: E402
from jax import lax  # noqa: E402

import common  # noqa: E402
import dmljax  # noqa: E402
from dmljax._src import numerics  # noqa: E402  (the unflushed form: what the denormal rule costs)
from dmljax._src.kernel_seam import choose, force_kernels  # noqa: E402  (measuring the rule's forms)
from dmljax._src.kernels import convolution_gemm as gemm  # noqa: E402
from dmljax._src.kernels.convolution import CONVOLUTION_TAPS  # noqa: E402
from dmljax._src.kernels import convolution_depthwise as depthwise  # noqa: E402
from dmljax._src.kernels import convolution_phases as phases  # noqa: E402

HI = lax.Precision.HIGHEST
FORM_SWITCHES = {"rows": gemm.CONVOLUTION_GEMM_ROWS.name, "columns": gemm.CONVOLUTION_GEMM_COLUMNS.name,
                 "taps": CONVOLUTION_TAPS.name, "phases": phases.CONVOLUTION_PHASES.name,
                 "depthwise": depthwise.CONVOLUTION_DEPTHWISE.name}
DEPTHWISE = {"fwd": depthwise.CONVOLUTION_DEPTHWISE, "bwd_data": depthwise.CONVOLUTION_DEPTHWISE_DATA,
             "bwd_filter": depthwise.CONVOLUTION_DEPTHWISE_FILTER}
DIRECTIONS = ("fwd", "bwd_data", "bwd_filter")


def _c(label, cin, cout, size, k, stride=1, groups=1, transposed=False, pad=None, output_padding=0):
    return {"label": label, "cin": cin, "cout": cout, "size": size, "k": k, "stride": stride, "groups": groups,
            "transposed": transposed, "pad": k // 2 if pad is None else pad, "output_padding": output_padding}


def _resnet50():
    """ResNet-50's distinct convolutions (torchvision's: the stride on the 3 x 3), at 224 x 224."""
    out = [_c("conv1 3->64 224 7x7 s2", 3, 64, 224, 7, 2)]
    cin, size = 64, 56
    for width, first_stride in ((64, 1), (128, 2), (256, 2), (512, 2)):
        s = size // first_stride
        shapes = [(cin, width, size, 1, 1), (width, width, size, 3, first_stride), (width, 4 * width, s, 1, 1),
                  (cin, 4 * width, size, 1, first_stride), (4 * width, width, s, 1, 1), (width, width, s, 3, 1)]
        for ci, co, sz, k, st in shapes:
            label = f"{ci}->{co} {sz} {k}x{k}" + (f" s{st}" if st > 1 else "")
            if all(c["label"] != label for c in out):
                out.append(_c(label, ci, co, sz, k, st))
        cin, size = 4 * width, s
    return out


def _mobilenet_v2():
    """MobileNetV2's depthwise 3 x 3 convolutions (GroupCount = channels), its stem, a few of its
    1 x 1 projections, and a grouped 3 x 3 (ResNeXt-50's 32 groups)."""
    depthwise = [(32, 112, 1), (96, 112, 2), (144, 56, 1), (144, 56, 2), (192, 28, 1), (192, 28, 2), (384, 14, 1),
                 (576, 14, 1), (576, 14, 2), (960, 7, 1)]
    out = [_c("stem 3->32 224 3x3 s2", 3, 32, 224, 3, 2)]
    out += [_c(f"depthwise {c} {s} 3x3" + (" s2" if st > 1 else ""), c, c, s, 3, st, groups=c) for c, s, st in depthwise]
    out += [_c(f"{ci}->{co} {s} 1x1", ci, co, s, 1) for ci, co, s in
            ((32, 16, 112), (24, 144, 56), (144, 24, 56), (384, 64, 14), (960, 320, 7))]
    out.append(_c("grouped 32 128->128 56 3x3", 128, 128, 56, 3, groups=32))
    return out


def _transposed():
    """CONVOLUTION's BACKWARD direction (a transposed convolution): decoders' upsampling shapes."""
    return [_c("up 512->256 28 2x2 s2", 512, 256, 28, 2, 2, transposed=True, pad=0),
            _c("up 256->128 56 2x2 s2", 256, 128, 56, 2, 2, transposed=True, pad=0),
            _c("up 256->128 32 4x4 s2 p1", 256, 128, 32, 4, 2, transposed=True, pad=1),
            _c("up 128->64 64 4x4 s2 p1", 128, 64, 64, 4, 2, transposed=True, pad=1),
            _c("up 256->128 28 3x3 s2 p1 op1", 256, 128, 28, 3, 2, transposed=True, pad=1, output_padding=1),
            _c("back 256->256 28 3x3", 256, 256, 28, 3, 1, transposed=True),
            _c("back 1024->256 14 1x1", 1024, 256, 14, 1, 1, transposed=True),
            _c("back 256->1024 14 1x1", 256, 1024, 14, 1, 1, transposed=True)]


GROUPS = {"resnet50": _resnet50, "mobilenet_v2": _mobilenet_v2, "transposed": _transposed}


def _smoke(cases):
    """Small copies of two cases, a 1 x 1 and another, and of a transposed one with strides where
    the group has one (channels / 16, at most 8 x 8)."""
    picked = [c for c in cases if c["k"] == 1][:1] + [c for c in cases if c["k"] > 1][-1:]
    picked += [c for c in cases if c["transposed"] and c["stride"] > 1 and c not in picked][:1]
    out = []
    for c in picked:
        cin, cout = max(c["cin"] // 16, 2), max(c["cout"] // 16, 2)
        g = c["groups"] if c["groups"] == 1 else min(cin, cout)
        cin, cout = (cin, cout) if g == 1 else (g, g)
        out.append(dict(c, cin=cin, cout=cout, size=min(c["size"], 8), groups=g, label="smoke " + c["label"]))
    return out


def _out_size(c):
    if c["transposed"]:
        return (c["size"] - 1) * c["stride"] + c["k"] - 2 * c["pad"] + c["output_padding"]
    return (c["size"] + 2 * c["pad"] - c["k"]) // c["stride"] + 1


def _filter_shape(c):
    """dmljax's (and torch's) filter: FORWARD {O, C / G, k, k}; BACKWARD {C, O / G, k, k}."""
    g = c["groups"]
    return ((c["cin"], c["cout"] // g) if c["transposed"] else (c["cout"], c["cin"] // g)) + (c["k"], c["k"])


def _data(rng, c, batch, dtype):
    """Two input sets (x, w, dy) in NCHW / dmljax's filter layout, as NumPy arrays."""
    o = _out_size(c)
    sets = []
    for _ in range(2):
        x = rng.standard_normal((batch, c["cin"], c["size"], c["size"]), dtype=np.float32)
        w = rng.standard_normal(_filter_shape(c), dtype=np.float32) / np.sqrt(c["cin"] // c["groups"] * c["k"] ** 2)
        dy = rng.standard_normal((batch, c["cout"], o, o), dtype=np.float32)
        sets.append(tuple(a.astype(dtype) for a in (x, w, dy)))
    return sets


def _in_layout(sets, layout):
    """NHWC: input and cotangent NHWC, the filter HWIO (FORWARD) / HW + its two leading axes swapped."""
    if layout == "NCHW":
        return [tuple(map(jnp.asarray, s)) for s in sets]
    return [(jnp.asarray(x.transpose(0, 2, 3, 1)), jnp.asarray(w.transpose(2, 3, 1, 0)),
             jnp.asarray(dy.transpose(0, 2, 3, 1))) for x, w, dy in sets]


def _dmljax(c, layout):
    """dmljax.convolution for case ``c`` on the layout's arrays."""
    kw = dict(strides=(c["stride"],) * 2, start_padding=(c["pad"],) * 2, end_padding=(c["pad"],) * 2,
              group_count=c["groups"], direction="BACKWARD" if c["transposed"] else "FORWARD")
    if c["output_padding"]:
        kw["output_padding"] = (c["output_padding"],) * 2

    def conv(x, w):
        if layout == "NHWC":
            y = dmljax.convolution(jnp.transpose(x, (0, 3, 1, 2)), jnp.transpose(w, (3, 2, 0, 1)), **kw)
            return jnp.transpose(y, (0, 2, 3, 1))
        return dmljax.convolution(x, w, **kw)
    return conv


def _lax(c, layout, dtype):
    """lax's twin: FORWARD as it is; BACKWARD as the input-dilated convolution with the filter
    flipped and its two leading axes swapped group by group (done on the filter inside the call: a
    filter-sized pass)."""
    dn = ("NHWC", "HWIO", "NHWC") if layout == "NHWC" else ("NCHW", "OIHW", "NCHW")
    prec = dict(precision=HI) if dtype == np.float32 else {}
    s, p, k, g = c["stride"], c["pad"], c["k"], c["groups"]

    def conv(x, w):
        if not c["transposed"]:
            return lax.conv_general_dilated(x, w, (s, s), [(p, p)] * 2, dimension_numbers=dn, feature_group_count=g,
                                            **prec)
        oihw = jnp.transpose(w, (3, 2, 0, 1)) if layout == "NHWC" else w  # {C, O / G, k, k}
        ci, cog = oihw.shape[:2]
        t = oihw.reshape(g, ci // g, cog, k, k).swapaxes(1, 2).reshape(g * cog, ci // g, k, k)[:, :, ::-1, ::-1]
        t = jnp.transpose(t, (2, 3, 1, 0)) if layout == "NHWC" else t
        op = c["output_padding"]
        return lax.conv_general_dilated(x, t, (1, 1), [(k - 1 - p, k - 1 - p + op)] * 2, lhs_dilation=(s, s),
                                        dimension_numbers=dn, feature_group_count=g, **prec)
    return conv


def _direction(conv, direction):
    if direction == "fwd":
        return lambda x, w, dy: conv(x, w)
    if direction == "bwd_data":
        return lambda x, w, dy: jax.vjp(lambda a: conv(a, w), x)[1](dy)[0]
    return lambda x, w, dy: jax.vjp(lambda b: conv(x, b), w)[1](dy)[0]


def _facts(c, batch, dtype):
    """The facts CONVOLUTION's seam sees for the case (logical NCHW)."""
    z = (0, 0)
    pad = (c["pad"],) * 2
    return ((batch, c["cin"], c["size"], c["size"]), _filter_shape(c), np.dtype(dtype), not c["transposed"],
            c["groups"], (c["stride"],) * 2, (1, 1), pad, pad, (c["output_padding"],) * 2 if c["output_padding"] else z)


def _forms(c, batch, dtype):
    """The dmljax variants worth timing: xla always; rows and columns where the window is 1 x 1
    (and the call a matrix product: ``pointwise_kind``); phases for BACKWARD with strides
    (``phase_kind``); taps where its rule takes the call; depthwise where its kernels run."""
    facts = _facts(c, batch, dtype)
    forms = ["xla"]
    if gemm.pointwise_kind(*facts) is not None:
        forms += ["rows", "columns"]
    if phases.phase_kind(*facts) is not None:
        forms += ["phases", "rule"]
    if choose(CONVOLUTION_TAPS, facts=facts).kernel is not None:
        forms.append("taps")
    if depthwise.CONVOLUTION_DEPTHWISE.runs(*facts):
        forms.append("depthwise")
    return forms


def _depthwise_kind(c, batch, dtype):
    """The kind of call whose depthwise rule the point measures (by stride), or None."""
    return f"depthwise s{c['stride']}" if depthwise.CONVOLUTION_DEPTHWISE.runs(*_facts(c, batch, dtype)) else None


def _compile(fn, args, form):
    """``fn`` compiled for ``args`` with only ``form`` on (xla: every form and kernel off; rule: as
    the rules stand, a form for each direction)."""
    others = [n for f, n in FORM_SWITCHES.items() if f != form]
    if form == "rule":
        return common.compiled(fn, *args)
    if form == "xla":
        with dmljax.use_kernels(False, *FORM_SWITCHES.values()):
            return common.compiled(fn, *args)
    if form == "unflushed":
        with dmljax.use_kernels(False, *FORM_SWITCHES.values()), _unflushed():
            return common.compiled(fn, *args)
    with force_kernels(FORM_SWITCHES[form]), dmljax.use_kernels(False, *others):
        return common.compiled(fn, *args)


@contextlib.contextmanager
def _unflushed():
    """FLOAT32 denormals kept, against DirectML's rule (numerics.flush_denormals' select taken
    out while a program is traced): the ``unflushed`` form, which measures what the rule's
    passes over memory cost around XLA's convolution; never a form of the operator."""
    kept = numerics._flush_select
    numerics._flush_select = lambda x: x
    jax.clear_caches()  # JAX keeps the flush's traced program (a custom_jvp's) from earlier traces
    try:
        yield
    finally:
        numerics._flush_select = kept
        jax.clear_caches()


def _torch_times(c, batch, dtype, layouts):
    """{(layout, direction): seconds} of torch's cuDNN convolution, where torch sees a GPU."""
    torch = common.torch_cuda()
    if torch is None:
        return {}
    tdtype = torch.float16 if dtype == np.float16 else torch.float32
    o = _out_size(c)
    s, p, g, op = [c["stride"]] * 2, [c["pad"]] * 2, c["groups"], [c["output_padding"]] * 2
    out = {}
    for layout in layouts:
        fmt = torch.channels_last if layout == "NHWC" else torch.contiguous_format
        x = torch.randn(batch, c["cin"], c["size"], c["size"], device="cuda", dtype=tdtype).to(memory_format=fmt)
        w = torch.randn(*_filter_shape(c), device="cuda", dtype=tdtype).to(memory_format=fmt)
        dy = torch.randn(batch, c["cout"], o, o, device="cuda", dtype=tdtype).to(memory_format=fmt)
        tr = c["transposed"]
        fwd = ((lambda: torch.nn.functional.conv_transpose2d(x, w, stride=s, padding=p, output_padding=op,
                                                             groups=g)) if tr else
               (lambda: torch.nn.functional.conv2d(x, w, stride=s, padding=p, groups=g)))

        def backward(mask):
            return lambda: torch.ops.aten.convolution_backward(dy, x, w, None, s, p, [1, 1], tr, op, g, mask)
        for direction, call in (("fwd", fwd), ("bwd_data", backward([True, False, False])),
                                ("bwd_filter", backward([False, True, False]))):
            with torch.no_grad():
                out[(layout, direction)] = common.torch_ms(call, calls=20, warmup=3) / 1e3
    return out


def run_case(report, c, batch, dtype, layouts, use_torch, rng, only=()):
    dname = np.dtype(dtype).name
    kind = gemm.pointwise_kind(*_facts(c, batch, dtype))
    phase_kind = phases.phase_kind(*_facts(c, batch, dtype))
    flops = 2 * batch * c["cout"] * c["cin"] // c["groups"] * c["k"] ** 2 * (
        c["size"] ** 2 if c["transposed"] else _out_size(c) ** 2)
    sets = _data(rng, c, batch, dtype)
    forms = [f for f in _forms(c, batch, dtype) if not only or f in only] + [f for f in only if f == "unflushed"]
    calls = []
    for layout in layouts:
        d = _in_layout(sets, layout)
        for direction in DIRECTIONS:
            for form in forms:
                f = _compile(_direction(_dmljax(c, layout), direction), d[0], form)
                calls.append(((layout, direction, form), lambda i, f=f, d=d: f(*d[i])))
            f = jax.jit(_direction(_lax(c, layout, dtype), direction)).lower(*d[0]).compile()
            calls.append(((layout, direction, "lax"), lambda i, f=f, d=d: f(*d[i])))
    t = common.times([(" ".join(k), call) for k, call in calls])
    outputs = {k: np.asarray(call(0), np.float64) for k, call in calls}
    differences = {k: float(np.max(np.abs(v - outputs[k[:2] + ("lax",)])) /
                            max(float(np.max(np.abs(outputs[k[:2] + ("lax",)]))), 1e-30))
                   for k, v in outputs.items() if k[2] != "lax"}
    seconds = {k: t[" ".join(k)]["s"] for k, _ in calls}
    method = t[" ".join(calls[0][0])]["method"]
    if use_torch:
        seconds.update({(la, di, "torch"): v for (la, di), v in _torch_times(c, batch, dtype, layouts).items()})
    for layout in layouts:
        for direction in DIRECTIONS:
            ms = {v: seconds[(la, di, v)] * 1e3 for la, di, v in seconds if la == layout and di == direction}

            def versus(form):
                taken = ms.get(form)
                vs = [f"{ref} {taken / ms[ref]:.2f}x" for ref in ("lax", "torch") if ref in ms and taken]
                return f"{form}: {', '.join(vs) or '-'}"
            rule_form = _rule_form(c, batch, dtype, direction)
            # NCHW memory as the caller's arrays lie: the rule within dmljax.packed_memory (a program
            # of the operator alone takes it by itself), read off the same forms' times
            packed_form = _rule_form(c, batch, dtype, direction, packed=True) if layout == "NCHW" else None
            text = ", ".join(f"{v} {m:.4f}" for v, m in ms.items())
            worst = max(differences[(layout, direction, f)] for f in forms)
            packed = f"; packed memory's {versus(packed_form)}" if packed_form else ""
            report.point(f"{dname} b{batch:<3d} {layout} {c['label']:28s} {direction:10s} {text} ms; "
                         f"the rule's {versus(rule_form)}{packed}; max |dmljax - lax| / max |lax| {worst:.1e}",
                         dtype=dname, batch=batch, layout=layout, shape=c["label"], kind=kind,
                         phase_kind=phase_kind, depthwise_kind=_depthwise_kind(c, batch, dtype), direction=direction,
                         ms=ms, rule_form=rule_form, packed_rule_form=packed_form, positions=_out_size(c) ** 2,
                         tflops={v: flops / (m * 1e-3) / 1e12 for v, m in ms.items()},
                         difference_to_lax=worst, method=method)


def _rule_form(c, batch, dtype, direction, packed=False):
    """The form CONVOLUTION takes for the case's direction on CUDA as the rules stand (for BACKWARD
    with strides the "rule" program, which holds the phases' RULE['cuda'] form of each direction);
    ``packed``: within dmljax.packed_memory."""
    if packed:
        with dmljax.packed_memory():
            return _rule_form(c, batch, dtype, direction)
    facts = _facts(c, batch, dtype)
    if phases.phase_kind(*facts) is not None:
        return "rule"
    route = choose(gemm.CONVOLUTION_GEMM_COLUMNS, gemm.CONVOLUTION_GEMM_ROWS, CONVOLUTION_TAPS, facts=facts)
    if route.kernel is None and choose(DEPTHWISE[direction], facts=facts).kernel is not None:
        return "depthwise"
    if route.kernel is None:
        return "xla"
    return next(f for f, n in FORM_SWITCHES.items() if n == route.kernel.name)


RULES = (("kind", ("xla", "rows", "columns"), "RULE", False),  # kernels/convolution_gemm.py
         ("phase_kind", ("xla", "phases"), "RULE['cuda']", True),  # kernels/convolution_phases.py, per direction
         ("depthwise_kind", ("xla", "depthwise"), "convolution_depthwise", True))  # its constants, per direction


def _positions(p) -> int:
    """A point's output positions an image (read off its label where an older run's point lacks the field)."""
    if p.get("positions") is not None:
        return p["positions"]
    size, window = re.search(r" (\d+) (\d+)x\d+", p["shape"]).groups()
    stride = 2 if " s2" in p["shape"] else 1
    return ((int(size) - int(window)) // stride + 1) ** 2  # ResNet-50's 1 x 1 windows have no padding


def write_packed_rule(report, points):
    """For each (kind, type) of 1 x 1 call measured with NCHW memory (convolution_gemm.py's
    PACKED_RULE: the program's arrays NCHW as written) and each output size (positions an image):
    each form's time summed over the three directions and the shapes and batches of that size,
    its ratio to XLA's, each direction's range of ratios to XLA's, and the fastest form."""
    report.group = "packed"
    by = {}
    for p in points:
        if p.get("kind") is None or p["layout"] != "NCHW" or not all(f in p["ms"] for f in ("xla", "rows", "columns")):
            continue
        size = by.setdefault((p["kind"], p["dtype"]), {}).setdefault(_positions(p), {})
        size.setdefault((p["shape"], p["batch"]), {})[p["direction"]] = p["ms"]
    for (kind, dname), sizes in sorted(by.items()):
        for positions in sorted(sizes, reverse=True):
            shapes = [s for s in sizes[positions].values() if all(d in s for d in DIRECTIONS)]
            if not shapes:
                continue
            total = {f: sum(s[d][f] for s in shapes for d in DIRECTIONS) for f in ("xla", "rows", "columns")}
            best = min(total, key=total.get)
            ranges = {f: {d: (min(s[d][f] / s[d]["xla"] for s in shapes), max(s[d][f] / s[d]["xla"] for s in shapes))
                          for d in DIRECTIONS} for f in ("rows", "columns")}
            text = "; ".join(f"{f} {total[f]:.3f} ms ({total[f] / total['xla']:.2f}x xla: " + ", ".join(
                f"{d} {lo:.2f}-{hi:.2f}x" for d, (lo, hi) in ranges[f].items()) + ")" for f in ("rows", "columns"))
            report.point(f"packed memory, {kind!r}, {dname}, {positions} positions ({len(shapes)} shapes x batches): "
                         f"fastest {best}; xla {total['xla']:.3f} ms; {text}",
                         rule="PACKED_RULE", kind=kind, dtype=dname, positions=positions, shapes=len(shapes),
                         fastest=best, total_ms=total, ranges_over_xla=ranges)


FORCED_METHOD = re.compile(r"the columns form's filter gradient: (\w+)")


def write_filter_gradient(report, runs):
    """For the columns form's filter gradient (convolution_gemm.py's FILTER_GRADIENT), from runs of
    the 1 x 1 calls with NCHW memory each made with one method forced (``--filter-gradient``, read
    off the run's method): per type and output size (positions an image; the unit-stride calls,
    those the columns form takes), each method's range of ratios to lax's time over the shapes and
    batches, and the method whose worst ratio is least, which the rule takes."""
    report.group = "filter_gradient"
    by = {}
    for run in runs:
        method = FORCED_METHOD.search(run.get("method", ""))
        if method is None:
            continue
        for p in run["points"]:
            if p.get("kind") != "pointwise" or p["layout"] != "NCHW" or p["direction"] != "bwd_filter":
                continue
            if "columns" not in p["ms"] or "lax" not in p["ms"]:
                continue
            size = by.setdefault(p["dtype"], {}).setdefault(_positions(p), {})
            size.setdefault(method.group(1), {})[(p["shape"], p["batch"])] = p["ms"]["columns"] / p["ms"]["lax"]
    for dname, sizes in sorted(by.items()):
        for positions in sorted(sizes, reverse=True):
            methods = sizes[positions]
            points = set.intersection(*(set(m) for m in methods.values()))
            if not points:
                continue
            ranges = {m: (min(r[k] for k in points), max(r[k] for k in points)) for m, r in sorted(methods.items())}
            best = min(ranges, key=lambda m: ranges[m][1])
            report.point(f"FILTER_GRADIENT, {dname}, {positions} positions ({len(points)} shapes x batches): "
                         f"{best} (least worst ratio); the columns form's filter gradient over lax's: "
                         + "; ".join(f"{m} {lo:.2f}-{hi:.2f}x" for m, (lo, hi) in ranges.items()),
                         rule="FILTER_GRADIENT", dtype=dname, positions=positions, points=len(points), method=best,
                         ranges_over_lax=ranges)


def write_rule(report, points):
    """For each (kind, type) of 1 x 1 call measured (convolution_gemm.py's RULE), each (kind,
    type, direction) of BACKWARD call with strides (convolution_phases.py's RULE['cuda']) and of
    depthwise call by stride (convolution_depthwise.py's constants: the forward's rule,
    BACKWARD_DATA, BACKWARD_FILTER): each
    form's total time over the shapes, batches and layouts (and, for the 1 x 1 rule, directions),
    its worst ratio to the fastest form of a point, and the entry they give (the least total, xla
    where a form is ever 1.1x slower than xla)."""
    report.group = "rule"
    for field, candidates, name, per_direction in RULES:
        by = {}
        for p in points:
            if p.get(field) is None:
                continue
            key = (p[field], p["dtype"]) + ((p["direction"],) if per_direction else ())
            by.setdefault(key, []).append(p["ms"])
        for key in sorted(by):
            rows = by[key]
            forms = [f for f in candidates if all(f in r for r in rows)]
            if not forms or "xla" not in forms:  # a run of some forms alone (--forms) gives no entry
                continue
            total = {f: sum(r[f] for r in rows) for f in forms}
            worst = {f: max(r[f] / min(r[g] for g in forms) for r in rows) for f in forms}
            worst_xla = {f: max(r[f] / r["xla"] for r in rows) for f in forms}
            best = min(forms, key=lambda f: total[f])
            if worst_xla[best] > 1.1:
                best = "xla"
            report.point(f"{name}[{key!r}] = {best!r}   # " + "; ".join(
                f"{f}: total {total[f]:.3f} ms, worst {worst[f]:.2f}x the best, {worst_xla[f]:.2f}x xla" for f in forms)
                + f" ({len(rows)} points)", rule=name, kind=key[0], dtype=key[1], form=best, total_ms=total,
                worst=worst, worst_over_xla=worst_xla, points=len(rows))


def parse():
    _, rest = common.arguments()
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--groups", default="resnet50,mobilenet_v2,transposed")
    ap.add_argument("--batches", default="2" if common.SMOKE else "32,128")
    ap.add_argument("--dtypes", default="float16,float32")
    ap.add_argument("--layouts", default="NCHW,NHWC")
    ap.add_argument("--windows", default="", help="window sides to keep (1: the 1 x 1 calls the rule covers)")
    ap.add_argument("--labels", default="", help="keep the shapes whose label holds one of these comma-separated "
                    "pieces (' s2': the strided ones)")
    ap.add_argument("--budget-s", type=float, default=360.0)
    ap.add_argument("--forms", default="", help="the dmljax forms to time (default: every one a shape can take; "
                    "xla, rows, columns, phases, rule, taps, depthwise; unflushed: xla without the FLOAT32 flushes, "
                    "only where named)")
    ap.add_argument("--no-torch", action="store_true")
    ap.add_argument("--filter-gradient", default="", choices=("", *gemm.FILTER_GRADIENTS),
                    help="the method every columns form's filter gradient takes (convolution_gemm.FILTER_GRADIENTS; "
                    "default: its rule), recorded in the results' method")
    ap.add_argument("--rule-from", nargs="+", default=[], metavar="JSON",
                    help="measure nothing: write rule.md and packed.md from the points of these result files "
                    "(filter_gradient.md from runs made with --filter-gradient)")
    args = ap.parse_args(rest)
    groups = args.groups.split(",")
    bad = [g for g in groups if g not in GROUPS] + [la for la in args.layouts.split(",") if la not in ("NCHW", "NHWC")]
    bad += [d for d in args.dtypes.split(",") if d not in ("float16", "float32")]
    bad += [f for f in args.forms.split(",") if f and f not in ("xla", "rule", "unflushed", *FORM_SWITCHES)]
    if bad:
        ap.error(f"unknown {', '.join(bad)}: groups {', '.join(GROUPS)}; dtypes float16, float32; layouts NCHW, NHWC; "
                 f"forms xla, rule, {', '.join(FORM_SWITCHES)}")
    return args, groups


def main():
    args, groups = parse()
    if args.rule_from:
        runs = [json.loads(Path(f).read_text()) for f in args.rule_from]
        report = common.Report("convolution", "read from " + ", ".join(Path(f).name for f in args.rule_from))
        report.env = runs[0]["environment"]  # the runs' machine, not this one
        report.head = "; ".join(f"{Path(f).name}: {r['environment']['date']}, {r['environment']['device']}, jax "
                                f"{r['environment']['jax']}, commit {r['environment']['commit'][:12]}"
                                for f, r in zip(args.rule_from, runs))
        if all(FORCED_METHOD.search(r.get("method", "")) for r in runs):  # the filter gradient's runs
            write_filter_gradient(report, runs)
        else:
            measured = [p for r in runs for p in r["points"]]
            write_rule(report, measured)
            write_packed_rule(report, measured)
        report.write()
        return
    start = time.perf_counter()
    batches = [int(b) for b in args.batches.split(",")]
    dtypes = [np.dtype(d).type for d in args.dtypes.split(",")]
    layouts = args.layouts.split(",")
    gemm.FORCED_FILTER_GRADIENT = args.filter_gradient or None
    chosen = f"; the columns form's filter gradient: {args.filter_gradient}" if args.filter_gradient else ""
    report = common.Report("convolution", "per-call time (benchmarks/common.py), two input sets; torch: CUDA events"
                           + chosen)
    rng = np.random.default_rng(0)
    skipped = []
    for group in groups:
        report.group = group
        cases = GROUPS[group]()
        cases = _smoke(cases) if common.SMOKE else sorted(cases, key=lambda c: c["k"] != 1)  # 1 x 1 first
        if args.windows:
            cases = [c for c in cases if str(c["k"]) in args.windows.split(",")]
        if args.labels:
            cases = [c for c in cases if any(piece in c["label"] for piece in args.labels.split(","))]
        for dtype in dtypes:
            for batch in batches:
                for c in cases:
                    what = f"{group} {np.dtype(dtype).name} b{batch} {c['label']}"
                    if time.perf_counter() - start > args.budget_s:
                        skipped.append(what)
                        continue
                    try:
                        run_case(report, c, batch, dtype, layouts, not args.no_torch, rng,
                                 tuple(f for f in args.forms.split(",") if f))
                    except Exception:  # noqa: BLE001  (one case's failure is reported, the run goes on)
                        report.line(f"{what}: FAILED {traceback.format_exc(limit=3)[-600:]}")
        if skipped:
            report.line(f"skipped past the {args.budget_s:.0f} s budget: {'; '.join(skipped)}")
            skipped = []
    measured = [p for g in groups for p in report.points.get(g, [])]
    write_rule(report, measured)
    write_packed_rule(report, measured)
    report.write()


if __name__ == "__main__":
    main()
