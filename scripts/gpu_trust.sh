#!/usr/bin/env bash
# One device call's check of the trust boundary on a GPU: the wheels kbx's sandbox and schemas
# need (carried in .whl/: pydantic, safetensors, pyseccomp), the sandbox level the machine gives,
# every reference solution on cuda (correctness only: --no-perf; zero false rejections under the
# sandbox and the op evidence), and the exploit corpus (tests/exploits, tests/exploits_gpu) on
# cuda.  Writes env.txt, log.txt, reference.jsonl, exploits.jsonl into $OUT.
set -uo pipefail
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
python3 -m pip install -q --no-index --no-deps --break-system-packages .whl/*.whl 2>&1 | tail -2
RUN=$(mktemp -d)
bash scripts/gpu_env.sh > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"
{
  echo "== sandbox level"
  python3 -c "from kbx.sandbox import confine; print(confine.probe())"
  echo "== kbx eval solutions/reference --device cuda --no-perf"
  start=$(date +%s)
  timeout ${REF_LIMIT:-330} python3 -m kbx.cli eval solutions/reference --device cuda --no-perf \
    --out "$RUN/ref" --jobs ${JOBS:-12} | tail -30
  echo "wall: $(( $(date +%s) - start )) s"
  cp "$RUN/ref/results.jsonl" "$OUT/reference.jsonl"
  echo "== kbx eval tests/exploits + tests/exploits_gpu --device cuda"
  start=$(date +%s)
  mkdir -p "$RUN/corpus" && cp -r tests/exploits "$RUN/corpus/cpu" && cp -r tests/exploits_gpu "$RUN/corpus/gpu"
  timeout ${EXPLOIT_LIMIT:-200} python3 -m kbx.cli eval "$RUN/corpus" --device cuda --out "$RUN/ex" \
    --jobs ${JOBS:-12} --timeout-s 20 --no-compile-baseline --baselines "$RUN/b.sqlite" | tail -60
  echo "wall: $(( $(date +%s) - start )) s"
  cp "$RUN/ex/results.jsonl" "$OUT/exploits.jsonl"
} 2>&1 | tee "$OUT/log.txt"
