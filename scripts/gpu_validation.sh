#!/usr/bin/env bash
# Validation run on a CUDA machine, from the source tree.  Writes into $OUT (default ./gpu-out):
#   env.txt (GPU, driver, versions, date), log.txt, reference.jsonl, bad.jsonl, validate.json
# Usage: scripts/gpu_validation.sh [TASK_GLOB]      (run from the repository root)
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
  $KBX eval solutions/reference --device cuda --tasks "$GLOB" --out "$RUN/ref"
  echo "wall: $(( $(date +%s) - start )) s"
  cp "$RUN/ref/results.jsonl" "$OUT/reference.jsonl"
  echo "== known-bad corpus on cuda"
  : > "$OUT/bad.jsonl"
  for d in tests/bad/*/; do
    v=$(basename "$d")
    $KBX eval "$d" --device cuda --out "$RUN/bad-$v" --timeout-s 20 > /dev/null
    python3 - "$v" "$RUN/bad-$v/results.jsonl" >> "$OUT/bad.jsonl" <<'PY'
import json, sys
want = sys.argv[1]
for line in open(sys.argv[2]):
    r = json.loads(line)
    print(json.dumps({"folder": want, "source": r["source"], "verdict": r["verdict"],
                      "ok": r["verdict"] == want, "detail": r["detail"][:300]}))
PY
  done
  python3 - "$OUT/bad.jsonl" <<'PY'
import json, sys
rows = [json.loads(x) for x in open(sys.argv[1])]
bad = [r for r in rows if not r["ok"]]
print(f"known-bad: {len(rows) - len(bad)}/{len(rows)} got their folder's verdict")
for r in bad:
    print("  WRONG", r["source"], r["verdict"], r["detail"])
PY
  echo "== kbx validate --device cuda --tasks '$GLOB'"
  start=$(date +%s)
  $KBX validate --device cuda --tasks "$GLOB" --json "$OUT/validate.json"
  echo "validate exit: $?  wall: $(( $(date +%s) - start )) s"
} 2>&1 | tee "$OUT/log.txt"
