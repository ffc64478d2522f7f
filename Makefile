# kbx: `make demo` and `make test` work on a fresh CPU-only machine (Python 3.11+).
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
# A CPU build of torch keeps the install small; on a GPU machine install kbx into an env with CUDA torch.
# The tested torch and triton are pinned in constraints.txt (pyproject.toml gives the supported range);
# `make install CONSTRAINTS=other.txt` installs others.
CONSTRAINTS ?= constraints.txt

.PHONY: install browser demo test check gpu-test clean

install: $(VENV)/.installed browser

# tests/analyze/test_report.py opens the analysis report in headless Chromium: installed here with
# Debian's package when we are root and it is missing (about 45 s); otherwise we say what to do.
browser:
	@command -v chromium >/dev/null 2>&1 || command -v chromium-browser >/dev/null 2>&1 || \
	if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null 2>&1; then \
		{ apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -q chromium; } || \
		echo "kbx: apt-get could not install chromium; the report test will fail" >&2; \
	else echo "kbx: no chromium; the report test needs it: sudo apt-get install chromium" >&2; fi

$(VENV)/.installed: pyproject.toml $(CONSTRAINTS)
	test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	$(BIN)/python -m pip install -q -c $(CONSTRAINTS) torch triton numpy
	$(BIN)/python -m pip install -q -c $(CONSTRAINTS) -e '.[dev,analysis,generate,serve,ray]'
	touch $@

DEMO_OUT ?= runs/demo
demo: install
	rm -rf $(DEMO_OUT)
	$(BIN)/kbx eval examples/demo.jsonl --device cpu --out $(DEMO_OUT)
	@cat examples/demo.txt

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
