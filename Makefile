# claudetto: make run | make demo | make test
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: run demo test lint suite bench clean

$(BIN)/python:
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip

$(VENV)/.runtime: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[fast]'
	$(BIN)/python -m compileall -q app hooks
	touch $@

$(VENV)/.test: pyproject.toml | $(BIN)/python
	$(BIN)/python -m pip install -q -e '.[fast,test]'
	$(BIN)/python -m compileall -q app hooks
	touch $(VENV)/.runtime $@

run: $(VENV)/.runtime
	$(BIN)/claudetto

demo: $(VENV)/.runtime
	$(BIN)/claudetto --demo

lint: $(VENV)/.test
	$(BIN)/ruff check .
	$(BIN)/mypy
	$(BIN)/lint-imports

# The linters (one process each, a few seconds) run beside the suite, not before it; each
# one's output is shown whole when it ends.
test: $(VENV)/.test
	$(BIN)/python -m compileall -q app hooks
	$(MAKE) --no-print-directory -j2 --output-sync=target lint suite

# Three workers on two cores: much of the suite waits (the dashboard's pilot pauses, the
# plugin's pip install, git and hook subprocesses), and a third worker fills those waits;
# worksteal hands a long test's queue to whichever worker is free.
# Bytecode is written even where PYTHONDONTWRITEBYTECODE is set: without it each worker
# rewrites the asserts of every test module and plugin again (~4 s of CPU a worker), and each
# of the suite's hundreds of hook and CLI processes compiles again every module changed
# since the last compileall.
suite: $(VENV)/.test
	PYTHONDONTWRITEBYTECODE= $(BIN)/pytest -n 3 --dist worksteal -q --durations=30

bench: $(VENV)/.runtime
	$(BIN)/python -m compileall -q app hooks
	for b in bench/*.py; do $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV)
