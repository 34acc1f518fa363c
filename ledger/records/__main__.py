"""Write the JSON Schema of every record kind: ``python -m ledger.records schemas/``."""

from __future__ import annotations

import sys
from pathlib import Path

from .schemas import write_schemas

if __name__ == "__main__":
    out = Path(sys.argv[1] if len(sys.argv) > 1 else "schemas")
    for path in write_schemas(out):
        print(path)
