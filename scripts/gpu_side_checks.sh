#!/usr/bin/env bash
# Checks that fit beside a throughput run on the other GPU and cores of a two-GPU host (as in
# docs/validation/h200-2026-11-30i/ call 1): kbx validate on cuda of the tasks in TASKS, a
# two-worker kbx eval of four tasks (--procs), then the GPU tests (pytest from the wheels in
# .whl, carried to the machine).  GPU (default 1) and CPUS (default 16-31) pick the half;
# LIMIT_VALIDATE / LIMIT_TESTS bound the steps (150 s / 235 s); each writes a file to $OUT.
# STEPS (default "validate procs tests") picks the steps, e.g. STEPS=tests on a one-GPU machine
# after its throughput runs.
set -uo pipefail
OUT=${OUT:-gpu-out}; GPU=${GPU:-1}; CPUS=${CPUS:-16-31}
TASKS=${TASKS:-LinearAlgebra/*,Fusion/fused_*_solve,Optimizer/Lion,Math/bitwise_and_binomial,SpatialOps/interpolate}
mkdir -p "$OUT"
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1 CUDA_VISIBLE_DEVICES=$GPU
STEPS=" ${STEPS:-validate procs tests} "
pip install -q --no-index --no-deps --target /tmp/kbx-wheels .whl/*.whl > "$OUT/pip.txt" 2>&1
[[ $STEPS == *" validate "* ]] && taskset -c "$CPUS" timeout "${LIMIT_VALIDATE:-150}" \
  python3 -m kbx validate --device cuda --jobs 8 --json "$OUT/validate.json" --tasks "$TASKS" \
  > "$OUT/validate.txt" 2>&1
[[ $STEPS == *" procs "* ]] && taskset -c "$CPUS" timeout 100 \
  python3 -m kbx eval solutions/reference --tasks 'Math/a*' --device cuda --procs 2 --jobs 4 \
  --no-compile-baseline --out /tmp/kbx-procs --baselines /tmp/kbx-procs.sqlite \
  > "$OUT/procs-smoke.txt" 2>&1
[[ $STEPS == *" tests "* ]] || exit 0
PYTHONPATH=$PYTHONPATH:/tmp/kbx-wheels taskset -c "$CPUS" timeout "${LIMIT_TESTS:-235}" \
  python3 -m pytest -m gpu tests -v -p no:cacheprovider > "$OUT/gputests.txt" 2>&1
echo "gpu tests exit $?" >> "$OUT/gputests.txt"
