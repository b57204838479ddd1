#!/bin/bash
# The fused TOP_K threshold kernel and FLOAT16 POW's -inf stand-in on the device machine
# (benchmarks/README.md, "One threshold kernel, and POW's FLOAT16 stand-in"), in steps chosen by
# STEPS (default: all), each with its own time limit and files under $OUT:
#   sweep    benchmarks/threshold_kernel_sweep.py (sweep.txt)
#   pow      benchmarks/elementwise_variants_gpu.py of POW (pow/, pow.txt)
#   check    tests/gpu_check.py of TOP_K, TOP_K1 and ELEMENT_WISE_POW (gpu_check.txt), then
#            benchmarks/select_kernel_check.py (select_check.txt)
#   top_k    benchmarks/issue11_gpu.py's TOP_K group (top_k/)
# Runs from a `git archive` of HEAD (devrun_head.tar, its commit in devrun_head.txt) extracted to
# /tmp/src, so that nothing uncommitted runs. Usage: STEPS="sweep pow" bash benchmarks/top_k_pow_gpu.sh
set -u
source benchmarks/devrun_setup.sh "env.txt" chex
STEPS=${STEPS:-"sweep pow check top_k"}
for step in $STEPS; do
  case $step in
    sweep)
      timeout ${SWEEP_S:-330} python benchmarks/threshold_kernel_sweep.py > "$OUT/sweep.txt" 2>&1
      echo "sweep rc=$?"; grep -v "^jax" "$OUT/sweep.txt" | sed 's/rows of 32768 //' ;;
    pow)
      timeout ${POW_S:-150} python benchmarks/elementwise_variants_gpu.py "$OUT/pow" POW > "$OUT/pow.txt" 2>&1
      echo "pow rc=$?"; cat "$OUT/pow.txt" | tail -12 ;;
    check)
      timeout ${CHECK_S:-150} python tests/gpu_check.py TOP_K TOP_K1 ELEMENT_WISE_POW > "$OUT/gpu_check.txt" 2>&1
      echo "gpu_check rc=$?"; tail -1 "$OUT/gpu_check.txt"; grep FAIL "$OUT/gpu_check.txt" | head -10
      timeout ${SELECT_S:-300} python benchmarks/select_kernel_check.py > "$OUT/select_check.txt" 2>&1
      echo "select_check rc=$?"; tail -1 "$OUT/select_check.txt"; grep FAIL "$OUT/select_check.txt" | head -10 ;;
    top_k)
      timeout ${TOPK_S:-200} python benchmarks/issue11_gpu.py "$OUT/top_k" top_k > "$OUT/top_k.txt" 2>&1
      echo "top_k rc=$?"; tail -20 "$OUT/top_k.txt" ;;
  esac
done
