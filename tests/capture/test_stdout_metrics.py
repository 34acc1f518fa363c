"""``--metric`` matching: RE2 patterns with Python's meaning, streamed segment splitting."""

from __future__ import annotations

import re

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from ledger.capture.metric_regex import compile_metric, to_re2
from ledger.capture.stdout_metrics import Segments, StdoutMetrics, compile_patterns
from ledger.errors import UsageError


def reference_segments(data: bytes) -> list[bytes]:
    """What was matched before the split was streamed: whole lines, trailing \\r stripped,
    split on \\r; a last line without a newline counts."""
    *lines, last = data.split(b"\n")
    out = []
    for line in [*lines, last] if last else lines:
        out += line.rstrip(b"\r").split(b"\r")
    return out


def streamed(data: bytes, cuts: list[int], cap: int = 1 << 20) -> tuple[list[bytes], int]:
    out: list[bytes] = []
    longs: list[None] = []
    seg = Segments(out.append, lambda: longs.append(None), cap)
    pos = 0
    for cut in sorted(cuts):
        seg.write(data[pos:cut])
        pos = cut
    seg.write(data[pos:])
    seg.close()
    return out, len(longs)


@settings(max_examples=400, deadline=None)
@given(st.binary(max_size=40).map(lambda b: bytes(b"ab\r\n"[x % 4] for x in b)), st.data())
def test_streamed_segments_equal_whole_line_splitting(data: bytes, draw: st.DataObject) -> None:
    cuts = draw.draw(st.lists(st.integers(0, len(data)), max_size=6))
    assert streamed(data, cuts) == (reference_segments(data), 0)


def test_segments_over_the_cap_are_counted_and_not_emitted() -> None:
    data = b"short\n" + b"x" * 25 + b"\rok\n" + b"y" * 16 + b"\nend"
    for cuts in ([], [3, 10, 20, 40], list(range(len(data)))):
        assert streamed(data, cuts, cap=10) == ([b"short", b"ok", b"end"], 2)
    # exactly at the cap is still matched
    assert streamed(b"z" * 10 + b"\n", [4], cap=10) == ([b"z" * 10], 0)


PY_PATTERNS = [
    r"step (?P<step>\d+) loss (?P<loss>\S+)",
    r"(?P<acc>[\d.]+)%",
    r"(?P<w>\w+)=(?P<v>[^\s,]+)",
    r"^loss:\s*(?P<loss>\S+)$",
    r"(?i)LOSS (?P<loss>\S+)\Z",
    r"(?P<name>[^\d\s=,.%:]+)",
    r"(?P<n>\d*)",  # empty matches: the search goes on one character later
]
LINES = [
    "step 3 loss 0.25",
    "step ٣ loss 0.5",  # Arabic-Indic digit: Python's \d matches it
    "acc 97.5% then 12%",
    "é=1, ß=2.5, naïve=x",
    "loss:\u00a00.75",  # no-break space: Python's \s matches it
    "Loss 1e-3",
    "",
    "x\u2003y",
]


@pytest.mark.parametrize("pattern", PY_PATTERNS)
def test_re2_patterns_match_like_python_re(pattern: str) -> None:
    rx = compile_metric(pattern)
    py = re.compile(pattern)
    for line in LINES:
        got = list(rx.finditer(line.encode()))
        want = [m.groupdict() for m in py.finditer(line)]
        assert got == want, (pattern, line, to_re2(pattern))


def test_redos_pattern_runs_in_linear_time() -> None:
    # A backtracking engine needs ~2**30 steps here; RE2 answers at once (no timing needed:
    # with Python's re this test would not finish).
    rx = compile_metric(r"(?P<loss>(a+)+)b")
    assert list(rx.finditer(b"a" * 30)) == []
    assert list(rx.finditer(b"a" * 30 + b"b")) == [{"loss": "a" * 30}]


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        (r"(?P<a>\d)(?P=a)", "RE2 cannot compile it"),  # backreference
        (r"(?P<a>\d+)(?=ms)", "RE2 cannot compile it"),  # lookahead
        (r"(?<!x)(?P<a>\d+)", "RE2 cannot compile it"),  # lookbehind
        (r"(?x) (?P<a> \d+ )", "RE2 cannot compile it"),  # verbose mode
        (r"loss (?P<loss", "not a valid regular expression"),
        ("(?P<a>\udcff)", "not valid UTF-8"),
    ],
)
def test_patterns_re2_cannot_compile_are_refused(pattern: str, message: str) -> None:
    with pytest.raises(UsageError) as e:
        compile_patterns([pattern])
    assert message in e.value.message and e.value.exit_code == 2
    if "RE2" in message:
        assert e.value.hint is not None and "RE2 syntax" in e.value.hint


def test_metrics_from_a_stream_cut_anywhere() -> None:
    parser = StdoutMetrics(compile_patterns([r"step (?P<step>\d+) loss (?P<loss>\S+)"]), cap=64)
    out = parser.stream()
    data = b"step 1 loss 0.5\rstep 2 loss 0.25\nnoise " + b"n" * 100 + b"\nstep 3 loss 0.125"
    for i in range(0, len(data), 7):
        out.write(data[i : i + 7])
    out.close()
    assert [(p[0], p[3]) for p in parser.points["loss"]] == [(1, 0.5), (2, 0.25), (3, 0.125)]
    assert parser.notes() == [
        "1 output line(s) longer than 64 bytes were stored but not matched against --metric"
    ]
