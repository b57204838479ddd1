#!/bin/bash
# The GPU benchmarks in turn (or the topics named), each script under its own time limit, its
# results in OUT/<topic>/ and its log beside them; first the environment (nvidia-smi, the versions,
# the commit) in OUT/env.txt. Run from the repository root, on a clean checkout of the commit to
# measure (every result records the commit and whether the tree had uncommitted changes):
#
#   bash benchmarks/run_gpu.sh OUT [TOPIC ...]
#
# OUT=benchmarks/results/h100 (or h200, ...) writes where benchmarks/README.md's figures come from.
# Topics: checks (the GPU correctness checks of tests/gpu/, logs only), suite, activations,
# reductions, data_movement, gemm, convolution, pooling, normalization, training, overhead; and,
# not in the default list (each takes minutes): chains (the element-wise chains and their parts),
# attention, recurrent, convolution_models (ResNet-50's, MobileNetV2's and the transposed shapes).
# LIMIT_S sets each script's time limit in seconds (default 600).
set -u
OUT=${1:?usage: bash benchmarks/run_gpu.sh OUT [TOPIC ...]}
shift
TOPICS=${*:-"checks suite activations reductions data_movement gemm convolution pooling normalization training overhead"}
LIMIT=${LIMIT_S:-600}
export XLA_PYTHON_CLIENT_PREALLOCATE=false PYTHONUNBUFFERED=1
mkdir -p "$OUT"
{
  nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv 2>/dev/null
  python3 -c "import jax, jaxlib, numpy; print('jax', jax.__version__, 'jaxlib', jaxlib.__version__, 'numpy', numpy.__version__)"
  git rev-parse HEAD 2>/dev/null
} > "$OUT/env.txt"

run() {  # run TOPIC LOG COMMAND...: the command under the time limit, its output in OUT/TOPIC/LOG
  local topic=$1 log=$2
  shift 2
  mkdir -p "$OUT/$topic"
  timeout "$LIMIT" "$@" > "$OUT/$topic/$log" 2>&1
  echo "$topic: $* -> rc $?"
}

for topic in $TOPICS; do
  case $topic in
    checks)
      run checks semantics.txt python3 tests/gpu/semantics.py
      run checks kernels.txt python3 tests/gpu/kernels.py
      run checks half_precision.txt python3 tests/gpu/half_precision.py ;;
    suite)
      run suite log.txt python3 benchmarks/suite/run.py --sizes 28 --dtypes FLOAT32 FLOAT16 --no-compile \
        --no-overhead --no-plots --quiet --out "$OUT/suite" ;;
    activations) run activations log.txt python3 benchmarks/activations/softmax.py --out "$OUT/activations" ;;
    reductions) run reductions log.txt python3 benchmarks/reductions/reductions.py --out "$OUT/reductions" ;;
    data_movement) run data_movement log.txt python3 benchmarks/data_movement/data_movement.py --out "$OUT/data_movement" ;;
    gemm) run gemm log.txt python3 benchmarks/gemm/gemm.py --out "$OUT/gemm" ;;
    convolution) run convolution log.txt python3 benchmarks/convolution/convolution.py --out "$OUT/convolution" ;;
    pooling) run pooling log.txt python3 benchmarks/pooling/pooling.py --out "$OUT/pooling" ;;
    normalization) run normalization log.txt python3 benchmarks/normalization/batch_normalization.py --out "$OUT/normalization" ;;
    training) run training log.txt python3 benchmarks/training/training_step.py --out "$OUT/training" ;;
    overhead) run overhead log.txt python3 benchmarks/overhead/per_call.py --out "$OUT/overhead" ;;
    chains)
      run elementwise chains.txt python3 benchmarks/elementwise/chains.py --out "$OUT/elementwise"
      run elementwise chain_parts.txt python3 benchmarks/elementwise/chain_parts.py --out "$OUT/elementwise" ;;
    attention) run attention log.txt python3 benchmarks/attention/attention.py --out "$OUT/attention" ;;
    recurrent) run recurrent log.txt python3 benchmarks/recurrent/recurrent.py --out "$OUT/recurrent" ;;
    convolution_models)
      run convolution resnet50.txt python3 benchmarks/convolution/resnet50.py --out "$OUT/convolution" \
        --batches 128 --budget-s "$(( LIMIT - 60 ))" ;;
    *) echo "unknown topic: $topic" ;;
  esac
done
