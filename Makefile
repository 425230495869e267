# mmlab: `make` runs the main job on the bundled data; `make test` checks everything.
SHELL := /bin/bash
.DEFAULT_GOAL := all
.DELETE_ON_ERROR:

export UV_PYTHON_DOWNLOADS := never
export UV_PYTHON_PREFERENCE := only-system
# The machine's interpreter (3.11); uv must not fetch a managed Python.
PYTHON ?= python3
VENV := .venv
PY := $(VENV)/bin/python
MMLAB := $(VENV)/bin/mmlab
SYNCED := $(VENV)/.synced
WARM := $(VENV)/.jit-warm
BYTECODE := $(VENV)/.bytecode
JIT_SOURCES := analysis/models/shrinker_kernel.py analysis/warm.py
C_SOURCES := $(wildcard analysis/ingest/ftrace/*.c)
BUILD := build

NOTEBOOKS := $(wildcard notebooks/*.py)
EXECUTED := $(patsubst notebooks/%.py,$(BUILD)/notebooks/%.ipynb,$(NOTEBOOKS))
SOURCES := $(shell find analysis -name '*.py')
DATA := $(shell find data -type f)

PAPER := papers/reclaim-throttling
PAPER_OUT := $(BUILD)/paper
# The report's and the paper's base and new run: the A/B pair captured back to back on an
# idle machine (`mmlab report --data data` compares every bundled run with the first).
AB_RUNS := data/stutterp-aa2 data/stutterp-ab-dirty5
# The patched-kernel sweep whose models and knob effects are the paper's results.
SWEEP := data/vm-6.12
# The designed sweeps (mmlab experiment run, one boot per run, randomised blocks) the
# paper's Results report, once bundled complete (kernels/in-progress keeps unfinished ones).
EXPERIMENTS := $(wildcard data/vm-6.12-lab/sweep-*)
# Each designed sweep's effects report (every setting, endpoint and pressure type).
EFFECTS := $(patsubst data/vm-6.12-lab/%,$(BUILD)/effects-%.txt,$(EXPERIMENTS))
# Debian packages the paper needs (pdflatex + booktabs, fonts, latexmk; bibtex with natbib's
# plainnat from texlive-binaries/texlive-latex-base; pdftotext/pdftoppm).
LATEX_PACKAGES := texlive-latex-recommended texlive-fonts-recommended texlive-binaries \
	latexmk poppler-utils

.PHONY: all setup test lint format bench lock clean paper latex browser validation kernels \
	kernels-test

all: $(BUILD)/report.txt $(EFFECTS) $(EXECUTED) paper
	@echo "== done: $(BUILD)/report.txt, $(BUILD)/effects-*.txt, $(BUILD)/notebooks/," \
		"$(PAPER_OUT)/main.pdf =="

# uv from PyPI if it is missing, then the locked environment (a no-op when current),
# byte-compiled at install: this machine sets PYTHONDONTWRITEBYTECODE, so nothing else would.
# Installing mmlab compiles its trace reader (C, analysis/ingest/ftrace/_parse.c): a C
# compiler and Python's headers must be there, and are checked first.
setup: $(SYNCED) $(WARM) $(BYTECODE)
$(SYNCED): pyproject.toml uv.lock $(C_SOURCES)
	@command -v $${CC:-cc} >/dev/null 2>&1 && $(PYTHON) -c "import os, sysconfig; \
		assert os.path.exists(os.path.join(sysconfig.get_paths()['include'], 'Python.h'))" \
		2>/dev/null || { echo "mmlab's trace reader is compiled C: install a C compiler and" \
		"Python's headers (Debian/Ubuntu: apt-get install gcc python3-dev)" >&2; exit 1; }
	@command -v uv >/dev/null 2>&1 || $(PYTHON) -m uv --version >/dev/null 2>&1 \
		|| $(PYTHON) -m pip install --quiet uv
	$$(command -v uv || echo $(PYTHON) -m uv) sync --locked --compile-bytecode --python $(PYTHON)
	@touch $@

# mmlab's own modules byte-compiled too (an editable install, which uv does not compile):
# without it every command compiles them again, ~0.2 s of CPU each time (benchmarks/stalls.md).
$(BYTECODE): $(SYNCED) $(SOURCES)
	$(PY) -m compileall -q analysis
	@touch $@

# numba compiles the shrinker model's kernels on their first call: done here, once per
# environment and again when their sources change, into numba's on-disk cache, so that no
# first model run pays it. (The trace reader is C, compiled by uv sync: benchmarks/ftrace.md.)
$(WARM): $(SYNCED) $(JIT_SOURCES)
	$(PY) -m analysis.warm
	@touch $@

$(BUILD)/report.txt: $(WARM) $(SOURCES) $(DATA)
	@echo "== report $@ =="
	@mkdir -p $(BUILD)
	@$(MMLAB) report $(AB_RUNS) --out $@

$(BUILD)/effects-%.txt: $(WARM) $(SOURCES) $(DATA)
	@echo "== effects $@ =="
	@mkdir -p $(BUILD)
	@$(MMLAB) experiment effects data/vm-6.12-lab/$* > $@

# papermill via `mmlab notebook`: .ipynb + .html; a failing cell names notebook, cell, line.
$(BUILD)/notebooks/%.ipynb: notebooks/%.py $(WARM) $(SOURCES) $(DATA)
	@echo "== notebook $< =="
	@$(MMLAB) notebook $< --out $(BUILD)/notebooks -p build_dir=$(BUILD) 2> >(grep -v IPKernelApp >&2)

# The paper: generated inputs (macros, tables, figures, hook sections), then latexmk with
# them on TEXINPUTS. latexmk leaves main.pdf alone when nothing it reads changed: touch it.
paper: $(PAPER_OUT)/main.pdf
$(PAPER_OUT)/.inputs: $(WARM) $(SOURCES) $(DATA) analysis/stats/validation_compare/results.json
	@echo "== paper inputs $(PAPER_OUT) =="
	@$(MMLAB) paper $(AB_RUNS) --sweep $(SWEEP) $(addprefix --experiment ,$(EXPERIMENTS)) \
		--out $(PAPER_OUT) >/dev/null
	@touch $@
# Prose: $(PAPER)/main.tex and sections/*.tex; references: refs.bib (bibtex, run by latexmk).
$(PAPER_OUT)/main.pdf: $(PAPER)/main.tex $(wildcard $(PAPER)/sections/*.tex) $(PAPER)/refs.bib \
		$(PAPER_OUT)/.inputs | latex
	@echo "== paper $@ (latexmk) =="
	@TEXINPUTS=$(PAPER_OUT)//:$(PAPER): BIBINPUTS=$(CURDIR)/$(PAPER): \
		latexmk -pdf -interaction=nonstopmode -halt-on-error -silent \
		-outdir=$(PAPER_OUT) $< >/dev/null || { tail -n 25 $(PAPER_OUT)/main.log; exit 1; }
	@touch $@

# LaTeX from Debian: installed here when root, otherwise the exact command to run.
latex:
	@if ! command -v latexmk >/dev/null || ! command -v pdftotext >/dev/null \
		|| ! command -v bibtex >/dev/null || ! kpsewhich booktabs.sty >/dev/null \
		|| ! kpsewhich plainnat.bst >/dev/null; then \
		if [ "$$(id -u)" = 0 ]; then \
			echo "== installing LaTeX: $(LATEX_PACKAGES) =="; \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
				--no-install-recommends $(LATEX_PACKAGES) >/dev/null; \
		else \
			echo "The paper needs LaTeX. Run: sudo apt-get install --no-install-recommends" \
				"$(LATEX_PACKAGES)" >&2; exit 1; \
		fi; \
	fi

# Debian tools the tests use: Chromium (every notebook chart draws with no network) and
# trace-cmd (a binary trace.dat is read through `trace-cmd report`).
TEST_TOOLS := chromium trace-cmd
browser:
	@if ! command -v chromium >/dev/null || ! command -v trace-cmd >/dev/null; then \
		if [ "$$(id -u)" = 0 ]; then \
			echo "== installing $(TEST_TOOLS) =="; \
			apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq \
				--no-install-recommends $(TEST_TOOLS) >/dev/null; \
		else \
			echo "The notebook chart and trace.dat tests need: sudo apt-get install" \
				"--no-install-recommends $(TEST_TOOLS)" >&2; exit 1; \
		fi; \
	fi

lint: $(SYNCED)
	$(VENV)/bin/ruff check analysis tests notebooks benchmarks
	$(VENV)/bin/ruff format --check analysis tests notebooks benchmarks

format: $(SYNCED)
	$(VENV)/bin/ruff format analysis tests notebooks benchmarks
	$(VENV)/bin/ruff check --fix analysis tests notebooks benchmarks

# Two workers (the machines have 2 cores); a file's tests stay on one worker, so a module's
# fixtures (the executed notebooks) are built once.
test: lint $(WARM) $(BYTECODE)
	$(PY) -m pytest -n 2 --dist loadfile

bench: $(WARM)
	$(PY) -m benchmarks.run --out benchmarks

# Simulated validation of mmlab compare/fit (SYNTHETIC data; ~30 min on one core): rewrites
# analysis/stats/validation_compare/results.{json,md}, which the paper reads. Not in make test.
# The real A/A pairs (same kernel and configuration twice) among the bundled captures.
REAL_AA := --real-aa data/mmtests-ci/work/log.ltccip8.2020-06-12_1807 \
	data/mmtests-ci/work/log.ltccip8.2020-06-14_0656 --real-aa data/stutterp-aa1 data/stutterp-aa2
validation: $(SYNCED)
	nice -n 10 $(PY) -m analysis.stats.validation_compare $(REAL_AA)

# Regenerate the lock and the conda environment's pinned requirements together.
lock:
	$$(command -v uv || echo $(PYTHON) -m uv) lock
	$$(command -v uv || echo $(PYTHON) -m uv) export --frozen --no-default-groups --no-emit-project \
		--no-hashes --format requirements-txt -o requirements.lock.txt

# Patched kernels for `mmlab capture --kernel` (not part of `make`: tens of minutes on two
# cores): Debian's linux-source-6.12 + kernels/patches/ -> build/kernels/bzImage + build.json.
# virtme-ng (dependency group `kernels`) is in the default sync of `make setup`.
kernels: $(SYNCED)
	bash kernels/build.sh
# Boots build/kernels/bzImage under virtme-ng (skipped when qemu or the image is missing).
kernels-test: $(SYNCED)
	PATH=$(CURDIR)/$(VENV)/bin:$$PATH MMLAB_VM_TESTS=1 $(PY) -m pytest -m vm tests/test_capture_vm_boot.py

clean:
	rm -rf $(BUILD) .pytest_cache .ruff_cache .hypothesis
