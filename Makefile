# The two commands of the README. Both create .venv when it is missing, install the pinned torch
# first, then the package with its dev and sim extras. TORCH_INDEX points pip at another wheel index for
# torch alone, e.g. `make verify TORCH_INDEX=https://download.pytorch.org/whl/cpu` where PyPI's
# torch would be the multi-GB CUDA build (Linux x86-64); empty (the default): PyPI.
PYTHON ?= python3
VENV   := .venv
BIN    := $(VENV)/bin
STAMP  := $(VENV)/.installed
TORCH  := torch==2.13.0
TORCH_INDEX ?=
REPORT ?= report
TIER   ?= quick
SEEDS  ?= 3
# tasks at a time: 2 runs them on a local Ray with two workers (one per core); 1 runs inline
WORKERS ?= 2

.PHONY: verify test lint bench setup clean i18n

$(STAMP): pyproject.toml
	@test -x $(BIN)/python || $(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install --quiet $(TORCH) $(if $(TORCH_INDEX),--index-url $(TORCH_INDEX))
	$(BIN)/python -m pip install --quiet -e '.[dev,sim]'
	@touch $(STAMP)

setup: $(STAMP)

verify: $(STAMP)
	$(BIN)/tmath verify --tier $(TIER) --seeds $(SEEDS) --workers $(WORKERS) \
		--report $(REPORT) --json $(REPORT)/results.json

test: $(STAMP)
	$(BIN)/ruff check .
	$(BIN)/python -m pytest -q -n 2 --dist loadgroup

bench: $(STAMP)
	$(BIN)/tmath bench

# extract the msg(...) ids from src/, update the .po catalogs, compile the committed .mo files
i18n: $(STAMP)
	$(BIN)/python tools/i18n_catalog.py

clean:
	rm -rf $(VENV) $(REPORT) .pytest_cache .ruff_cache
