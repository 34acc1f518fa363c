#!/usr/bin/env bash
# The test command: pytest (exit 5, "no tests collected", is a failure), then the docs build,
# ruff and mypy. Called by `make test` and by .ci/run.
set -uo pipefail
cd "$(dirname "$0")/.."
# The Python `make` installed into (its PYTHON: e.g. a virtual environment's, not activated)
# runs everything below, the checks' tools too, not whichever come first on PATH.
py="${PYTHON:-python3}"
# pytest-xdist: a worker per core and one more (at most 4: a distributed test starts up to 4
# processes), an idle worker taking tests from a busy one; LEDGER_TEST_WORKERS=N sets the
# count, 0 runs all in this process. The one more: tests wait on their children, on sleeps
# and on the disk, and with a worker per core 2 cores were 89% busy (idle machine, 908 s
# of wall for 1,622 s of CPU).
# The tests marked heavy (minutes each, beside cheaper tests of the same thing) are left out;
# LEDGER_TEST_HEAVY=1 runs only them, and no checks after (`make test-heavy`; CI runs both).
# A -m of your own in the arguments comes last and wins.
if [ "${LEDGER_TEST_HEAVY:-0}" = 1 ]; then
  marks="heavy"
else
  marks="not heavy"
fi
# Bytecode: with PYTHONDONTWRITEBYTECODE set (.ci/run sets it, and so do many containers) no
# process caches what it compiles, and each `python -m ledger` and recorded program a test
# starts compiled ledger's sources again (~0.1 s of CPU, thousands of starts). Compiled once
# here into ledger's __pycache__ folders (ignored by git); a source changed since is compiled
# afresh by Python, as ever.
"$py" -m compileall -q -j 0 ledger >/dev/null || exit 1
# The same for the test modules as pytest rewrites them for their assertions: cached in
# __pycache__ during collection (tests/conftest.py, _CachedRewrites), not rewritten by every
# worker at every run. A collection's CPU: 17.6 s uncached, 9.5 s cached (3 workers collecting,
# load 12: 33.2 s of wall and 59.3 s of CPU before the first test, 20.3 s and 31.7 s cached).
export LEDGER_TEST_CACHE_REWRITES=1
"$py" -m pytest -q -p no:cacheprovider -n "${LEDGER_TEST_WORKERS:-$(($(nproc) + 1))}" --maxprocesses 4 \
  --dist worksteal -m "$marks" "$@"
rc=$?
if [ $rc -eq 5 ]; then
  echo "scripts/test.sh: pytest collected no tests: failing" >&2
  exit 1
elif [ $rc -ne 0 ]; then
  exit $rc
fi
# LEDGER_TEST_CHECKS=0: pytest only (a subset run by hand, scripts/test-under-load.sh).
if [ "${LEDGER_TEST_CHECKS:-1}" = 0 ] || [ "${LEDGER_TEST_HEAVY:-0}" = 1 ]; then
  exit 0
fi
set -e
"$py" -m mkdocs build --strict -q -d "${TMPDIR:-/tmp}/ledger-site"
"$py" -m ruff check .
"$py" -m ruff format --check .
"$py" -m mypy
echo "scripts/test.sh: all checks passed"
