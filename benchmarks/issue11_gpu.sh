#!/bin/bash
# Issue 11 on the device machine (see benchmarks/README.md, "Issue 11 on the H100").
# Usage: bash benchmarks/issue11_gpu.sh [OPS...]   gpu_check of the named operators (default:
# issue 11's), with SCAN_CHECK=1 benchmarks/scan_kernel_check.py (the compiled scan kernel), with
# SELECT_CHECK=1 benchmarks/select_kernel_check.py (the compiled TOP_K kernel), then
# benchmarks/issue11_gpu.py over $BENCH_GROUPS (default: all its groups).
# Runs from a `git archive` of HEAD (devrun_head.tar, its commit in devrun_head.txt) extracted to
# /tmp/src, so that nothing uncommitted runs.
set -u
source benchmarks/devrun_setup.sh "env.txt"
OPS=${*:-"REDUCE CAST JOIN SPLIT GATHER GATHER_ELEMENTS GATHER_ND GATHER_ND1 SCATTER_ELEMENTS SCATTER_ND ONE_HOT ARGMAX ARGMIN CUMULATIVE_SUMMATION CUMULATIVE_PRODUCT"}
timeout ${CHECK_S:-200} python tests/gpu_check.py $OPS > "$OUT/gpu_check.txt" 2>&1; echo "gpu_check rc=$?"
tail -1 "$OUT/gpu_check.txt"; grep FAIL "$OUT/gpu_check.txt" | head -20
if [ -n "${SCAN_CHECK:-}" ]; then
  timeout ${SCAN_S:-150} python benchmarks/scan_kernel_check.py > "$OUT/scan_check.txt" 2>&1; echo "scan_check rc=$?"
  tail -1 "$OUT/scan_check.txt"; grep FAIL "$OUT/scan_check.txt" | head -10
fi
if [ -n "${SELECT_CHECK:-}" ]; then
  timeout ${SELECT_S:-150} python benchmarks/select_kernel_check.py > "$OUT/select_check.txt" 2>&1; echo "select_check rc=$?"
  tail -1 "$OUT/select_check.txt"; grep FAIL "$OUT/select_check.txt" | head -10
fi
timeout ${BENCH_S:-360} python benchmarks/issue11_gpu.py "$OUT/issue11" ${BENCH_GROUPS:-} > "$OUT/issue11_log.txt" 2>&1; echo "bench rc=$?"
tail -45 "$OUT/issue11_log.txt"
