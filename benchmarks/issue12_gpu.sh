#!/bin/bash
# Issue 12 on the device machine (see benchmarks/README.md, "Issue 12 on the H100").
# Usage: bash benchmarks/issue12_gpu.sh [OPS...]   gpu_check of the named operators (default:
# issue 12's that exist), then benchmarks/issue12_gpu.py over $BENCH_GROUPS (default: all groups).
# Runs from a `git archive` of HEAD (devrun_head.tar, its commit in devrun_head.txt) extracted to
# /tmp/src, so that nothing uncommitted runs.
set -u
source benchmarks/devrun_setup.sh "env.txt" optax tqdm
python -c "import torch; print('torch', torch.__version__, 'cudnn', torch.backends.cudnn.version())" >> "$DEVRUN_ENV" 2>&1 || true
if [ "${CHECK_S:-200}" != 0 ]; then
  OPS=${*:-$(python -c "import dmljax; print(' '.join(n.removeprefix('DML_OPERATOR_') for n, op in dmljax.registry().items() if op.spec.family in ('convolution', 'matrix', 'pooling', 'normalization', 'resample', 'training')))")}
  timeout ${CHECK_S:-200} python tests/gpu_check.py $OPS > "$OUT/gpu_check.txt" 2>&1; echo "gpu_check rc=$?"
  tail -1 "$OUT/gpu_check.txt"; grep FAIL "$OUT/gpu_check.txt" | head -20
fi
timeout ${BENCH_S:-360} python benchmarks/issue12_gpu.py "$OUT/issue12" ${BENCH_GROUPS:-} > "$OUT/issue12_log.txt" 2>&1; echo "bench rc=$?"
tail -60 "$OUT/issue12_log.txt"
