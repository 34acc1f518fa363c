"""Command lines that are not UTF-8: stored readable plus exact, and run again exactly."""

from __future__ import annotations

import os

from hypothesis import given
from hypothesis import strategies as st

from ledger._canonical import canonical_json
from ledger.capture.rawbytes import argv_to_run, readable, split_argv

ARG = st.binary(max_size=12).filter(lambda b: b"\0" not in b)


@given(st.lists(ARG, min_size=1, max_size=5))
def test_argv_round_trips_to_the_same_bytes(raw: list[bytes]) -> None:
    argv = [os.fsdecode(b) for b in raw]
    shown, exact = split_argv(argv)
    canonical_json({"argv": shown, "argv_b64": exact})  # storable
    assert [os.fsencode(a) for a in argv_to_run(shown, exact)] == raw
    all_utf8 = all(_is_utf8(b) for b in raw)
    assert (exact is None) == all_utf8
    if all_utf8:
        assert shown == argv
    else:
        assert shown == [b.decode("utf-8", "replace") for b in raw]


def _is_utf8(b: bytes) -> bool:
    try:
        b.decode("utf-8")
    except UnicodeDecodeError:
        return False
    return True


def test_readable_shows_each_bad_byte_as_a_replacement_character() -> None:
    assert readable(os.fsdecode(b"a\xff\xfeb")) == "a\ufffd\ufffdb"
    assert readable("plain é") == "plain é"
