# One command runs the demo, one runs the tests; each installs what it needs first.
PY ?= python3
VENV ?= .venv
BIN := $(VENV)/bin
STAMP := $(VENV)/.installed
# Where the browser tests leave their screenshots of the page (wide, dashboard, 390 px).
ARTIFACTS ?= test-output
# Test processes: one per core by default.
WORKERS ?= auto
XDIST := -n $(WORKERS) --dist loadgroup

.PHONY: install lock demo test test-fast lint docs bench bench-quick clean

$(STAMP): pyproject.toml requirements.lock scripts/install.sh
	PY=$(PY) VENV=$(VENV) bash scripts/install.sh
	touch $(STAMP)

install: $(STAMP)

# Re-resolves every dependency from pyproject.toml's ranges into requirements.lock (run it after
# changing dependencies, then `make test`, and commit the lock with the change).
lock:
	PY=$(PY) bash scripts/lock.sh

# A short Mean-CVaR session and a short unified (PPO + CVaR overlay) session on the embedded
# S&P 500 data with the embedded TPE proposer, then the loop on the first one's winner: the
# policy library, a deployment check, a paper tick, its review and the preference pairs.
demo: $(STAMP)
	BIN=$(BIN) bash scripts/demo.sh

# The tests run on every core (pytest-xdist; WORKERS=0 runs them in one process): a module whose
# tests share a fixture stays on one worker, and the heavy tests (a Ray cluster, worker
# processes) share one worker, so two never overlap (tests/conftest.py groups them).
test: $(STAMP)
	ALPHALOOP_TEST_ARTIFACTS=$(ARTIFACTS) $(BIN)/python -m pytest -q $(XDIST) --timeout=900

test-fast: $(STAMP)
	$(BIN)/python -m pytest -q $(XDIST) -m "not slow"

# Also prints how many parameters and returns of alphaloop are annotated `Any` (ruff's ANN401),
# a figure to lower, not a gate: `Any` belongs where JSON enters or leaves, not where the type
# is known.
lint: $(STAMP)
	$(BIN)/ruff check alphaloop tests benchmarks
	$(BIN)/ruff format --check alphaloop tests benchmarks
	@$(BIN)/ruff check --select ANN401 --statistics --exit-zero alphaloop \
		| awk '{n += $$1} END {print "Any annotations (ruff ANN401, alphaloop):", n + 0}'

# The docs site in build/site, offline and strict (a broken link or reference fails it): the
# command and API reference pages are written from the code at build time.
docs: $(STAMP)
	NO_MKDOCS_2_WARNING=1 $(BIN)/mkdocs build --strict

bench: $(STAMP)
	$(BIN)/python -m benchmarks.run_all

bench-quick: $(STAMP)
	$(BIN)/python -m benchmarks.run_all --quick

clean:
	rm -rf $(VENV) .pytest_cache .ruff_cache build *.egg-info $(ARTIFACTS)
