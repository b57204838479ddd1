#!/bin/bash
# The device runs of the 2026-11-26 sessions (benchmarks/README.md, "MAX_POOLING's kernel, POW's
# FLOAT16 stand-in, one TOP_K kernel tried", results/h100_session6/, and the sections after it),
# in steps chosen by STEPS (default: the first session's list below), each with its own time
# limit and files under $OUT:
#   sweep    benchmarks/threshold_kernel_sweep.py (sweep.txt)
#   pool     benchmarks/pool_kernel_check.py: MAX_POOLING's kernel checked and timed (pool.txt)
#   check    tests/gpu_check.py of TOP_K, TOP_K1, ELEMENT_WISE_POW and the MAX_POOLINGs, or CHECK_OPS (gpu_check.txt)
#   pow      benchmarks/elementwise_variants_gpu.py of POW (pow/, pow.txt)
#   powgrad  tests/ops/test_element_wise_math.py's POW tests, on the GPU (powgrad.txt)
#   select   benchmarks/select_kernel_check.py (select_check.txt)
#   top_k    benchmarks/issue11_gpu.py's TOP_K group (top_k/)
#   scan     benchmarks/scan_kernel_check.py (scan_check.txt)
#   prodsweep benchmarks/scan_product_sweep.py over rows of 8,192 and 65,536 (product_sweep_*.txt)
#   scan11   benchmarks/issue11_gpu.py's scan group (scan11/)
#   scandef  benchmarks/scan_default_check.py: CUMULATIVE_PRODUCT's default call beside the sweep's settings (scan_default.txt)
#   scantile benchmarks/scan_default_check.py with SCAN_DEFAULT_SETTINGS=tiles: the sub-block tile kernel
#            (scan_tiles.txt, or $SCANTILE_OUT.txt; SCAN_DEFAULT_TOTAL elements)
#   scanrev  benchmarks/scan_product_sweep.py: CUMULATIVE_SUMMATION over rows of 65,536 (its reverse by Triton's
#            reverse scan) by block and read-ahead, 2^28 elements; CUMULATIVE_PRODUCT over 1,024 rows of 65,536
#            (2^26 elements) by warps (scanrev_*.txt)
#   prefetch benchmarks/scan_product_sweep.py with and without the loops' read-ahead (scan_kernels.PREFETCH):
#            CUMULATIVE_PRODUCT over rows of 65,536 and 8,192 and CUMULATIVE_SUMMATION over rows of 65,536,
#            2^28 elements (prefetch_*.txt)
#   convprobe benchmarks/conv_flush_probe.py: CONVOLUTION FLOAT32's flush, and 1 x 1 as a dot (conv_probe.txt)
#   convpallas benchmarks/conv_pallas_probe.py: a Pallas FLOAT32 convolution with the flushes in its loads (conv_pallas.txt)
#   convkernel benchmarks/conv_kernel_check.py: CONVOLUTION's FLOAT32 kernel against the reference and the XLA formula (conv_kernel_check.txt)
#   convgeom benchmarks/conv_geometry_gpu.py: the kernel against cuDNN's path for strided and unpadded geometries (conv_geometry.txt)
#   convcheck tests/gpu_check.py of CONVOLUTION (gpu_check_conv.txt)
#   issue12  benchmarks/issue12_gpu.py's pool group (issue12/)
#   conv12   benchmarks/issue12_gpu.py's conv group (conv12/)
#   powvar   benchmarks/pow_variants_gpu.py: what POW's rules cost (pow_variants.txt)
#   powncu   benchmarks/pow_ncu_gpu.py under Nsight Compute: registers, occupancy and instructions of
#            POW's forms' kernels (pow_ncu.csv)
#   sweeprank benchmarks/threshold_kernel_sweep.py RANK: K = 64, 128 and 256 ranked by the third kernel or sorted by XLA (sweep_rank.txt)
#   sweepq   benchmarks/threshold_kernel_sweep.py QUICK: the defaults only (sweep_quick.txt)
#   basetopk the sweepq step on the commit in devrun_base.tar (devrun_base.txt), extracted to /tmp/base:
#            the baseline of a TOP_K change, on the same machine (base_sweep_quick.txt)
#   basepow  the pow step on the commit in devrun_base.tar (devrun_base.txt), extracted to /tmp/base:
#            the baseline of a POW change, on the same machine (base_pow/, base_pow.txt)
# Runs from a `git archive` of HEAD (devrun_head.tar, its commit in devrun_head.txt) extracted to
# /tmp/src, so that nothing uncommitted runs. Usage: STEPS="pool check" bash benchmarks/session_gpu.sh
set -u
source benchmarks/devrun_setup.sh "env.txt" chex
STEPS=${STEPS:-"sweep pool check pow powgrad select top_k scan prodsweep scan11 convprobe convcheck issue12"}
for step in $STEPS; do
  case $step in
    sweep)
      timeout ${SWEEP_S:-330} python benchmarks/threshold_kernel_sweep.py > "$OUT/sweep.txt" 2>&1
      echo "sweep rc=$?"; grep -v "^jax" "$OUT/sweep.txt" | sed 's/rows of 32768 //' ;;
    pool)
      timeout ${POOL_S:-240} python benchmarks/pool_kernel_check.py > "$OUT/pool.txt" 2>&1
      echo "pool rc=$?"; grep -E "FAIL|passed|copy/this" "$OUT/pool.txt" | sed 's/  */ /g' ;;
    check)
      timeout ${CHECK_S:-200} python tests/gpu_check.py ${CHECK_OPS:-TOP_K TOP_K1 ELEMENT_WISE_POW MAX_POOLING \
        MAX_POOLING1 MAX_POOLING2} > "$OUT/gpu_check.txt" 2>&1
      echo "gpu_check rc=$?"; tail -1 "$OUT/gpu_check.txt"; grep FAIL "$OUT/gpu_check.txt" | head -10 ;;
    pow)
      timeout ${POW_S:-150} python benchmarks/elementwise_variants_gpu.py "$OUT/pow" POW > "$OUT/pow.txt" 2>&1
      echo "pow rc=$?"; tail -12 "$OUT/pow.txt" ;;
    powgrad)
      timeout ${POWGRAD_S:-150} python -m pytest -q -o addopts="" -p no:cacheprovider tests/ops/test_element_wise_math.py \
        -k "pow" > "$OUT/powgrad.txt" 2>&1
      echo "powgrad rc=$?"; tail -3 "$OUT/powgrad.txt" ;;
    select)
      timeout ${SELECT_S:-300} python benchmarks/select_kernel_check.py > "$OUT/select_check.txt" 2>&1
      echo "select_check rc=$?"; tail -1 "$OUT/select_check.txt"; grep FAIL "$OUT/select_check.txt" | head -10 ;;
    top_k)
      timeout ${TOPK_S:-200} python benchmarks/issue11_gpu.py "$OUT/top_k" top_k > "$OUT/top_k.txt" 2>&1
      echo "top_k rc=$?"; tail -24 "$OUT/top_k.txt" ;;
    scan)
      timeout ${SCAN_S:-240} python benchmarks/scan_kernel_check.py > "$OUT/scan_check.txt" 2>&1
      echo "scan_check rc=$?"; tail -1 "$OUT/scan_check.txt"; grep FAIL "$OUT/scan_check.txt" | head -10 ;;
    prodsweep)
      SWEEP_ROW=8192 SWEEP_BLOCKS=512,1024,2048,8192 SWEEP_WARPS=1,2,4,8 timeout ${PSWEEP_S:-200} \
        python benchmarks/scan_product_sweep.py > "$OUT/product_sweep_8192.txt" 2>&1
      echo "product sweep rc=$?"; grep "^best" "$OUT/product_sweep_8192.txt"
      SWEEP_ROW=65536 SWEEP_BLOCKS=1024,2048 SWEEP_WARPS=2,4 timeout ${PSWEEP_S:-200} \
        python benchmarks/scan_product_sweep.py > "$OUT/product_sweep_65536.txt" 2>&1
      echo "product sweep rc=$?"; grep -v "^jax" "$OUT/product_sweep_65536.txt" ;;
    prefetch)
      for row in 65536 8192; do
        SWEEP_TOTAL=268435456 SWEEP_ROW=$row SWEEP_BLOCKS=1024,2048 SWEEP_WARPS=1,2,4 SWEEP_PREFETCH=1,0 \
          timeout ${PREFETCH_S:-200} python benchmarks/scan_product_sweep.py > "$OUT/prefetch_product_$row.txt" 2>&1
        echo "prefetch product $row rc=$?"; grep -v "^jax" "$OUT/prefetch_product_$row.txt" | grep -v copy | sed 's/  */ /g'
      done
      SWEEP_OP=sum SWEEP_TOTAL=268435456 SWEEP_ROW=65536 SWEEP_BLOCKS=4096,8192 SWEEP_PREFETCH=1,0 \
        timeout ${PREFETCH_S:-200} python benchmarks/scan_product_sweep.py > "$OUT/prefetch_sum_65536.txt" 2>&1
      echo "prefetch sum rc=$?"; grep -v "^jax" "$OUT/prefetch_sum_65536.txt" | sed 's/  */ /g' ;;
    scanrev)
      SWEEP_OP=sum SWEEP_TOTAL=268435456 SWEEP_ROW=65536 SWEEP_BLOCKS=4096,8192 SWEEP_PREFETCH=d,0 \
        timeout ${PREFETCH_S:-200} python benchmarks/scan_product_sweep.py > "$OUT/scanrev_sum_65536.txt" 2>&1
      echo "scanrev sum rc=$?"; grep -v "^jax" "$OUT/scanrev_sum_65536.txt" | sed 's/  */ /g'
      SWEEP_ROW=65536 SWEEP_BLOCKS=1024 SWEEP_WARPS=1,2,4 SWEEP_PREFETCH=1,0 \
        timeout ${PREFETCH_S:-200} python benchmarks/scan_product_sweep.py > "$OUT/scanrev_product_65536.txt" 2>&1
      echo "scanrev product rc=$?"; grep "^best" "$OUT/scanrev_product_65536.txt" ;;
    scandef)
      timeout ${SCANDEF_S:-240} python benchmarks/scan_default_check.py > "$OUT/scan_default.txt" 2>&1
      echo "scandef rc=$?"; grep -v "^jax" "$OUT/scan_default.txt" | grep -v " copy " | sed 's/  */ /g' ;;
    scantile)
      f="$OUT/${SCANTILE_OUT:-scan_tiles}.txt"
      SCAN_DEFAULT_SETTINGS=tiles timeout ${SCANDEF_S:-300} python benchmarks/scan_default_check.py > "$f" 2>&1
      echo "scantile rc=$?"; grep -v "^jax" "$f" | grep -v " copy " | sed 's/  */ /g' ;;
    scan11)
      timeout ${SCAN11_S:-200} python benchmarks/issue11_gpu.py "$OUT/scan11" scan > "$OUT/scan11.txt" 2>&1
      echo "scan11 rc=$?"; grep -E "PRODUCT|SUMMATION rows of 65536" "$OUT/scan11.txt" | sed 's/  */ /g' ;;
    convprobe)
      timeout ${CONV_S:-150} python benchmarks/conv_flush_probe.py > "$OUT/conv_probe.txt" 2>&1
      echo "conv probe rc=$?"; grep -v "^jax" "$OUT/conv_probe.txt" | sed 's/  */ /g' ;;
    convpallas)
      timeout ${CONVP_S:-400} python benchmarks/conv_pallas_probe.py > "$OUT/conv_pallas.txt" 2>&1
      echo "conv pallas rc=$?"; grep -v "^jax" "$OUT/conv_pallas.txt" | sed 's/  */ /g' ;;
    convkernel)
      timeout ${CONVK_S:-200} python benchmarks/conv_kernel_check.py > "$OUT/conv_kernel_check.txt" 2>&1
      echo "conv kernel check rc=$?"; tail -1 "$OUT/conv_kernel_check.txt"; grep FAIL "$OUT/conv_kernel_check.txt" | head -10 ;;
    convgeom)
      timeout ${CONVG_S:-240} python benchmarks/conv_geometry_gpu.py > "$OUT/conv_geometry.txt" 2>&1
      echo "conv geometry rc=$?"; grep -v "^jax" "$OUT/conv_geometry.txt" | sed 's/  */ /g' ;;
    convcheck)
      timeout ${CONVCHECK_S:-150} python tests/gpu_check.py CONVOLUTION > "$OUT/gpu_check_conv.txt" 2>&1
      echo "gpu_check CONVOLUTION rc=$?"; tail -1 "$OUT/gpu_check_conv.txt"; grep FAIL "$OUT/gpu_check_conv.txt" | head -5 ;;
    issue12)
      timeout ${ISSUE12_S:-150} python benchmarks/issue12_gpu.py "$OUT/issue12" pool > "$OUT/issue12.txt" 2>&1
      echo "issue12 rc=$?"; tail -12 "$OUT/issue12.txt" ;;
    conv12)
      timeout ${CONV12_S:-240} python benchmarks/issue12_gpu.py "$OUT/conv12" conv > "$OUT/conv12.txt" 2>&1
      echo "conv12 rc=$?"; grep -i "FLOAT32" "$OUT/conv12.txt" | tail -16 ;;
    powncu)
      timeout ${POWNCU_S:-280} ncu --csv --metrics launch__registers_per_thread,launch__block_size,launch__grid_size,\
sm__warps_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum,gpu__time_duration.sum,\
dram__throughput.avg.pct_of_peak_sustained_elapsed python benchmarks/pow_ncu_gpu.py > "$OUT/pow_ncu.csv" 2> "$OUT/pow_ncu.err"
      echo "powncu rc=$?"; tail -3 "$OUT/pow_ncu.err" ;;
    powvar)
      timeout ${POWVAR_S:-200} python benchmarks/pow_variants_gpu.py > "$OUT/pow_variants.txt" 2>&1
      echo "powvar rc=$?"; cat "$OUT/pow_variants.txt" | tail -14 ;;
    sweeprank)
      timeout ${SWEEP_S:-330} python benchmarks/threshold_kernel_sweep.py RANK > "$OUT/sweep_rank.txt" 2>&1
      echo "sweeprank rc=$?"; grep -v "^jax" "$OUT/sweep_rank.txt" | grep -v "copy " | sed 's/rows of 32768 //; s/  */ /g' ;;
    sweepq)
      timeout ${SWEEP_S:-330} python benchmarks/threshold_kernel_sweep.py QUICK > "$OUT/sweep_quick.txt" 2>&1
      echo "sweepq rc=$?"; grep -v "^jax" "$OUT/sweep_quick.txt" | grep -v "lax.top_k\|copy " | sed 's/rows of 32768 //; s/  */ /g' ;;
    basetopk)
      rm -rf /tmp/base && mkdir -p /tmp/base && tar -xf "$REPO/devrun_base.tar" -C /tmp/base
      cat "$REPO/devrun_base.txt" > "$OUT/env_base.txt" 2>/dev/null
      (cd /tmp/base && PYTHONPATH=/tmp/base timeout ${SWEEP_S:-330} python benchmarks/threshold_kernel_sweep.py QUICK \
        > "$OUT/base_sweep_quick.txt" 2>&1)
      echo "basetopk rc=$?"; grep -v "^jax" "$OUT/base_sweep_quick.txt" | grep -v "lax.top_k\|copy " | sed 's/rows of 32768 //; s/  */ /g' ;;
    basepow)
      rm -rf /tmp/base && mkdir -p /tmp/base && tar -xf "$REPO/devrun_base.tar" -C /tmp/base
      cat "$REPO/devrun_base.txt" > "$OUT/env_base.txt" 2>/dev/null
      (cd /tmp/base && PYTHONPATH=/tmp/base timeout ${POW_S:-150} python benchmarks/elementwise_variants_gpu.py \
        "$OUT/base_pow" POW > "$OUT/base_pow.txt" 2>&1)
      echo "basepow rc=$?"; tail -12 "$OUT/base_pow.txt" ;;
  esac
done
