# Two commands do all the set-up on a fresh machine (see README):
#   make demo   install, then record a small training run and replay it
#   make test   install, then run the test suite, docs build, ruff and mypy
PYTHON ?= python3
PIP := $(PYTHON) -m pip

.PHONY: install demo test bench docs mutation

# torch first, pinned to the CPU build on this machine's disk, so the range in the
# torch extra installs nothing more (a bare torch requirement pulls a multi-GB CUDA build).
install:
	$(PIP) install -q torch==2.13.0
	$(PIP) install -q -e '.[all]'
	# rliable's metrics cross-check the audit's multi-task statistics (tests/stats); its
	# bootstrap module needs arch, which does not import with this pandas: metrics only.
	$(PIP) install -q --no-deps rliable==1.2.0

demo: install
	bash examples/demo.sh

test: install
	bash scripts/test.sh

bench: install
	$(PYTHON) -m bench

docs: install
	mkdocs build --strict

# Mutation testing of the evidence-critical modules (scripts/mutation.py, docs/mutation.md).
# Each mutant runs only the tests that cover it, two at a time; results are cached, so a
# second run redoes only what changed; no mutant starts after 30 minutes (run again to resume).
# One module: make mutation MODULES=ledger/store/log.py; every test for each mutant:
# make mutation MUTATION_FLAGS="--no-select"
MUTATION_FLAGS ?= --budget 30m --jobs 2
mutation:
	nice -n 5 $(PYTHON) scripts/mutation.py $(MUTATION_FLAGS) $(MODULES)
