#!/usr/bin/env bash
# Issue 5's throughput figures on CUDA machines, one step per device call (each fits 600 s):
#   cold  one H200: benchmarks/harness_throughput.py --phase cold (every baseline measured,
#         kernels compiled into runs/tp/tc)
#   warm  the same machine, still warm: --phase warm --profile on cold's baselines and kernels
#         (WARM_RUNS=1: one run instead of two, for comparing settings)
#         (PRIME=1 adds an untimed run first, to measure and compile what a cut-off cold run
#         left out)
#   x2    two H200s: --phase warm --gpus 0,1 (WARM_RUNS=1: one run, its wall time only).  On a
#         fresh nvidia-h200-x2 machine carry runs/tp/baselines.sqlite and set PRIME=1 (a priming
#         run compiles the kernels there; its figures are dropped; WARM_RUNS=0: that run alone,
#         for the steps after it); on the machine that ran cold
#         and warm (GPUS=0 CPUS=0-15 there), the caches are in place.
#   x2cold  two H200s: --phase cold --gpus 0,1 (every baseline measured; on a fresh machine it
#         also compiles every kernel, so that a one-GPU cold run after it measures the baselines
#         with the kernels cached: the figures' cold_cached_kernels says which)
# Cold runs measure every baseline before any candidate (the default --baselines-first); BFIRST=0
# adds --no-baselines-first (each task's beside its candidate), BWORKERS=N --baseline-workers
# (tasks measured at once per GPU in that stage), CHECK_THREADS=N --check-threads (the parent's
# torch threads), PROCS=N --procs (worker processes driving the jobs), JOBS=N the jobs per GPU
# (default 16).
# SEED=1 (the default) first seeds the cache's job times, where it has none for a task, from
# committed H200 records (scripts/seed_durations.py), so that even a first run on a machine
# starts its longest tasks first; the figures' cold_known_durations counts them.
# GPUS (default 0) picks the GPU of cold and warm; CPUS (e.g. 0-15) pins the run to those cores
# with taskset, so that one GPU of a two-GPU host runs with the cores of a one-GPU machine.
# TAG=-b gives a variant its own work folder and figures file (runs/tp/work-b,
# throughput-h200-b.json), so that two one-GPU variants can run at once on the two GPUs and core
# halves of one host (OUT apart too); both share the baseline cache and the kernels.
# Each step writes to $OUT (at most 8 files): its log (ending with the baselines' and the
# candidates' timing drift against the committed reference run), the figures JSON, each run's
# records (also of a run cut off by LIMIT, read from its store), the baseline cache,
# $STEP-locks.tgz with the GPU lock's report and raw hold logs of the first run, and
# $STEP-smi.csv with the GPUs' utilisation and memory each second (SMI=0: none; the harness
# logs each run's start and end, so the two line up by time).
set -uo pipefail
STEP=${1:?usage: gpu_throughput.sh cold|warm|x2cold|x2}
OUT=${OUT:-gpu-out}; LIMIT=${LIMIT:-570}; JOBS=${JOBS:-16}; GPUS=${GPUS:-0}
mkdir -p "$OUT" runs/tp
# SRC (default src) is the kbx source tree to run: a variant's copy beside the committed one
export PYTHONPATH=${SRC:-$PWD/src} PYTHONUNBUFFERED=1 PYTHONFAULTHANDLER=1
bash scripts/gpu_env.sh > "$OUT/env-$STEP.txt" 2>&1
TAG=${TAG:-}; work=runs/tp/work$TAG  # TAG: a variant's own folders and figures, beside others
common=(--jobs "$JOBS" --work "$work" --cache runs/tp --triton-cache "$PWD/runs/tp/tc"
        --keep "runs/tp/keep$TAG")
# TRACE=1 (the default): the processes' start-up marks in the log (kbx.core.trace); TRACE=0: none
[ "${TRACE:-1}" = 1 ] && common+=(--trace)
case $STEP in
  cold) args=(--phase cold --gpus "$GPUS" --out "runs/tp/throughput-h200$TAG.json"); runs=(cold) ;;
  warm) args=(--phase warm --gpus "$GPUS" --profile --warm-runs "${WARM_RUNS:-2}"
              --out "runs/tp/throughput-h200$TAG.json"); runs=(warm1)
        [ "${WARM_RUNS:-2}" = 2 ] && runs+=(warm2) ;;
  x2cold) args=(--phase cold --gpus 0,1 --out "runs/tp/throughput-h200x2$TAG.json"); runs=(cold) ;;
  x2) args=(--phase warm --gpus 0,1 --warm-runs "${WARM_RUNS:-2}"
            --out "runs/tp/throughput-h200x2$TAG.json"); runs=(warm1)
      [ "${WARM_RUNS:-2}" = 2 ] && runs+=(warm2) ;;
  *) echo "unknown step $STEP" >&2; exit 2 ;;
esac
[ "${BFIRST:-1}" = 0 ] && args+=(--no-baselines-first)  # baselines beside their candidates
[ -n "${BWORKERS:-}" ] && args+=(--baseline-workers "$BWORKERS")  # tasks at once per GPU there
[ -n "${CHECK_THREADS:-}" ] && args+=(--check-threads "$CHECK_THREADS")  # the parent's torch threads
[ -n "${PROCS:-}" ] && args+=(--procs "$PROCS")  # worker processes driving the jobs
# a machine without the kernels: compile them first (its records come back too)
[ "${PRIME:-0}" = 1 ] && { args+=(--prime); runs=(prime "${runs[@]}"); }
[ "${WARM_RUNS:-2}" = 0 ] && runs=(prime)  # with PRIME=1: the priming run alone
if [ "${SEED:-1}" = 1 ]; then  # job times of earlier H200 runs, for the longest-first order
  python3 scripts/seed_durations.py runs/tp/baselines.sqlite \
    docs/validation/h200-2026-11-30d/call4-cold.jsonl docs/validation/h200-2026-11-30c/call2-cold.jsonl \
    docs/validation/reference-h200.jsonl > "$OUT/$STEP-log.txt" 2>&1
fi
pin=(); [ -n "${CPUS:-}" ] && pin=(taskset -c "$CPUS")
start=$(date +%s)
smi=""  # SMI=1 (the default): each GPU's utilisation and memory every second, time-stamped
if [ "${SMI:-1}" = 1 ] && command -v nvidia-smi > /dev/null; then
  nvidia-smi --query-gpu=timestamp,index,utilization.gpu,memory.used --format=csv,noheader \
    -lms 1000 > "$OUT/$STEP-smi.csv" 2>&1 & smi=$!
fi
timeout "$LIMIT" "${pin[@]}" python3 benchmarks/harness_throughput.py "${common[@]}" "${args[@]}" \
  >> "$OUT/$STEP-log.txt" 2>&1 & bench=$!
# PYSPY=1: py-spy (carried in .whl) samples what holds the parent's GIL, 20 times a second, into
# $STEP-pyspy.txt (collapsed stacks: scripts/gil_report.py); a py-spy that cannot attach is logged
# and the run goes on without it
if [ "${PYSPY:-0}" = 1 ] && command -v py-spy > /dev/null; then
  sleep 3; parent=$(pgrep -f -n "python3 benchmarks/harness_throughput.py")
  [ -n "$parent" ] && py-spy record --pid "$parent" --gil --nonblocking -r 20 -f raw \
    -o "$OUT/$STEP-pyspy.txt" > "$OUT/$STEP-pyspy-log.txt" 2>&1 &
fi
wait "$bench"
echo "exit $? after $(( $(date +%s) - start )) s" >> "$OUT/$STEP-log.txt"
[ -n "$smi" ] && kill "$smi" 2>/dev/null
for run in "${runs[@]}"; do  # records, also of a run the time limit stopped
  python3 scripts/save_records.py "$work/$run" "$OUT/$STEP-$run.jsonl" >> "$OUT/$STEP-log.txt" 2>&1
done
log=$(ls "$work/${runs[0]}"/gpu*.lock.log 2>/dev/null | head -1)  # the report and the raw logs
[ -f "$log" ] && python3 scripts/lock_report.py "$log" 30 > "runs/tp/$STEP$TAG-lockreport.txt" 2>&1
tar czf "$OUT/$STEP-locks.tgz" -C runs/tp "$STEP$TAG-lockreport.txt" \
  $(cd runs/tp && ls "work$TAG/${runs[0]}"/gpu*.lock.log 2>/dev/null) 2>/dev/null
cp runs/tp/throughput-h200*.json "$OUT/" 2>/dev/null
# carry it to a later machine: a copy through SQLite, since a run the time limit stopped leaves
# its latest rows in the write-ahead log beside the file (a plain cp lost them all, 2026-11-30)
python3 -c "
import sqlite3
sqlite3.connect('runs/tp/baselines.sqlite').backup(sqlite3.connect('$OUT/baselines.sqlite'))
" 2>/dev/null
{ echo "== baselines against reference-h200.jsonl (eager)"  # measured under load, or not
  [ -f "$OUT/baselines.sqlite" ] &&
    python3 scripts/timing_drift.py docs/validation/reference-h200.jsonl "$OUT/baselines.sqlite" 10
  for run in "${runs[@]}"; do
    echo "== $run: candidates' timings against reference-h200.jsonl"
    [ -f "$OUT/$STEP-$run.jsonl" ] &&
      python3 scripts/timing_drift.py docs/validation/reference-h200.jsonl "$OUT/$STEP-$run.jsonl" 5
  done; } >> "$OUT/$STEP-log.txt" 2>&1
tail -30 "$OUT/$STEP-log.txt"
