#!/bin/bash
# Issue 10 on the device machine (see benchmarks/README.md, "Activations on the H100").
# Usage: bash benchmarks/issue10_gpu.sh PART   (softmax | check | bench | all: the three in turn |
# rerun: gpu_check and the bench of $OPS, chains included, after a change | reduction: issue 11's
# first reductions and scans against jnp, benchmarks/reduction_gpu.py)
# Runs from a `git archive` of HEAD (devrun_head.tar, its commit in devrun_head.txt) extracted to
# /tmp/src, so that nothing uncommitted runs.
set -u
PART=${1:-softmax}
source benchmarks/devrun_setup.sh "env_$PART.txt"
ACTS="ACTIVATION_CELU ACTIVATION_ELU ACTIVATION_GELU ACTIVATION_HARD_SIGMOID ACTIVATION_HARD_SWISH
 ACTIVATION_IDENTITY ACTIVATION_LEAKY_RELU ACTIVATION_LINEAR ACTIVATION_PARAMETERIZED_RELU
 ACTIVATION_PARAMETRIC_SOFTPLUS ACTIVATION_RELU ACTIVATION_RELU_GRAD ACTIVATION_SCALED_ELU
 ACTIVATION_SCALED_TANH ACTIVATION_SHRINK ACTIVATION_SIGMOID ACTIVATION_SOFTPLUS ACTIVATION_SOFTSIGN
 ACTIVATION_SWISH ACTIVATION_TANH ACTIVATION_THRESHOLDED_RELU"
if [ "$PART" = all ]; then
  timeout 170 python tests/gpu_check.py > "$OUT/gpu_check.txt" 2>&1; echo "gpu_check rc=$?"
  tail -1 "$OUT/gpu_check.txt"; grep FAIL "$OUT/gpu_check.txt" | head -20
  timeout 200 python -m dmljax.bench --ops $ACTS --sizes 28 --dtypes FLOAT32 FLOAT16 --no-torch --no-compile \
    --no-overhead --out "$OUT/bench" > "$OUT/bench_log.txt" 2>&1; echo "bench rc=$?"
  grep -E "\*\*no\*\*" "$OUT/bench/results.md" | head -40
  timeout 200 python benchmarks/softmax_gpu.py "$OUT/softmax" > "$OUT/softmax_log.txt" 2>&1; echo "softmax rc=$?"
  grep -v "^ok" "$OUT/softmax_log.txt" | tail -14
  exit 0
fi
case "$PART" in
  reduction)
    timeout 400 python benchmarks/reduction_gpu.py "$OUT/reduction" > "$OUT/reduction_log.txt" 2>&1; echo "reduction rc=$?"
    tail -20 "$OUT/reduction_log.txt" ;;
  rerun)
    timeout 200 python tests/gpu_check.py > "$OUT/gpu_check.txt" 2>&1; echo "gpu_check rc=$?"
    tail -1 "$OUT/gpu_check.txt"; grep FAIL "$OUT/gpu_check.txt" | head -20
    timeout 300 python -m dmljax.bench --ops $OPS --sizes 28 --dtypes FLOAT32 FLOAT16 --no-torch --no-compile \
      --no-overhead --out "$OUT/rerun" > "$OUT/rerun_log.txt" 2>&1; echo "bench rc=$?"
    grep -E "^\| (ACTIV|ELEMENT|chain)" "$OUT/rerun/results.md" | head -60 ;;
  softmax)
    timeout 560 python benchmarks/softmax_gpu.py "$OUT/softmax" > "$OUT/softmax_log.txt" 2>&1; echo "softmax rc=$?"
    grep -v "^ok" "$OUT/softmax_log.txt" | tail -40 ;;
  check)
    timeout 560 python tests/gpu_check.py > "$OUT/gpu_check.txt" 2>&1; echo "gpu_check rc=$?"
    tail -3 "$OUT/gpu_check.txt"; grep FAIL "$OUT/gpu_check.txt" | head -40 ;;
  bench)
    OPS=${OPS:-$ACTS}
    timeout 560 python -m dmljax.bench --ops $OPS --sizes 28 --dtypes FLOAT32 FLOAT16 --no-torch --no-compile \
      --no-overhead --out "$OUT/${NAME:-bench}" > "$OUT/${NAME:-bench}_log.txt" 2>&1; echo "bench rc=$?"
    tail -60 "$OUT/${NAME:-bench}_log.txt" ;;
esac
