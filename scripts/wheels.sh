#!/usr/bin/env bash
# The wheels a device call carries (git-ignored folders): .whl, kbx's core needs that the H200's
# image lacks, and .whl-clients, the generator's and the service's, with Ray as a stripped tar.xz
# (its wheel is over the 64 MiB carry limit; the image already has Ray's own needs, such as
# msgpack, protobuf, pyyaml and requests). Python 3.12 manylinux wheels, no dependencies
# resolved: the lists name every package the image lacks. Run here, on a machine with PyPI.
#   bash scripts/gpu_wheels.sh            # then carry [".whl", ".whl-clients"]
set -euo pipefail
cd "$(dirname "$0")/.."
PIP=${PIP:-.venv/bin/pip}
F=(--only-binary=:all: --python-version 3.12 --implementation cp --no-deps
  --platform manylinux2014_x86_64 --platform manylinux_2_17_x86_64 --platform manylinux_2_28_x86_64)
get() { "$PIP" download -q "${F[@]}" -d "$@" 2>&1 | grep -v '^WARNING' || true; }
mkdir -p .whl .whl-clients
get .whl pydantic pydantic-core annotated-types typing-extensions typing-inspection safetensors \
  pyseccomp py-spy
get .whl-clients aiolimiter annotated_doc anyio distro fastapi h11 httpcore httpcore2 httpx httpx2 \
  certifi click idna jiter jsonschema jsonschema_specifications openai opentelemetry_api rank_bm25 \
  referencing rpds_py sniffio starlette tqdm truststore uvicorn
if [ ! -f .whl-clients/ray-stripped.tar.xz ]; then
  t=$(mktemp -d)
  get "$t" "ray==${RAY:-2.60.0}"
  mkdir "$t/site" && unzip -q "$t"/ray-*.whl -d "$t/site"
  # Java, the libraries kbx does not use, the dashboard's web client and the tests
  (cd "$t/site/ray" && rm -rf jars rllib data tune train serve llm air/examples dashboard/client/build)
  find "$t/site" -name tests -type d -prune -exec rm -rf {} +
  rm -f "$t"/site/ray-*.dist-info/RECORD
  tar -cJf .whl-clients/ray-stripped.tar.xz -C "$t/site" .
  rm -rf "$t"
fi
du -sh .whl .whl-clients
