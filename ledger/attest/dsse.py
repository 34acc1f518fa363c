"""DSSE envelopes (github.com/secure-systems-lab/dsse), the signature format in-toto uses.

The signature covers ``PAE(payloadType, payload)``, never the JSON around it, so the envelope
can be re-serialised freely and the payload type cannot be swapped.
"""

from __future__ import annotations

import base64
import binascii
from typing import TYPE_CHECKING, Any

from .._parse import MAX_RECORD_DEPTH, load_json
from ..errors import UsageError
from .keys import key_id

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import (
        Ed25519PrivateKey,
        Ed25519PublicKey,
    )

__all__ = ["PAYLOAD_TYPE", "open_envelope", "pae", "sign_envelope"]

PAYLOAD_TYPE = "application/vnd.in-toto+json"


def pae(payload_type: str, payload: bytes) -> bytes:
    """Pre-Authentication Encoding: ``DSSEv1 SP LEN(type) SP type SP LEN(body) SP body``."""
    t = payload_type.encode()
    return b"DSSEv1 %d %s %d %s" % (len(t), t, len(payload), payload)


def sign_envelope(payload: bytes, key: Ed25519PrivateKey) -> dict[str, Any]:
    sig = key.sign(pae(PAYLOAD_TYPE, payload))
    return {
        "payloadType": PAYLOAD_TYPE,
        "payload": base64.b64encode(payload).decode(),
        "signatures": [{"keyid": key_id(key.public_key()), "sig": base64.b64encode(sig).decode()}],
    }


def open_envelope(envelope: Any, key: Ed25519PublicKey) -> bytes | None:
    """The payload if a signature by ``key`` verifies, else None. Malformed: UsageError."""
    from cryptography.exceptions import InvalidSignature

    try:
        if envelope["payloadType"] != PAYLOAD_TYPE:
            raise UsageError(f"payloadType is {envelope['payloadType']!r}, not {PAYLOAD_TYPE!r}")
        payload = base64.b64decode(envelope["payload"], validate=True)
        sigs = [base64.b64decode(s["sig"], validate=True) for s in envelope["signatures"]]
    except (KeyError, TypeError, binascii.Error) as e:
        raise UsageError(
            f"not a DSSE envelope ({type(e).__name__}: {e})",
            hint="give the file `ledger attest` wrote",
        ) from None
    message = pae(PAYLOAD_TYPE, payload)
    for sig in sigs:
        try:
            key.verify(sig, message)
        except InvalidSignature:
            continue
        return payload
    return None


def parse_payload(payload: bytes) -> dict[str, Any]:
    try:
        value = load_json(payload.decode("utf-8"), max_depth=MAX_RECORD_DEPTH)
    except ValueError as e:
        raise UsageError(f"the signed payload is not JSON: {e}") from None
    if not isinstance(value, dict):
        raise UsageError("the signed payload is not an in-toto Statement")
    return value
