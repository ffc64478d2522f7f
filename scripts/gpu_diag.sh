#!/usr/bin/env bash
# Diagnostic on one H200: the GPU tests of the lock changes, then cold + two warm runs (the
# second with the profiler) over every EVERY-th task (default 6), on GPU 0 (CPUS: pinned to those
# cores with taskset); records, figures and lock reports to $OUT.
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
pip install -q --no-deps --target /tmp/site .whl/*.whl >/dev/null 2>&1
bash scripts/gpu_env.sh > $OUT/env.txt 2>&1
[ "${TESTS:-1}" = 1 ] && PYTHONPATH=$PYTHONPATH:/tmp/site timeout 140 python3 -m pytest -q -m gpu tests/test_gpu.py -k "chunks or autotuning or op_by_op or side_stream or waits_sleep or gpu_only_known_bad" -p no:cacheprovider > $OUT/gputest.txt 2>&1; echo "rc $?" >> $OUT/gputest.txt
T=$(python3 -c "from kbx.suite import load_suite; print(','.join(list(load_suite())[::${EVERY:-6}]))")
pin=(); [ -n "${CPUS:-}" ] && pin=(taskset -c "$CPUS")
timeout ${LIMIT:-390} "${pin[@]}" python3 benchmarks/harness_throughput.py --phase all --profile --jobs 16 --tasks "$T" --work runs/d --cache runs/d --triton-cache $PWD/runs/d/tc --keep runs/d/keep --out $OUT/diag.json > $OUT/diag-log.txt 2>&1; echo "rc $?" >> $OUT/diag-log.txt
for r in cold warm1 warm2; do python3 scripts/save_records.py runs/d/$r $OUT/$r.jsonl >/dev/null; done
for r in cold warm1 warm2; do [ -f runs/d/$r/gpu0.lock.log ] && { echo "== $r"; python3 scripts/lock_report.py runs/d/$r/gpu0.lock.log 10; }; done > $OUT/lockreports.txt 2>&1
tail -5 $OUT/gputest.txt; tail -25 $OUT/diag-log.txt
