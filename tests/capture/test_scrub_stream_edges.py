"""ScrubStream's edges (``ledger.capture.scrub_stream``). Pinned because mutation testing (issue
#18) found them untested: the binary sniff ends exactly at 8 KiB, counted across chunks, as
Scrubber.scrub's does, and chunks shorter than the longest form are held back whole."""

from __future__ import annotations

from ledger.capture.secrets import KnownSecret, Scrubber


def _streamed(s: Scrubber, *chunks: bytes) -> bytes:
    stream = s.stream("stdout")
    return b"".join(stream.feed(c) for c in chunks) + stream.flush()


def test_a_nul_in_the_first_8_kib_makes_the_stream_binary_like_scrub() -> None:
    s = Scrubber([KnownSecret("PIN", "42x")])  # short: scrubbed in text only
    inside = b"a" * 8191 + b"\0 42x \n"  # the NUL is the 8192nd byte
    outside = b"a" * 8192 + b"\0 42x \n"
    assert _streamed(s, inside) == s.scrub(inside, "stdout") == inside
    assert _streamed(s, outside) == s.scrub(outside, "stdout")
    assert _streamed(s, outside).endswith(b"\0 [REDACTED:PIN] \n")
    # counted across chunks: the NUL at 8200 is past the sniff, whatever the chunking
    late = b"b" * 100 + b"c" * 8100 + b"\0 42x \n"
    assert _streamed(s, late[:100], late[100:]).endswith(b"\0 [REDACTED:PIN] \n")


def test_chunks_shorter_than_the_longest_form_are_held_back_whole() -> None:
    s = Scrubber([KnownSecret("HF_TOKEN", "hf-abcdefgh")])
    assert _streamed(s, b"ab", b"cd", b"ef") == b"abcdef"
    assert _streamed(s, b"x hf-ab", b"cdefgh y") == b"x [REDACTED:HF_TOKEN] y"


def _every_split(s: Scrubber, data: bytes) -> None:
    for i in range(len(data) + 1):
        for j in range(i, len(data) + 1):
            assert _streamed(s, data[:i], data[i:j], data[j:]) == s.scrub(data, "stdout"), (i, j)


def test_a_value_that_starts_a_longer_one_right_after_a_line_end_waits_for_it() -> None:
    # After the last line end nothing is safe: the bytes there may be the start of a longer
    # value, whose rest is in the next chunk. Redacting the shorter one at once would leave
    # the rest of the longer one (`def`) in the log.
    s = Scrubber([KnownSecret("A", "sk_live_abc"), KnownSecret("B", "sk_live_abcdef")])
    assert _streamed(s, b"x\nsk_live_abc", b"def\n") == b"x\n[REDACTED:B]\n"
    _every_split(s, b"x\nsk_live_abcdef\ny sk_live_abc\n")


def test_a_short_value_glued_to_the_byte_before_a_chunk_stays_as_scrub_leaves_it() -> None:
    # A short value counts only where no letter or digit touches it; the byte before the
    # bytes held back is kept to tell, even when it is the first byte of the stream.
    s = Scrubber([KnownSecret("PIN", "ab")])
    assert _streamed(s, b"xab de", b"\n") == b"xab de\n"
    _every_split(s, b"xab de ab\n")
