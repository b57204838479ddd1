#!/bin/bash
# Re-measurement on the device machine after changes that touch several issues, in one call
# (see benchmarks/README.md, "Re-measured: GEMM FLOAT16, CUMULATIVE_PRODUCT's kernel, MAX/MIN").
# Usage: bash benchmarks/remeasure_gpu.sh
# 1. tests/gpu_check.py of $OPS; 2. benchmarks/scan_kernel_check.py (the compiled scan kernels);
# 3. benchmarks/gemm_gpu.py; 4. benchmarks/issue11_gpu.py's scan group; 5. dmljax bench of
# $BENCH_OPS at 2^28 with the element-wise chains. Each step has its own time limit.
# Runs from a `git archive` of HEAD (devrun_head.tar, its commit in devrun_head.txt) extracted to
# /tmp/src, so that nothing uncommitted runs.
set -u
source benchmarks/devrun_setup.sh "env.txt"
python -c "import torch; print('torch', torch.__version__)" >> "$DEVRUN_ENV" 2>&1 || true
OPS=${OPS:-"GEMM ELEMENT_WISE_MAX ELEMENT_WISE_MIN CUMULATIVE_PRODUCT CUMULATIVE_SUMMATION"}
timeout ${CHECK_S:-100} python tests/gpu_check.py $OPS > "$OUT/gpu_check.txt" 2>&1; echo "gpu_check rc=$?"
tail -1 "$OUT/gpu_check.txt"; grep FAIL "$OUT/gpu_check.txt" | head -20
timeout ${SCAN_S:-110} python benchmarks/scan_kernel_check.py > "$OUT/scan_check.txt" 2>&1; echo "scan_check rc=$?"
tail -1 "$OUT/scan_check.txt"; grep FAIL "$OUT/scan_check.txt" | head -10
timeout ${GEMM_S:-100} python benchmarks/gemm_gpu.py "$OUT/gemm" > "$OUT/gemm_log.txt" 2>&1; echo "gemm rc=$?"
cat "$OUT/gemm_log.txt" | tail -20
timeout ${SCAN_BENCH_S:-140} python benchmarks/issue11_gpu.py "$OUT/scan" scan > "$OUT/scan_log.txt" 2>&1; echo "scan bench rc=$?"
grep -v "^$" "$OUT/scan_log.txt" | tail -30
BENCH_OPS=${BENCH_OPS:-"ELEMENT_WISE_MAX ELEMENT_WISE_MIN ELEMENT_WISE_IF"}
timeout ${CHAIN_S:-110} python -m dmljax.bench --ops $BENCH_OPS --sizes 28 --dtypes FLOAT32 FLOAT16 --no-torch \
  --no-compile --no-overhead --no-plots --out "$OUT/elementwise" > "$OUT/elementwise_log.txt" 2>&1; echo "bench rc=$?"
print_targets "$OUT/elementwise/results.json"
