#!/bin/bash
# Issue 9 on the device machine, in one call per part (see benchmarks/README.md, "Element-wise
# family on the H100"). Usage: bash benchmarks/issue9_gpu.sh PART (check | bench-a | bench-b).
# Runs from a `git archive` of HEAD (devrun_head.tar, its commit in devrun_head.txt) extracted to
# /tmp/src, so that nothing uncommitted runs.
set -u
PART=${1:-check}
source benchmarks/devrun_setup.sh "env_$PART.txt"
case "$PART" in
  check)
    timeout 540 python tests/gpu_check.py > "$OUT/gpu_check.txt" 2>&1; echo "gpu_check rc=$?"
    tail -4 "$OUT/gpu_check.txt"; grep FAIL "$OUT/gpu_check.txt" | head -40 ;;
  rerun)
    timeout 240 python tests/gpu_check.py > "$OUT/gpu_check.txt" 2>&1; echo "gpu_check rc=$?"
    tail -1 "$OUT/gpu_check.txt"; grep FAIL "$OUT/gpu_check.txt" | head -20
    RERUN_OPS=${RERUN_OPS:-"ELEMENT_WISE_CEIL ELEMENT_WISE_FLOOR ELEMENT_WISE_ROUND ELEMENT_WISE_SIGN ELEMENT_WISE_SINH ELEMENT_WISE_COSH ELEMENT_WISE_TANH ELEMENT_WISE_POW ELEMENT_WISE_IF"}
    timeout 300 python -m dmljax.bench --ops $RERUN_OPS \
      --sizes 28 --dtypes FLOAT32 FLOAT16 --no-torch --no-compile --no-overhead --out "$OUT/${RERUN_NAME:-rerun}" \
      > "$OUT/${RERUN_NAME:-rerun}_log.txt" 2>&1; echo "bench rc=$?"
    print_targets "$OUT/${RERUN_NAME:-rerun}/results.json"
    ;;
  bench-a|bench-b)
    OPS=$(python - "$PART" <<'PY'
import sys, dmljax
names = sorted(n.removeprefix("DML_OPERATOR_") for n in dmljax.registry())
half = len(names) // 2
print(" ".join("DML_OPERATOR_" + n for n in (names[:half] if sys.argv[1] == "bench-a" else names[half:])))
PY
)
    EXTRA=""; [ "$PART" = bench-a ] && EXTRA="--no-chain"
    timeout 560 python -m dmljax.bench --ops $OPS --sizes 28 --dtypes FLOAT32 FLOAT16 --no-torch --no-compile \
      --no-overhead $EXTRA --out "$OUT/$PART" > "$OUT/${PART}_log.txt" 2>&1; echo "bench rc=$?"
    tail -3 "$OUT/${PART}_log.txt"
    python - "$OUT/$PART/results.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
missed = [t for t in r.get("targets", []) if not t["met"]]
print(f"targets: {len(r.get('targets', []))}, missed {len(missed)}")
for t in missed:
    print(f"  MISSED {t['target']}: {t['value']:.3f} (limit {t['limit']}, {t['basis']})")
print("wall_s", round(r["meta"].get("wall_s", 0)))
PY
    ;;
esac
