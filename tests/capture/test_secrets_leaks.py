"""Leaks that mutation testing (issue #18, fifth round) found unchecked in
``ledger.capture.secrets``: a known value inside a larger base64 blob at any alignment and in
either alphabet, a value with spaces written as ``+`` in a query string, a one-line hunk before
the next file's header, and a crafted patch name holding a NUL."""

from __future__ import annotations

import base64
from collections.abc import Callable
from pathlib import Path

import pytest

from ledger.capture.secrets import KnownSecret, Scrubber, redact_patch, restore_patch_context

# Found by a detect-secrets plugin only: the name rules do not know Stripe keys.
STRIPE = "sk_live_4eC39HqLyjWDarjtT1zdp7dc"


# Its base64 text holds `+` and `/` at every alignment (and `-`, `_` in the URL-safe alphabet).
SHIFTED = "tok~en?>>secret~value"


@pytest.mark.parametrize("shift", [0, 1, 2])
@pytest.mark.parametrize("encode", [base64.b64encode, base64.urlsafe_b64encode])
def test_a_value_inside_a_larger_base64_blob_is_redacted_at_every_alignment(
    shift: int, encode: Callable[[bytes], bytes]
) -> None:
    # A credential inside a base64 blob (a basic-auth header, an encoded config, a JWT) starts
    # at any byte of it: its text then depends on the bytes before it, one of three alignments.
    blob = encode(b"u" * shift + SHIFTED.encode() + b"!tail")
    out = Scrubber([KnownSecret("API_TOKEN", SHIFTED)]).scrub(b"auth: " + blob + b"\n", "log")
    assert b"[REDACTED:API_TOKEN]" in out
    # What is left decodes to none of the value's characters but those sharing a base64
    # character with its neighbours.
    inner = blob[(8 * shift + 5) // 6 + 1 : (8 * (shift + len(SHIFTED))) // 6 - 1]
    assert inner not in out


def test_a_value_with_spaces_in_a_query_string_is_redacted() -> None:
    # urlencode() and requests write a space in a query as `+`, not `%20`.
    secret = "correct horse battery staple"
    s = Scrubber([KnownSecret("DB_PASSWORD", secret)])
    url = b"GET https://db.example/login?user=me&password=correct+horse+battery+staple&x=1\n"
    assert s.scrub(url, "log") == (
        b"GET https://db.example/login?user=me&password=[REDACTED:DB_PASSWORD]&x=1\n"
    )


def test_a_one_line_hunk_does_not_swallow_the_next_files_header() -> None:
    # `@@ -1 +1 @@` holds one old and one new line: the `--- a/gone.py` after it is the header
    # of the next file (deleted here, so `+++ /dev/null` names nothing), whose removed secret
    # is then found in gone.py, not in the first file.
    patch = (
        b"diff --git a/one.txt b/one.txt\n--- a/one.txt\n+++ b/one.txt\n@@ -1 +1 @@\n-a\n+b\n"
        b"diff --git a/gone.py b/gone.py\ndeleted file mode 100644\n--- a/gone.py\n+++ /dev/null\n"
        b"@@ -1,2 +0,0 @@\n-x = 1\n" + f"-key = '{STRIPE}'\n".encode()
    )
    out, found = redact_patch(patch)
    assert [(f.where, f.kept) for f in found] == [("gone.py", True)]
    assert STRIPE.encode() not in out


def test_restore_refuses_a_crafted_name_holding_a_nul(tmp_path: Path) -> None:
    # A stored patch may be crafted: git quotes a name it finds unusual, and the quoted form
    # can spell a NUL byte (`\000`), which no file name holds. Such a name leads to no file:
    # the patch is given back as it is, with no traceback.
    (tmp_path / "a.py").write_bytes(b"password = 'in-head-Q1'\n")
    patch = (
        b'diff --git "a/a.py\\000x" "b/a.py\\000x"\n--- "a/a.py\\000x"\n+++ "b/a.py\\000x"\n'
        b"@@ -1,1 +1,1 @@\n-[REDACTED:Secret Keyword]\n+y = 2\n"
    )
    assert restore_patch_context(patch, tmp_path) == patch
