#!/usr/bin/env bash
# `make lock`: re-resolve requirements/lock.txt (every package `make install` installs, exact
# versions with their sha256 hashes) from pyproject.toml's `all` extra and requirements/lock.in,
# and requirements/no-deps.txt (rliable, installed without its dependencies). Pins already in
# the lock are kept where they still fit; arguments go to pip-compile:
#   make lock                                   # after a change to pyproject.toml
#   make lock LOCK_FLAGS=--upgrade              # every package to its newest release
#   make lock LOCK_FLAGS="--upgrade-package mypy"
# pip-tools runs in a throwaway venv with pip's own configuration (find-links included, where
# torch's CPU build lies), so the lock resolves as `make install` will install it.
set -euo pipefail
cd "$(dirname "$0")/.."
PYTHON="${PYTHON:-python3}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
"$PYTHON" -m venv "$tmp/venv"
"$tmp/venv/bin/pip" install -q pip-tools==7.6.2
# pip itself is left to the environment; ledger-repro is the project (`make install` adds it
# editable), which its own `all` extra names.
CUSTOM_COMPILE_COMMAND="make lock" "$tmp/venv/bin/pip-compile" --quiet --generate-hashes \
  --strip-extras --extra all --unsafe-package pip --unsafe-package ledger-repro \
  --no-emit-index-url --no-emit-find-links --output-file requirements/lock.txt "$@" \
  pyproject.toml requirements/lock.in
# rliable's metrics cross-check the audit's multi-task statistics (tests/stats); it pins an
# arch that does not import with the locked pandas, so it is installed alone (--no-deps).
"$tmp/venv/bin/pip" download -q --no-deps -d "$tmp/dl" rliable==1.2.0
{
  echo "# Installed with --no-deps beside lock.txt (\`make install\`); written by \`make lock\`."
  echo "# rliable: its metrics only (tests/stats); its bootstrap module needs an arch that does"
  echo "# not import with the locked pandas."
  for f in "$tmp"/dl/*; do
    echo "rliable==1.2.0 --hash=sha256:$(sha256sum "$f" | cut -d' ' -f1)"
  done
} > requirements/no-deps.txt
# `make demo`'s part of the lock (the core and the torch extra), its entries as written above.
"$PYTHON" scripts/lock_subset.py
echo "scripts/lock.sh: requirements/lock.txt, no-deps.txt and demo.txt written"
