#!/usr/bin/env bash
# Issue 29's checks of the trust boundary on one GPU, in one device call after the throughput
# runs (kernels and baselines of runs/tp in place): kbx validate on cuda over the whole suite;
# the exploit and known-bad corpora on cuda (tests/exploits, tests/exploits_gpu, tests/bad,
# tests/gpu_bad), each candidate against its expected verdict (scripts/expect_check.py); the GPU
# faults of tests/gpu_faults (an illegal address, out-of-memory, a GPU hog, a kernel that never
# ends) in one run beside reference solutions of FAULT_TASKS, timed, whose verdicts and speedups
# must not change.  STEPS (default "validate corpus faults") picks steps.  Writes to $OUT.
set -uo pipefail
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
STEPS=" ${STEPS:-validate corpus faults} "
python3 -m pip install -q --no-index --no-deps --break-system-packages .whl/*.whl > /dev/null 2>&1
RUN=$(mktemp -d)
printf 'jobs = %s\ncompile_baseline = false\n' "${JOBS:-12}" > "$RUN/tuning.toml"
[ -f "$OUT/env.txt" ] || bash scripts/gpu_env.sh > "$OUT/env.txt" 2>&1
# corpus NAME LIMIT TIMEOUT: kbx eval of $RUN/NAME/corpus on cuda, each verdict against its
# expected one (NAME-log.txt, NAME.jsonl, NAME.txt in $OUT)
corpus() {
  local start; start=$(date +%s)
  timeout "$2" python3 -m kbx eval "$RUN/$1/corpus" --device cuda --out "$RUN/$1/run" \
    --timeout-s "$3" --baselines runs/tp/baselines.sqlite --config "$RUN/tuning.toml" \
    > "$OUT/$1-log.txt" 2>&1
  echo "exit $? wall $(( $(date +%s) - start )) s" >> "$OUT/$1-log.txt"
  python3 scripts/expect_check.py "$RUN/$1/run" "$OUT/$1.jsonl" > "$OUT/$1.txt"
  tail -3 "$OUT/$1-log.txt"; grep -E "WRONG|got their" "$OUT/$1.txt"
}
if [[ $STEPS == *" corpus "* ]]; then
  # tests/exploits_gpu first, in a run of its own with 120 s limits, as in its GPU test: nvcc
  # builds load_inline's extension inside its import, a minute of CPU or so; a third
  # of the step's time (at least 100 s), the rest for the other corpora at 30 s, as in their GPU
  # test.  The candidates that sleep (their docstrings name the wall-clock backstop) run last,
  # apart, at 5 s: the backstop is 4 x the limit, and a wall-clock timeout is evaluated again
  # alone after its batch (kbx.run.rerun), one after another: SLEEP_S (default 100) seconds
  all=${LIMIT_CORPUS:-300}; gpu=$(( all / 3 > 100 ? all / 3 : 100 )); sleep_s=${SLEEP_S:-100}
  mkdir -p "$RUN/gpu/corpus" "$RUN/corpus/corpus"
  cp -r tests/exploits_gpu "$RUN/gpu/corpus/exploits_gpu"
  for c in exploits bad gpu_bad; do cp -r "tests/$c" "$RUN/corpus/corpus/$c"; done
  find "$RUN" -name '.ruff_cache' -prune -exec rm -rf {} +
  (cd "$RUN/corpus/corpus" && grep -rl --include='*.py' "wall-clock backstop" . | grep -v '/__') |
    while read -r f; do
      mkdir -p "$RUN/sleep/corpus/$(dirname "$f")" && mv "$RUN/corpus/corpus/$f" "$RUN/sleep/corpus/$f"
    done
  began=$(date +%s)
  corpus gpu "$gpu" 120
  corpus corpus $(( all - sleep_s - ($(date +%s) - began) )) 30
  [ -d "$RUN/sleep/corpus" ] && corpus sleep $(( all - ($(date +%s) - began) )) 5
fi
if [[ $STEPS == *" faults "* ]]; then
  mkdir -p "$RUN/faults/corpus/reference"
  cp -r tests/gpu_faults "$RUN/faults/corpus/gpu_faults"
  for t in ${FAULT_TASKS:-Activation/relu Activation/gelu Activation/tanh Math/rsqrt Math/add Math/softmax \
      Normalization/batch_norm Reduce/sum MatrixMultiply/matmul Loss/mse_loss Fusion/fused_add_gelu}; do
    [ -f "solutions/reference/$t.py" ] || continue
    mkdir -p "$RUN/faults/corpus/reference/$(dirname "$t")"
    cp "solutions/reference/$t.py" "$RUN/faults/corpus/reference/$t.py"
  done
  corpus faults "${LIMIT_FAULTS:-200}" 10
  cat "$OUT/faults.txt"
fi
if [[ $STEPS == *" validate "* ]]; then
  start=$(date +%s)
  timeout "${LIMIT_VALIDATE:-240}" python3 -m kbx validate --device cuda --config "$RUN/tuning.toml" \
    --json "$OUT/validate.json" > "$OUT/validate.txt" 2>&1
  echo "exit $? wall $(( $(date +%s) - start )) s" >> "$OUT/validate.txt"
  tail -5 "$OUT/validate.txt"
fi
