"""Claim audits: check a paper's reported numbers against the runs recorded in the ledger.

``audit(store, "claims.yaml")`` loads and validates the claims (per claim, with file lines),
selects each claim's runs, computes the statistics with :mod:`ledger.stats`, stores an
``audit`` record under ``audits/<id>`` and returns it; ``render_text``, ``render_markdown``
and ``render_html`` turn it into reports. See docs/how-to/audit-claims.md.
"""

from __future__ import annotations

from .check import AuditResult, audit, exit_code_for, load_audit
from .claims import (
    Claim,
    ClaimsFile,
    ClaimSource,
    ComparisonClaim,
    RunSelector,
    claims_json_schema,
    write_claims_schema,
)
from .load import LoadedClaim, LoadedClaims, load_claims, parse_claims
from .replays import ReplayCheck, Replayer
from .report_html import render_html
from .report_markdown import render_markdown
from .report_text import render_text

__all__ = [
    "AuditResult",
    "Claim",
    "ClaimSource",
    "ClaimsFile",
    "ComparisonClaim",
    "LoadedClaim",
    "LoadedClaims",
    "ReplayCheck",
    "Replayer",
    "RunSelector",
    "audit",
    "claims_json_schema",
    "exit_code_for",
    "load_audit",
    "load_claims",
    "parse_claims",
    "render_html",
    "render_markdown",
    "render_text",
    "write_claims_schema",
]
