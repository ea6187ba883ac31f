# One command runs the demo, one runs the tests; each installs what it needs first.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed

.PHONY: install demo test test-fast lint bench clean

$(STAMP): pyproject.toml scripts/install.sh
	PY=$(PY) VENV=$(VENV) bash scripts/install.sh
	touch $(STAMP)

install: $(STAMP)

demo: $(STAMP)
	$(BIN)/python -m alphaloop.demo

test: $(STAMP)
	$(BIN)/python -m pytest -q --timeout=900

test-fast: $(STAMP)
	$(BIN)/python -m pytest -q -m "not slow"

lint: $(STAMP)
	$(BIN)/ruff check alphaloop tests benchmarks
	$(BIN)/ruff format --check alphaloop tests benchmarks

bench: $(STAMP)
	$(BIN)/python -m benchmarks.run_all

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache build *.egg-info
