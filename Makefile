# medspot developer commands. `make demo` and `make test` are the README's two commands.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip

.PHONY: install install-dev demo test test-fast lint format bench clean

$(VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(VENV)
	$(PIP) install -q --no-compile --upgrade pip
	$(PIP) install -q --no-compile -e '.[ocr,report]'
	touch $@

# Test dependencies: the CPU build of torch first (otherwise pip pulls CUDA wheels), then
# everything else. Debian's chromium drives the HTML report tests (skipped if absent).
$(VENV)/.installed-dev: $(VENV)/.installed
	$(PIP) install -q --no-compile torch==2.13.0
	$(PIP) install -q --no-compile -e '.[dev,hf]'
	touch $@

install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev

demo: install
	$(VENV)/bin/medspot demo

test: install-dev
	$(PY) -m pytest -q -n 2 --dist worksteal

test-fast: install-dev
	$(PY) -m pytest -q -m "not slow and not hf and not browser"

lint: install-dev
	$(VENV)/bin/ruff check src tests benchmarks
	$(VENV)/bin/ruff format --check src tests benchmarks
	$(VENV)/bin/mypy

format: install-dev
	$(VENV)/bin/ruff format src tests benchmarks
	$(VENV)/bin/ruff check --fix src tests benchmarks

bench: install-dev
	$(PY) benchmarks/run_all.py

clean:
	rm -rf $(VENV) .pytest_cache .mypy_cache .ruff_cache build dist src/*.egg-info
