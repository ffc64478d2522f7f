#!/usr/bin/env bash
# A short check before a session's long GPU runs: the GPU tests of recent changes (TESTS=1), then
# cold + two warm runs (the second with the profiler) over every EVERY-th task (default 8: the 23
# tasks of h200-2026-11-30d/call2, 99.7 s cold and 29.7/32.1 s warm on one H200 at e995242's
# parent), in caches of its own (runs/d and its own inductor cache) so that a later strict cold
# run stays cold; prints verdict counts per run.  CPUS pins it (e.g. 0-15 on a two-GPU host).
export TORCHINDUCTOR_CACHE_DIR=/tmp/inductor-sanity
TESTS=${TESTS:-1} EVERY=${EVERY:-8} LIMIT=${LIMIT:-200} bash scripts/gpu_diag.sh
for r in cold warm1 warm2; do
  [ -f "$OUT/$r.jsonl" ] && python3 -c "
import collections, json, sys
rs = [json.loads(l) for l in open('$OUT/$r.jsonl')]
print('$r', dict(collections.Counter(r['verdict'] for r in rs)),
      [(r['task_id'], r['verdict'], r['detail'][:80]) for r in rs if r['verdict'] != 'passed'])
"
done
for r in cold warm1; do  # timings against the committed reference run's
  [ -f "$OUT/$r.jsonl" ] && { echo "== drift of $r"; python3 scripts/timing_drift.py \
    docs/validation/reference-h200.jsonl "$OUT/$r.jsonl" 5; }
done
for r in cold warm1; do  # where the children's setup went (medians, s)
  [ -f "$OUT/$r.jsonl" ] && python3 -c "
import json, statistics
rs = [json.loads(l)['stage_s'] for l in open('$OUT/$r.jsonl')]
keys = ['setup'] + [k for k in rs[0] if k.startswith('setup_')] if rs else []
print('$r setup medians', {k: round(statistics.median(r.get(k, 0.0) for r in rs), 2) for k in keys})
"
done
grep -h "wall\|CPU seconds" "$OUT/diag-log.txt" 2>/dev/null
