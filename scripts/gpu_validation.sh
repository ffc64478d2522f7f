#!/usr/bin/env bash
# Validation run on a CUDA machine, from the source tree.  Writes into $OUT (default ./gpu-out):
#   env.txt (GPU, driver, versions, date), log.txt, reference.jsonl, bad.jsonl, validate.json
# Usage: scripts/gpu_validation.sh [TASK_GLOBS]   (comma-separated globs; run from the repo root)
# EVAL_FLAGS (default: --no-compile-baseline --baselines none) go to the reference eval.
set -uo pipefail
OUT=${OUT:-gpu-out}
mkdir -p "$OUT"
GLOB=${1:-*}
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
KBX="python3 -m kbx.cli"
{
  date -u +"date: %Y-%m-%dT%H:%M:%SZ"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
  python3 -c "import sys, torch, triton; print('python', sys.version.split()[0]); print('torch', torch.__version__); print('triton', triton.__version__)"
} > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"
RUN=$(mktemp -d)
{
  echo "== kbx eval solutions/reference --device cuda --tasks '$GLOB'"
  start=$(date +%s)
  $KBX eval solutions/reference --device cuda --tasks "$GLOB" --out "$RUN/ref" --jobs 8 ${EVAL_FLAGS:---no-compile-baseline --baselines none}
  echo "wall: $(( $(date +%s) - start )) s"
  cp "$RUN/ref/results.jsonl" "$OUT/reference.jsonl"
  echo "== kbx eval tests/bad --device cuda --tasks '$GLOB' (each folder names the verdict)"
  start=$(date +%s)
  $KBX eval tests/bad --device cuda --tasks "$GLOB" --out "$RUN/bad" --timeout-s 20 > /dev/null
  echo "wall: $(( $(date +%s) - start )) s"
  python3 scripts/bad_summary.py "$RUN/bad/results.jsonl" "$OUT/bad.jsonl"
  echo "== kbx validate --device cuda --tasks '$GLOB'"
  start=$(date +%s)
  $KBX validate --device cuda --tasks "$GLOB" --json "$OUT/validate.json"
  echo "validate exit: $?  wall: $(( $(date +%s) - start )) s"
} 2>&1 | tee "$OUT/log.txt"
