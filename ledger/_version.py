"""The package version, in a module of its own so that any layer can read it without importing
``ledger/__init__.py`` (which imports the run layer)."""

__version__ = "0.1.0"
