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

# Mutation testing of the evidence-critical modules (scripts/mutation.py; ~1,300 mutants:
# hours on a busy 2-core machine, docs/mutation.md gives each module's count).
# One module: make mutation MODULES=ledger/store/log.py
mutation:
	nice -n 5 $(PYTHON) scripts/mutation.py $(MODULES)
