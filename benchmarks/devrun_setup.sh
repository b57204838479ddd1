# Sourced by the issue*_gpu.sh scripts on the device machine, from the repository root:
#   source benchmarks/devrun_setup.sh ENV_FILE [WHEEL ...]
# Extracts the `git archive` of HEAD (devrun_head.tar, its commit in devrun_head.txt) to /tmp/src
# and moves there, so that nothing uncommitted runs; installs jsonschema and the named wheels from
# the carried .whl folder where missing; sets OUT (default /tmp/out), REPO and PYTHONPATH; writes
# the GPU, its clocks, the versions and the commit to $OUT/ENV_FILE; defines print_targets.
OUT=${OUT:-/tmp/out}
mkdir -p "$OUT"
REPO=$(pwd)
DEVRUN_ENV="$OUT/$1"
shift
rm -rf /tmp/src && mkdir -p /tmp/src && tar -xf devrun_head.tar -C /tmp/src
cd /tmp/src
for wheel in jsonschema "$@"; do
  python -c "import $wheel" 2>/dev/null || pip install -q --no-index --find-links "$REPO/.whl" "$wheel" >/dev/null 2>&1
done
export PYTHONPATH=/tmp/src XLA_PYTHON_CLIENT_PREALLOCATE=false
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem,temperature.gpu --format=csv > "$DEVRUN_ENV"
python -c "import jax, jaxlib, numpy; print('jax', jax.__version__, 'jaxlib', jaxlib.__version__, 'numpy', numpy.__version__)" >> "$DEVRUN_ENV"
cat "$REPO/devrun_head.txt" >> "$DEVRUN_ENV" 2>/dev/null

print_targets() {  # every target in a dmljax bench results.json ($1), "ok" or "MISSED", one a line
  python - "$1" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
for t in r.get("targets", []):
    print(("ok     " if t["met"] else "MISSED ") + f"{t['target']}: {t['value']:.3f} (limit {t['limit']})")
PY
}
