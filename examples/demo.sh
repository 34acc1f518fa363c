#!/usr/bin/env bash
# The main job, end to end: record the bundled tiny training run (examples/tiny) with
# `ledger record`, then replay it with `ledger replay` and print the verdict.
# It works in a throwaway git repository so your own tree is never touched.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
# The Python `make demo` installed into (its PYTHON, e.g. a virtual environment's that is not
# activated), not whichever `ledger` and `python3` come first on PATH; its absolute path, so
# that a relative PYTHON still names it after the cd below.
py=$("${PYTHON:-python3}" -c 'import sys; print(sys.executable)')
ledger() { "$py" -m ledger "$@"; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp "$here/tiny/train.py" "$here/tiny/data.csv" "$work/"
cd "$work"
export GIT_AUTHOR_NAME=demo GIT_AUTHOR_EMAIL=demo@example.invalid
export GIT_COMMITTER_NAME=demo GIT_COMMITTER_EMAIL=demo@example.invalid
git init -q && git add -A && git commit -qm "tiny example"
ledger init
ledger record --name tiny --input data.csv --output out \
  --metric 'epoch (?P<step>\d+) loss (?P<loss>\S+) acc (?P<acc>\S+)' \
  -- "$py" train.py --epochs 10
ledger ls
ledger replay tiny --mode bitwise
ledger verify
