"""``Scrubber.stream``: known values scrubbed chunk by chunk give what a whole-data scrub gives."""

from __future__ import annotations

import base64
import re

from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.capture.secrets import KnownSecret, Scrubber

KNOWN = [
    KnownSecret("API_KEY", "sk-Xy9/zz+Q1"),
    KnownSecret("PIN", "a1"),
    KnownSecret("P3", "x7q"),
    KnownSecret("PEM", "line1\nline2"),  # a value with a line end: no early cut at lines
]
PIECES = [
    b"sk-Xy9/zz+Q1",
    b"sk-Xy9%2Fzz%2BQ1",
    b"sk-Xy9/zz+Q1".hex().encode(),
    base64.b64encode(b"zzsk-Xy9/zz+Q1"),
    b"a1",
    b" a1 ",
    b"ba1",
    b"x7q",
    b"line1\nline2",
    b"line1",
    b"hello ",
    b"\n",
    b"\r",
    b"a",
    b"1",
]


def _streamed(known: list[KnownSecret], data: bytes, cuts: list[int]) -> tuple[bytes, Scrubber]:
    scrubber = Scrubber(known)
    stream = scrubber.stream("stdout")
    out, last = [], 0
    for cut in [*sorted({min(c, len(data)) for c in cuts}), len(data)]:
        out.append(stream.feed(data[last:cut]))
        last = cut
    out.append(stream.flush())
    return b"".join(out), scrubber


@settings(max_examples=400, deadline=None)
@given(
    parts=st.lists(st.sampled_from(PIECES), max_size=80),
    cuts=st.lists(st.integers(0, 2000), max_size=40),
    binary=st.booleans(),
    with_pem=st.booleans(),
)
def test_any_split_gives_the_whole_scrub(
    parts: list[bytes], cuts: list[int], binary: bool, with_pem: bool
) -> None:
    known = KNOWN if with_pem else KNOWN[:3]
    data = (b"\0" if binary else b"") + b"".join(parts)
    whole = Scrubber(known)
    expected = whole.scrub(data, "stdout")
    got, streamed = _streamed(known, data, cuts)
    assert got == expected
    assert streamed.hits == whole.hits


def test_a_value_split_across_reads_and_complete_lines_written_at_once() -> None:
    stream = Scrubber(KNOWN[:3]).stream("stdout")
    first = stream.feed(b"step 1\nkey sk-Xy9")
    assert first == b"step 1\n"  # the line is out; the unfinished one waits
    assert stream.feed(b"/zz+Q1 done\n") == b"key [REDACTED:API_KEY] done\n"
    assert stream.feed(b"tail a") == b""
    assert stream.flush() == b"tail a"


def test_the_held_tail_is_bounded_by_the_longest_form() -> None:
    scrubber = Scrubber(KNOWN[:3])
    stream = scrubber.stream("stdout")
    out = b"".join(stream.feed(b"z" * 1000) for _ in range(100))  # one line, no end
    assert len(out) == 100_000 - scrubber.longest_form - 1
    assert len(stream.held()) == scrubber.longest_form + 1


def test_no_known_values_passes_chunks_through() -> None:
    stream = Scrubber([]).stream("stdout")
    assert stream.feed(b"abc") == b"abc" and stream.flush() == b""


def test_binary_stream_keeps_short_values_after_the_nul() -> None:
    stream = Scrubber([KnownSecret("PIN", "42x"), KnownSecret("K", "longsecret-1")]).stream("o")
    got = stream.feed(b"\0\x0142x longsecret-1") + stream.flush()
    assert got == b"\0\x0142x [REDACTED:K]"


def _reference(known: list[KnownSecret], data: bytes) -> bytes:
    """The ``re`` pattern the scrubber used before RE2: the semantics to keep."""
    scrubber = Scrubber(known)
    forms = scrubber.forms
    long = sorted((f for f in forms if len(f) >= 3), key=len, reverse=True)
    alts = [re.escape(f) for f in long]
    alts += [rb"(?<![A-Za-z0-9])" + re.escape(f) + rb"(?![A-Za-z0-9])" for f in forms
             if len(f) < 3]  # fmt: skip
    return re.compile(b"|".join(alts)).sub(lambda m: scrubber.replacement(m[0], "r"), data)


@settings(max_examples=300, deadline=None)
@given(parts=st.lists(st.sampled_from([*PIECES, b"xa1", b"a1x", b"_a1_", b"-", b"x"]), max_size=60))
def test_re2_matching_keeps_the_re_semantics(parts: list[bytes]) -> None:
    known = [*KNOWN, KnownSecret("ONE", "x"), KnownSecret("TWO", "x7")]
    data = b"".join(parts)
    assert Scrubber(known).scrub(data, "r") == _reference(known, data)
