# The two commands of the README. Both create .venv when it is missing, install the CPU build of
# torch first (so pip never chooses a multi-GB CUDA build), then the package with its dev extra.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
TORCH  := torch==2.13.0
REPORT ?= report
TIER   ?= quick

.PHONY: verify test lint bench setup clean

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet $(TORCH)
	$(BIN)/python -m pip install --quiet -e '.[dev]'
	@touch $(STAMP)

setup: $(STAMP)

verify: $(STAMP)
	$(BIN)/tmath verify --tier $(TIER) --report $(REPORT) --json $(REPORT)/results.json

test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q -n 2 --dist loadgroup

bench: $(STAMP)
	$(BIN)/tmath bench

clean:
	rm -rf $(VENV) $(REPORT) .pytest_cache .ruff_cache
