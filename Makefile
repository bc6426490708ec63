# medspot developer commands. `make demo` and `make test` are the README's two commands.
PYTHON ?= python3
VENV   ?= .venv
PY     := $(VENV)/bin/python
PIP    := $(PY) -m pip

# BrowserGym's own environment (docs/browsergym.md): browsergym-core pins playwright==1.44.0, the
# main environment runs a current Playwright; the BrowserGym tests run here (started by
# tests/live/test_browsergym_suite.py). AgentLab for its generic agent's test: agentlab itself
# without its dependencies (they bring torch, ray, gradio and every BrowserGym benchmark), and
# what its generic agent and experiment loop import.
BG_VENV ?= .venv-browsergym
BG_PY   := $(BG_VENV)/bin/python
AGENTLAB      := agentlab==0.4.2
AGENTLAB_DEPS := browsergym-experiments==0.14.3 'openai>=1.7,<2' anthropic litellm pandas \
                 pyyaml requests python-slugify joblib contexttimer python-dotenv

.PHONY: install install-dev install-browsergym demo test test-fast lint format bench clean

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

$(BG_VENV)/.installed: pyproject.toml
	$(PYTHON) -m venv $(BG_VENV)
	$(BG_PY) -m pip install -q --no-compile --upgrade pip
	$(BG_PY) -m pip install -q --no-compile -e '.[browsergym]' pytest pytest-timeout \
		$(AGENTLAB_DEPS)
	$(BG_PY) -m pip install -q --no-compile --no-deps $(AGENTLAB)
	touch $@

install: $(VENV)/.installed
install-dev: $(VENV)/.installed-dev
install-browsergym: $(BG_VENV)/.installed

demo: install
	$(VENV)/bin/medspot demo

test: install-dev install-browsergym
	$(PY) -m pytest -q -n 2 --dist worksteal --durations=30

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
	rm -rf $(VENV) $(BG_VENV) .pytest_cache .mypy_cache .ruff_cache build dist src/*.egg-info
