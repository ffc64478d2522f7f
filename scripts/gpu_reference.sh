#!/usr/bin/env bash
# The whole suite's reference solutions on a CUDA machine, resumable across device calls.
# Runs `kbx eval solutions/reference --device cuda` into runs/ref (kept if carried back in), stops
# itself after LIMIT seconds (default 520) so that its store can be checkpointed and copied out:
# $OUT gets env.txt, log.txt, results.jsonl, kbx.sqlite, baselines.sqlite, the peaks file and the
# GPU lock's hold log (scripts/lock_report.py).
# To resume: copy those files back into runs/ref and run again with runs/ref carried.
# EVAL_FLAGS (default: --no-compile-baseline) go to kbx eval; TASKS (globs) limits the tasks.
set -uo pipefail
OUT=${OUT:-gpu-out}; mkdir -p "$OUT" runs/ref
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
bash scripts/gpu_env.sh > "$OUT/env.txt" 2>&1
{
  echo "== kbx eval solutions/reference --device cuda --jobs ${JOBS:-12} ${EVAL_FLAGS:---no-compile-baseline} --out runs/ref"
  echo "resuming with $(ls runs/ref/kbx.sqlite >/dev/null 2>&1 && python3 -c "import sqlite3; print(sqlite3.connect('runs/ref/kbx.sqlite').execute('select count(*) from results').fetchone()[0])" 2>/dev/null || echo 0) records"
  start=$(date +%s)
  timeout ${LIMIT:-520} python3 -m kbx.cli eval solutions/reference --device cuda --jobs ${JOBS:-12} \
    ${EVAL_FLAGS:---no-compile-baseline} ${TASKS:+--tasks "$TASKS"} --out runs/ref \
    --baselines runs/ref/baselines.sqlite
  echo "eval exit: $?  wall: $(( $(date +%s) - start )) s"
} 2>&1 | tee "$OUT/log.txt"
python3 - <<'PY' 2>&1 | tee -a "$OUT/log.txt"
import sqlite3
from pathlib import Path

from kbx.store import Store, export

for db in ("runs/ref/kbx.sqlite", "runs/ref/baselines.sqlite"):
    try:
        sqlite3.connect(db).execute("PRAGMA wal_checkpoint(TRUNCATE)")
    except sqlite3.Error as exc:
        print(db, exc)
store = Store(Path("runs/ref/kbx.sqlite"))  # results.jsonl even when the run was cut off
print("records so far:", export(store, Path("runs/ref"), 184)["counts"])
store.close()
PY
cp runs/ref/kbx.sqlite runs/ref/baselines.sqlite runs/ref/peaks-*.json runs/ref/results.jsonl runs/ref/gpu*.lock.log "$OUT/" 2>/dev/null
