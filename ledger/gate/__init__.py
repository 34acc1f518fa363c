"""``ledger gate``: judge a checkpoint for delivery (export, precision, batching and memory,
KV-cache decoding, poison inputs). Importing this package does not import torch or ONNX."""

from __future__ import annotations

from .run import GATE_CHECKS, GateResult, run_gate, store_gate

__all__ = ["GATE_CHECKS", "GateResult", "run_gate", "store_gate"]
