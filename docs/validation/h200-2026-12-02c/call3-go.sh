set -u
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --break-system-packages .whl/*.whl > /dev/null 2>&1
mkdir -p /tmp/smoke/Activation && cp solutions/reference/Activation/gelu.py /tmp/smoke/Activation/
timeout 90 python3 -m kbx eval /tmp/smoke --device cuda --out /tmp/smoke-run --baselines runs/tp/baselines.sqlite > $OUT/smoke.txt 2>&1
cp /tmp/smoke-run/results.jsonl $OUT/smoke.jsonl 2>/dev/null
if ! grep -q '"verdict": "passed"' /tmp/smoke-run/results.jsonl 2>/dev/null; then
  echo "SMOKE FAILED: the old fork server" | tee -a $OUT/smoke.txt; cp runs/old/forkserver.py src/kbx/runtime/forkserver.py
fi
tail -3 $OUT/smoke.txt
OUT=$OUT LIMIT_CORPUS=150 LIMIT_FAULTS=100 LIMIT_VALIDATE=150 bash scripts/gpu_checks.sh 2>&1 | tail -50
