"""Ed25519 signing keys: generated here or with openssl, held by the user, never in a ledger."""

from __future__ import annotations

import hashlib
import os
from pathlib import Path
from typing import TYPE_CHECKING

from ..errors import UsageError

if TYPE_CHECKING:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import (
        Ed25519PrivateKey,
        Ed25519PublicKey,
    )

__all__ = [
    "SIGNING_KEY_ENV",
    "VERIFY_KEY_ENV",
    "generate_key",
    "key_id",
    "load_private_key",
    "load_public_key",
    "resolve_key_path",
]

SIGNING_KEY_ENV = "LEDGER_SIGNING_KEY"  # path of the private key `ledger attest` signs with
VERIFY_KEY_ENV = "LEDGER_VERIFY_KEY"  # path of the public key `verify-attestation` trusts
_KEYGEN_HINT = "create one with `ledger keygen KEYFILE` or `openssl genpkey -algorithm ed25519`"


def resolve_key_path(explicit: Path | None, env: str, ledger_root: Path | None) -> Path:
    """``explicit``, else ``$env``; a key inside the ledger would travel with it: refused."""
    text = str(explicit) if explicit is not None else os.environ.get(env)
    if not text:
        raise UsageError(f"no key given: pass --key or set {env}", hint=_KEYGEN_HINT)
    path = Path(text).expanduser().absolute()
    if ledger_root is not None and path.resolve().is_relative_to(ledger_root.resolve()):
        raise UsageError(
            f"the key {path} is inside the ledger {ledger_root}",
            hint="keep signing keys outside the ledger: anyone given the ledger would get it",
        )
    return path


def _read(path: Path) -> bytes:
    try:
        return path.read_bytes()
    except OSError as e:
        raise UsageError(f"cannot read key {path}: {e.strerror}", hint=_KEYGEN_HINT) from None


def load_private_key(path: Path) -> Ed25519PrivateKey:
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import load_pem_private_key

    try:
        key = load_pem_private_key(_read(path), password=None)
    except TypeError:
        raise UsageError(
            f"the key {path} is encrypted",
            hint="ledger reads unencrypted PEM keys; keep the file private (mode 600)",
        ) from None
    except ValueError as e:
        raise UsageError(f"{path} is not a PEM private key ({e})", hint=_KEYGEN_HINT) from None
    if not isinstance(key, Ed25519PrivateKey):
        raise UsageError(f"{path} is not an Ed25519 key", hint=_KEYGEN_HINT)
    return key


def load_public_key(path: Path) -> Ed25519PublicKey:
    """A PEM public key, or the public half of a PEM private key."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PublicKey
    from cryptography.hazmat.primitives.serialization import load_pem_public_key

    data = _read(path)
    if b"PRIVATE KEY" in data:
        return load_private_key(path).public_key()
    try:
        key = load_pem_public_key(data)
    except ValueError as e:
        raise UsageError(f"{path} is not a PEM public key ({e})", hint=_KEYGEN_HINT) from None
    if not isinstance(key, Ed25519PublicKey):
        raise UsageError(f"{path} is not an Ed25519 key", hint=_KEYGEN_HINT)
    return key


def key_id(key: Ed25519PublicKey) -> str:
    """SHA-256 of the raw 32-byte public key, hex: names the key in a DSSE signature."""
    from cryptography.hazmat.primitives.serialization import Encoding, PublicFormat

    return hashlib.sha256(key.public_bytes(Encoding.Raw, PublicFormat.Raw)).hexdigest()


def generate_key(path: Path) -> tuple[Path, str]:
    """Write a new private key to ``path`` (mode 600) and its public key to ``path.pub``."""
    from cryptography.hazmat.primitives.asymmetric.ed25519 import Ed25519PrivateKey
    from cryptography.hazmat.primitives.serialization import (
        Encoding,
        NoEncryption,
        PrivateFormat,
        PublicFormat,
    )

    pub_path = path.with_name(path.name + ".pub")
    for p in (path, pub_path):
        if p.exists():
            raise UsageError(f"{p} exists; not overwriting a key", hint="choose another path")
    key = Ed25519PrivateKey.generate()
    private = key.private_bytes(Encoding.PEM, PrivateFormat.PKCS8, NoEncryption())
    public = key.public_key().public_bytes(Encoding.PEM, PublicFormat.SubjectPublicKeyInfo)
    try:
        # Like ~/.config/ledger/ in the docs: a missing folder for keys is made private.
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o600)
        with os.fdopen(fd, "wb") as f:
            f.write(private)
        pub_path.write_bytes(public)
    except OSError as e:
        raise UsageError(
            f"cannot write {path}: {e.strerror}", hint="check the folder and its permissions"
        ) from None
    return pub_path, key_id(key.public_key())
