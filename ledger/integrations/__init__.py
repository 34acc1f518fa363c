"""Adapters that connect training frameworks to ledger's runtime.

``ledger.integrations.lightning`` (PyTorch Lightning) and ``ledger.integrations.hf`` (Hugging
Face ``transformers``). Importing a module here never imports its framework; its classes load
it on first access and name the extra to install when it is missing.
"""

from __future__ import annotations

__all__: list[str] = []
