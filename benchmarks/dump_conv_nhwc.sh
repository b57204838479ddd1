#!/bin/bash
# XLA's optimized HLO on the device machine of the 3 x 3 FLOAT32 CONVOLUTION with NHWC memory seen as
# logical NCHW (issue12_gpu.py's _dml_nhwc) and its lax twin, batch 32, 64 -> 64 channels, 56 x 56
# (results/h100_session6/conv_pointwise/dump). Usage: bash benchmarks/dump_conv_nhwc.sh
source benchmarks/devrun_setup.sh env.txt chex && cd /tmp/src && mkdir -p $OUT/dump && XLA_FLAGS="--xla_dump_to=$OUT/dump --xla_dump_hlo_module_re=.*probe.* --xla_dump_hlo_as_text" python - <<'PY'
import jax, jax.numpy as jnp, numpy as np
from benchmarks.issue12_gpu import _dml_nhwc, _lax_nhwc
x = jnp.asarray(np.random.default_rng(0).standard_normal((32, 56, 56, 64), dtype=np.float32))
w = jnp.asarray(np.random.default_rng(1).standard_normal((3, 3, 64, 64), dtype=np.float32))
def probe_dml(x, w): return _dml_nhwc(x, w, 1, np.float32)
def probe_lax(x, w): return _lax_nhwc(x, w, 1, np.float32)
for f in (probe_dml, probe_lax):
    jax.block_until_ready(jax.jit(f)(x, w))
PY
cd $OUT/dump && ls | grep -v after_optimizations.txt | xargs rm -f; ls
