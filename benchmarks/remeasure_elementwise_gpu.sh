#!/bin/bash
# Issue 9's element-wise misses re-measured on the device machine in one call (benchmarks/README.md,
# "Re-measured: the element-wise misses"). Usage: bash benchmarks/remeasure_elementwise_gpu.sh
# 1. tests/gpu_check.py of the operators changed; 2. benchmarks/half_native_check.py (XLA's
# FLOAT16 math against float64 on this GPU); 3. benchmarks/elementwise_variants_gpu.py (single
# operators, the chains and their variants, POW's forward+backward); 4. dmljax bench of $BENCH_OPS
# at 2^28 with the chains (forward, forward+backward, targets). Each step has its own time limit.
# Runs from a `git archive` of HEAD (devrun_head.tar, its commit in devrun_head.txt) extracted to
# /tmp/src, so that nothing uncommitted runs.
set -u
source benchmarks/devrun_setup.sh "env.txt" chex
OPS=${OPS:-"ELEMENT_WISE_MAX ELEMENT_WISE_MIN ELEMENT_WISE_SQRT ELEMENT_WISE_LOG ELEMENT_WISE_ERF ELEMENT_WISE_TANH
  ELEMENT_WISE_SINH ELEMENT_WISE_COSH ELEMENT_WISE_POW ELEMENT_WISE_CONSTANT_POW ELEMENT_WISE_MODULUS_FLOOR"}
timeout ${CHECK_S:-150} python tests/gpu_check.py $OPS > "$OUT/gpu_check.txt" 2>&1; echo "gpu_check rc=$?"
tail -1 "$OUT/gpu_check.txt"; grep FAIL "$OUT/gpu_check.txt" | head -20
timeout ${HALF_S:-60} python benchmarks/half_native_check.py "$OUT/half_native_gpu.json" > "$OUT/half_native_gpu.txt" 2>&1
echo "half_native_check rc=$?"; cat "$OUT/half_native_gpu.txt"
timeout ${EW_S:-120} python benchmarks/elementwise_variants_gpu.py "$OUT/variants" > "$OUT/variants.txt" 2>&1; echo "variants rc=$?"
BENCH_OPS=${BENCH_OPS:-"$OPS ELEMENT_WISE_IF"}
timeout ${BENCH_S:-240} python -m dmljax.bench --ops $BENCH_OPS --sizes 28 --dtypes FLOAT32 FLOAT16 --no-torch \
  --no-compile --no-overhead --no-plots --out "$OUT/bench" > "$OUT/bench_log.txt" 2>&1; echo "bench rc=$?"
print_targets "$OUT/bench/results.json"
