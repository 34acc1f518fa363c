"""Content-addressed storage: objects, refs, hash-chained log, verification and gc."""

from .objects import ObjectStore
from .repo import FORMAT_VERSION, Store, find_ledger_dir

__all__ = ["FORMAT_VERSION", "ObjectStore", "Store", "find_ledger_dir"]
