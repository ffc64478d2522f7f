#!/usr/bin/env bash
# Where a GPU run's time goes: a small eval with per-stage times (lock waits included), one
# trusted baseline process timed on its own, and validate details for chosen tasks.  Writes
# env.txt, log.txt, diag.jsonl, validate.json into $OUT.
set -uo pipefail
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
TASKS=${TASKS:-'Activation/gelu,Math/rsqrt,Reduce/sum,Loss/cross_entropy,Index/scatter,Pooling/avg_pool1d,Optimizer/AdamW,Normalization/batch_norm'}
VTASKS=${VTASKS:-'LinearAlgebra/eig,LinearAlgebra/solve_symmetric_ldl'}
RUN=$(mktemp -d)
{
  bash scripts/gpu_env.sh
  echo "== validate details: $VTASKS"
  timeout 90 python3 -m kbx.cli validate --device cuda --tasks "$VTASKS" --json "$OUT/validate.json" 2>&1 | grep -v Warning | tail -25
  echo "== one baseline process (eager + compile, case 0)"
  /usr/bin/time -f "baseline process: %e s wall, %U s user" python3 -m kbx.evaluate.baseline_worker Math/rsqrt eager,compile 0 ""
  echo "== eval, eager baselines, jobs ${JOBS:-8}"
  start=$(date +%s)
  timeout 200 python3 -m kbx.cli eval solutions/reference --device cuda --tasks "$TASKS" --out "$RUN/d" --jobs ${JOBS:-8} --no-compile-baseline --baselines "$RUN/b.sqlite"
  echo "wall: $(( $(date +%s) - start )) s"
  cp "$RUN/d/results.jsonl" "$OUT/diag.jsonl"
  python3 - "$RUN/d/results.jsonl" <<'PY'
import json, sys
for line in open(sys.argv[1]):
    r = json.loads(line)
    print(r["task_id"], r["verdict"], r.get("duration_s"), r.get("stage_s"))
    for c in r.get("cases", []):
        print("   ", {k: (round(v, 4) if isinstance(v, float) else v) for k, v in c.items() if k != "label"})
PY
} 2>&1 | tee "$OUT/log.txt"
