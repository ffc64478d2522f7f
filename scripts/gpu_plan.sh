#!/usr/bin/env bash
# Issue 29's steps in one device call, in order, inside BUDGET seconds (default 570): each step
# NAME:SECONDS gets the smaller of its seconds and what is left, and is skipped with less than MIN
# (default 60) left; RESERVE (default 40) seconds of the budget stay for each step's own post-
# processing after its limit (records, reports), so that the call ends inside BUDGET. Steps: cold,
# warm (scripts/gpu_throughput.sh, WARM_RUNS=2 with the profiled second run), prime (the priming
# run alone: kernels compiled for a machine that has the baselines) and warm1 (one warm run in a
# fresh process, as the committed figures were measured), each in a folder of its own; faults,
# corpus, validate (scripts/gpu_checks.sh), clients, serve (scripts/gpu_clients.sh). The device
# returns at most 8 files from $OUT, so the steps write to a scratch folder, packed at the end
# into $OUT/$TAG.tgz beside the figures JSON files.
#   OUT=$OUT BUDGET=570 TAG=a bash scripts/gpu_plan.sh cold:500 faults:85
set -uo pipefail
OUT=${OUT:?}; BUDGET=${BUDGET:-570}; TAG=${TAG:-plan}; began=$(date +%s)
W=$(mktemp -d)
python3 -m pip install -q --no-index --no-deps --break-system-packages .whl/*.whl > /dev/null 2>&1
bash scripts/gpu_env.sh > "$W/env.txt" 2>&1
for step in "$@"; do
  name=${step%%:*}; want=${step##*:}
  left=$(( BUDGET - ($(date +%s) - began) - ${RESERVE:-40} ))
  if [ "$left" -lt "${MIN:-60}" ]; then echo "== $name skipped: $left s left"; continue; fi
  lim=$(( want < left ? want : left ))
  echo "== $name: limit $lim s, $(( $(date +%s) - began )) s into the call"
  case $name in
    cold) OUT=$W LIMIT=$lim bash scripts/gpu_throughput.sh cold 2>&1 | tail -25 ;;
    warm) OUT=$W LIMIT=$lim WARM_RUNS=2 bash scripts/gpu_throughput.sh warm 2>&1 | tail -25 ;;
    prime) OUT=$W/prime LIMIT=$lim PRIME=1 WARM_RUNS=0 bash scripts/gpu_throughput.sh warm 2>&1 |
      tail -8 ;;
    warm1) OUT=$W/warm1 LIMIT=$lim WARM_RUNS=1 bash scripts/gpu_throughput.sh warm 2>&1 | tail -12 ;;
    faults) OUT=$W STEPS=faults LIMIT_FAULTS=$lim bash scripts/gpu_checks.sh ;;
    corpus) OUT=$W STEPS=corpus LIMIT_CORPUS=$lim bash scripts/gpu_checks.sh ;;
    validate) OUT=$W STEPS=validate LIMIT_VALIDATE=$lim bash scripts/gpu_checks.sh ;;
    clients) OUT=$W STEPS=clients LIMIT_CLIENTS=$lim bash scripts/gpu_clients.sh ;;
    serve) OUT=$W STEPS=serve LIMIT_SERVE=$lim LOAD_S=$(( lim / 2 )) bash scripts/gpu_clients.sh ;;
    *) echo "unknown step $name" ;;
  esac
done
cp "$W"/*.json "$OUT/" 2>/dev/null
rm -f "$W"/install.txt
tar czf "$OUT/$TAG.tgz" -C "$W" .
ls "$OUT"
echo "call took $(( $(date +%s) - began )) s"
