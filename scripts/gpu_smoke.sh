#!/usr/bin/env bash
# One device call's worth of GPU checks, from the source tree, each under its own time limit:
# `kbx validate --device cuda` over the whole suite (VALIDATE_LIMIT, 300 s), the known-bad corpus
# of tests/bad and tests/gpu_bad (BAD_LIMIT, 150 s) and, with SLICE_LIMIT > 0, the 15-task slice's
# reference solutions with eager baselines.  Writes env.txt, log.txt, validate.json,
# slice.jsonl, bad.jsonl into $OUT.
set -uo pipefail
OUT=${OUT:-gpu-out}; mkdir -p "$OUT"
export PYTHONPATH=$PWD/src PYTHONUNBUFFERED=1
SLICE='Activation/gelu,Convolution/conv2d,Fusion/fused_bmm_dropout_gelu,Index/scatter,LinearAlgebra/qr,Loss/cross_entropy,Math/rsqrt,MatrixMultiply/matmul,Normalization/batch_norm,Optimizer/AdamW,Pooling/avg_pool1d,Quantization/matmul_w8a8,Random/rand,Reduce/sum,SpatialOps/interpolate'
RUN=$(mktemp -d)
bash scripts/gpu_env.sh > "$OUT/env.txt" 2>&1
cat "$OUT/env.txt"
{
  if [ "${VALIDATE_LIMIT:-300}" -gt 0 ]; then  # VALIDATE_LIMIT=0: the known-bad corpus only
  echo "== kbx validate --device cuda --jobs ${VALIDATE_JOBS:-16} (whole suite)"
  start=$(date +%s)
  timeout ${VALIDATE_LIMIT:-300} python3 -m kbx.cli validate --device cuda --jobs ${VALIDATE_JOBS:-16} --json "$OUT/validate.json" 2>&1 | grep -v "Warning\|^  " | tail -40
  echo "validate exit: ${PIPESTATUS[0]}  wall: $(( $(date +%s) - start )) s"
  fi
  if [ "${SLICE_LIMIT:-0}" -gt 0 ]; then  # off by default: the whole-suite run covers the slice
  echo "== slice eval (eager baselines)"
  start=$(date +%s)
  timeout ${SLICE_LIMIT} python3 -m kbx.cli eval solutions/reference --device cuda --tasks "$SLICE" --out "$RUN/slice" --jobs 12 --no-compile-baseline --baselines "$RUN/b.sqlite" | tail -25
  echo "wall: $(( $(date +%s) - start )) s"
  cp "$RUN/slice/results.jsonl" "$OUT/slice.jsonl"
  fi
  echo "== kbx eval tests/bad + tests/gpu_bad --device cuda"
  start=$(date +%s)
  mkdir -p "$RUN/corpus" && cp -r tests/bad/* tests/gpu_bad/* "$RUN/corpus/"
  timeout ${BAD_LIMIT:-150} python3 -m kbx.cli eval "$RUN/corpus" --device cuda --out "$RUN/bad" --timeout-s 30 --jobs 12 --no-compile-baseline --baselines "$RUN/b.sqlite" > /dev/null
  echo "wall: $(( $(date +%s) - start )) s"
  sed -i "s#$RUN/corpus/#tests/bad/#g" "$RUN/bad/results.jsonl"
  python3 scripts/bad_summary.py "$RUN/bad/results.jsonl" "$OUT/bad.jsonl"
} 2>&1 | tee "$OUT/log.txt"
