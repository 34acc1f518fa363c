# Two commands do all the set-up on a fresh machine (see README):
#   make demo   install what the demo needs, then record a small training run and replay it
#   make test   install everything, then run the test suite, docs build, ruff and mypy
#               (make test-heavy: the few tests it leaves out; CI runs both)
PYTHON ?= python3
PIP := $(PYTHON) -m pip

.PHONY: install install-demo lock demo test test-heavy bench docs mutation

# Exact versions from the lock (requirements/lock.txt: every package, each with its sha256
# hashes, torch's CPU build among them), then ledger itself, editable, built by the locked
# setuptools. --no-deps: the lock is complete, and rliable (requirements/no-deps.txt) comes
# without the arch it pins. `make lock` re-resolves the lock (docs/explanation/design.md).
install:
	$(PIP) install -q --require-hashes --no-deps -r requirements/lock.txt -r requirements/no-deps.txt
	$(PIP) install -q --no-deps --no-build-isolation -e .

# Re-resolve the lock after a change to pyproject.toml (LOCK_FLAGS=--upgrade: newest releases).
LOCK_FLAGS ?=
lock:
	PYTHON=$(PYTHON) bash scripts/lock.sh $(LOCK_FLAGS)

# Only what the demo runs: ledger's core and its torch extra, at the lock's versions and with
# its hashes (requirements/demo.txt: lock.txt's entries for them, which `make lock` writes with
# scripts/lock_subset.py), not every extra `make test` needs.
install-demo:
	$(PIP) install -q --require-hashes --no-deps -r requirements/demo.txt
	$(PIP) install -q --no-deps --no-build-isolation -e .

demo: install-demo
	PYTHON=$(PYTHON) bash examples/demo.sh

test: install
	PYTHON=$(PYTHON) bash scripts/test.sh

# The tests marked heavy, which `make test` leaves out (minutes each, beside cheaper tests of
# the same thing); pytest only. CI runs `make test test-heavy`.
test-heavy: install
	PYTHON=$(PYTHON) LEDGER_TEST_HEAVY=1 bash scripts/test.sh

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
