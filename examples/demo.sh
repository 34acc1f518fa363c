#!/usr/bin/env bash
# The main job, end to end, in a throwaway folder: create a ledger, store a file, verify it.
set -euo pipefail
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
export LEDGER_DIR="$work/.ledger"
ledger init
echo "hello ledger" > "$work/hello.txt"
python3 - "$work/hello.txt" <<'PY'
import sys
from ledger import Store
store = Store.open()
oid = store.objects.put_file(sys.argv[1])
store.set_ref("demo/hello", oid)
print("stored", oid)
PY
ledger verify
