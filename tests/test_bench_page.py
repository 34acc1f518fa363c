"""docs/benchmarks.md as ``python -m bench`` writes it: a section re-measured on another
machine than the sections kept from earlier runs must say which CPU it ran on, and the next
run must still read that section's date and figures (its ``previous run`` column)."""

from __future__ import annotations

from bench import Row
from bench.__main__ import previous_figures, render


def test_a_section_names_its_cpu_and_its_figures_read_back() -> None:
    info = {"CPU": "Test CPU 9000", "cores": "2", "date": "2026-12-02 14:12 UTC"}
    rows = [Row("digest", "store_inputs", 0.73, "s", "ledger cold", 1.41, "≤ 1.5×", True)]
    kept = {"store": "## store\n\nMeasured 2026-12-01 07:34 UTC, load average 2.1-1.9.\n"}
    page = render(rows, info, False, kept, {"digest": "0.0-0.6"})
    section = page[page.index("## digest") :]
    assert "Measured 2026-12-02 14:12 UTC, on Test CPU 9000, load average 0.0-0.6" in section
    assert "Measured 2026-12-01 07:34 UTC, load average 2.1-1.9." in page  # kept as it was
    date, figures = previous_figures(section)
    assert date == "2026-12-02 14:12 UTC"
    assert figures == {"store_inputs": "1.41×"}
