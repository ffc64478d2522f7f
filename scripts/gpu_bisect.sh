#!/usr/bin/env bash
# Bisects a crash of the harness's parent process: cold runs over every EVERY-th task with the
# fault handler on, first as is, then with the reference prefetch off, then with the compile
# baselines' worker pool off; each run's log to $OUT.
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1 PYTHONFAULTHANDLER=1
T=$(python3 -c "from kbx.suite import load_suite; print(','.join(list(load_suite())[::${EVERY:-23}]))")
run() {  # name, python prelude
  export TORCHINDUCTOR_CACHE_DIR=/tmp/ind-$1
  timeout ${LIMIT:-100} python3 -c "
import runpy, sys
$2
sys.argv = ['harness_throughput.py', '--phase', 'cold', '--jobs', '16', '--tasks', '$T',
            '--work', 'runs/b-$1', '--cache', 'runs/b-$1', '--out', '$OUT/$1.json']
runpy.run_path('benchmarks/harness_throughput.py', run_name='__main__')
" > $OUT/$1-log.txt 2>&1
  echo "$1 rc $?"; grep -m3 -n "Fatal\|Segmentation\|File \"/work" $OUT/$1-log.txt | head -3
}
run asis ""
run noprefetch "import kbx.evaluate.check as r; r.prefetch = lambda *a, **k: None"
run nopool "import kbx.gpu.compile_pool as c
def off(*a, **k): raise c.WorkerFailed('off')
c.POOL.ask = off"
