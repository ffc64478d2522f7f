#!/usr/bin/env bash
# Issue 29's item 4 in one device call, after the throughput runs (runs/tp/baselines.sqlite in
# place, used as $KBX_CACHE_DIR): `kbx run --method geak` through the loopback server with the
# evaluator on cuda and the Ray backend against the local one (scripts/gpu_clients.py), then
# `kbx serve --device cuda` under benchmarks/serve_load.py with --per-tier $PER_TIER.
# Carry .whl and .whl-clients: the service's and the generator's wheels, and Ray as a stripped
# tar.xz (its wheel is over the device's 64 MiB carry limit; the Java jars and the rllib, tune,
# train, data and llm libraries are left out; scripts/gpu_wheels.sh makes both folders).  STEPS
# (default "clients serve") picks steps; PARTS (default "generate ray") the clients step's parts.
set -uo pipefail
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
STEPS=" ${STEPS:-clients serve} "
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site \
  .whl/*.whl .whl-clients/*.whl > "$OUT/install.txt" 2>&1 || { cat "$OUT/install.txt"; exit 1; }
# Ray only where it is carried (the serve step does without it)
[ -f .whl-clients/ray-stripped.tar.xz ] && { tar -xJf .whl-clients/ray-stripped.tar.xz -C /tmp/site || exit 1; }
export PYTHONPATH=$PWD/src:/tmp/site PYTHONUNBUFFERED=1 KBX_CACHE_DIR=$PWD/runs/tp
[ -f "$OUT/env.txt" ] || bash scripts/gpu_env.sh > "$OUT/env.txt" 2>&1
if [[ $STEPS == *" clients "* ]]; then
  start=$(date +%s)
  timeout "${LIMIT_CLIENTS:-300}" python3 scripts/gpu_clients.py ${PARTS:-generate ray} --device cuda \
    --out "$OUT/clients.json" > "$OUT/clients-log.txt" 2>&1
  echo "exit $? wall $(( $(date +%s) - start )) s" >> "$OUT/clients-log.txt"
  tail -c 3000 "$OUT/clients-log.txt"
fi
if [[ $STEPS == *" serve "* ]]; then
  start=$(date +%s)
  timeout "${LIMIT_SERVE:-280}" python3 benchmarks/serve_load.py --device cuda \
    --submissions "${SUBMISSIONS:-1000}" --per-tier "${PER_TIER:-32}" \
    --time-limit-s "${LOAD_S:-150}" --end-s $(( ${LIMIT_SERVE:-280} - 20 )) \
    --state runs/serve-load --out "$OUT/serve-load.json" \
    > "$OUT/serve-log.txt" 2>&1
  echo "exit $? wall $(( $(date +%s) - start )) s" >> "$OUT/serve-log.txt"
  tail -c 3000 "$OUT/serve-log.txt"
  cp runs/serve-load-server.log "$OUT/" 2>/dev/null
fi
