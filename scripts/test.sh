#!/usr/bin/env bash
# The test command: pytest (exit 5, "no tests collected", is a failure), then the docs build,
# ruff and mypy. Called by `make test` and by .ci/run.
set -uo pipefail
cd "$(dirname "$0")/.."
python3 -m pytest -q -p no:cacheprovider "$@"
rc=$?
if [ $rc -eq 5 ]; then
  echo "scripts/test.sh: pytest collected no tests: failing" >&2
  exit 1
elif [ $rc -ne 0 ]; then
  exit $rc
fi
set -e
mkdocs build --strict -q -d "${TMPDIR:-/tmp}/ledger-site"
ruff check .
ruff format --check .
mypy
echo "scripts/test.sh: all checks passed"
