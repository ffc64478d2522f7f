# kbx: `make demo` and `make test` work on a fresh CPU-only machine (Python 3.11+).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# A CPU build of torch keeps the install small; on a GPU machine install kbx into an env with CUDA torch.
# The tested torch and triton are pinned in constraints.txt (pyproject.toml gives the supported range);
# `make install CONSTRAINTS=other.txt` installs others.
CONSTRAINTS ?= constraints.txt

.PHONY: install demo test check gpu-test clean

install: $(VENV)/.installed

$(VENV)/.installed: pyproject.toml $(CONSTRAINTS)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -c $(CONSTRAINTS) torch triton numpy
	$(BIN)/python -m pip install -q -c $(CONSTRAINTS) -e '.[dev]'
	touch $@

demo: install
	rm -rf runs/demo
	$(BIN)/kbx eval examples/demo.jsonl --device cpu --out runs/demo

test: install
	$(BIN)/python -m pytest -q --durations=10

check: install
	$(BIN)/ruff check src tests solutions scripts benchmarks
	$(BIN)/ruff format --check src tests benchmarks
	$(BIN)/mypy

gpu-test: install
	$(BIN)/python -m pytest -q -m gpu

clean:
	rm -rf runs .pytest_cache .mypy_cache .ruff_cache
