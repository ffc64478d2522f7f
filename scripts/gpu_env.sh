#!/usr/bin/env bash
# Prints what a GPU run's figures depend on: date, GPU, driver, memory, cores, Python, torch,
# triton.  The GPU scripts write it to $OUT/env.txt.
date -u +"date: %Y-%m-%dT%H:%M:%SZ"
nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader
echo "cores: $(nproc)"
python3 -c "import sys, torch, triton; print('python', sys.version.split()[0]); print('torch', torch.__version__); print('triton', triton.__version__)"
