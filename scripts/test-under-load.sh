#!/usr/bin/env bash
# The suite (or the tests named, passed through to scripts/test.sh) while two processes burn
# a CPU each: a test that holds only on an idle machine fails here. The burners are stopped at
# the end whatever happens (success, failure, Ctrl-C). LEDGER_LOAD_BURNERS sets their number.
#   bash scripts/test-under-load.sh                      # the whole suite, then the checks
#   LEDGER_TEST_CHECKS=0 bash scripts/test-under-load.sh tests/test_process_guard.py
set -uo pipefail
cd "$(dirname "$0")/.."
burners=()
stop_burners() {
  for pid in "${burners[@]}"; do
    kill "$pid" 2>/dev/null
  done
  for pid in "${burners[@]}"; do
    wait "$pid" 2>/dev/null
  done
  burners=()
}
trap stop_burners EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
for _ in $(seq "${LEDGER_LOAD_BURNERS:-2}"); do
  # A shell loop of builtins: one CPU busy, no child processes, no memory.
  bash -c 'while :; do :; done' &
  burners+=("$!")
done
echo "scripts/test-under-load.sh: ${#burners[@]} CPU burners running (pids ${burners[*]})" >&2
bash scripts/test.sh "$@"
