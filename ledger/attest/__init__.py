"""Signed attestations: in-toto Statements about runs, in DSSE envelopes signed with Ed25519."""

from .check import AttestationReport, attest_run, read_envelope, verify_attestation
from .keys import generate_key, load_private_key, load_public_key

__all__ = [
    "AttestationReport",
    "attest_run",
    "generate_key",
    "load_private_key",
    "load_public_key",
    "read_envelope",
    "verify_attestation",
]
