# claudetto: make run | make demo | make test
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin

.PHONY: run demo test lint bench clean

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

# Three workers on two cores: much of the suite waits (the dashboard's pilot pauses, the
# plugin's pip install, git and hook subprocesses), and a third worker fills those waits;
# worksteal hands a long test's queue to whichever worker is free.
test: lint
	$(BIN)/pytest -n 3 --dist worksteal -q --durations=30

bench: $(VENV)/.runtime
	$(BIN)/python -m compileall -q app hooks
	for b in bench/*.py; do $(BIN)/python $$b || exit 1; done

clean:
	rm -rf $(VENV)
