#!/usr/bin/env bash
# The whole suite's reference solutions on a CUDA machine, resumable across device calls.
# Runs `kbx eval solutions/reference --device cuda` into $RUN (kept if carried back in), stops
# itself after LIMIT seconds (default 520) so that its store can be checkpointed and copied out:
# $OUT gets env.txt, log.txt, results.jsonl, kbx.sqlite, baselines.sqlite, the peaks file and the
# GPU lock's hold log (scripts/lock_report.py).
# To resume: copy those files back into $RUN and run again with $RUN carried.
# EVAL_FLAGS (default: --no-compile-baseline) go to kbx eval; TASKS (globs) limits the tasks;
# RUN (default runs/ref) is the run folder.
set -uo pipefail
OUT=${OUT:-gpu-out}; RUN=${RUN:-runs/ref}; mkdir -p "$OUT" "$RUN"
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
bash scripts/gpu_env.sh > "$OUT/env.txt" 2>&1
{
  echo "== kbx eval solutions/reference --device cuda --jobs ${JOBS:-12} ${EVAL_FLAGS:---no-compile-baseline} --out $RUN"
  echo "resuming with $(ls $RUN/kbx.sqlite >/dev/null 2>&1 && python3 -c "import sqlite3; print(sqlite3.connect('$RUN/kbx.sqlite').execute('select count(*) from results').fetchone()[0])" 2>/dev/null || echo 0) records"
  start=$(date +%s)
  timeout ${LIMIT:-520} python3 -m kbx.cli eval solutions/reference --device cuda --jobs ${JOBS:-12} \
    ${EVAL_FLAGS:---no-compile-baseline} ${TASKS:+--tasks "$TASKS"} --out $RUN \
    --baselines $RUN/baselines.sqlite
  echo "eval exit: $?  wall: $(( $(date +%s) - start )) s"
} 2>&1 | tee "$OUT/log.txt"
RUN=$RUN python3 - <<'PY' 2>&1 | tee -a "$OUT/log.txt"
import os
import sqlite3
from pathlib import Path

from kbx.run.store import Store, export

run = Path(os.environ["RUN"])
for db in (run / "kbx.sqlite", run / "baselines.sqlite"):
    try:
        sqlite3.connect(db).execute("PRAGMA wal_checkpoint(TRUNCATE)")
    except sqlite3.Error as exc:
        print(db, exc)
store = Store(run / "kbx.sqlite")  # results.jsonl even when the run was cut off
print("records so far:", export(store, run, 184)["counts"])
store.close()
PY
cp $RUN/kbx.sqlite $RUN/baselines.sqlite $RUN/peaks-*.json $RUN/results.jsonl $RUN/gpu*.lock.log "$OUT/" 2>/dev/null
