"""A replay of a run whose outputs hold no tensors imports no numpy: the comparisons of metric
series and of JSON, CSV or other files run on Python values (numpy took ~0.1-0.5 s of every
``ledger replay``, bench/bench_replay.py). Tensor files still load numpy when compared."""

from __future__ import annotations

import subprocess
import sys
import textwrap
from pathlib import Path

from _support import subprocess_env

PROBE = textwrap.dedent(
    """
    import sys
    from pathlib import Path
    import ledger.replay.engine
    from ledger.replay.compare import CompareSettings, compare_files
    from ledger.stats import bitwise_equal, compare_series

    a, b = Path(sys.argv[1]), Path(sys.argv[2])
    results = [
        bitwise_equal(0.0, -0.0),
        bitwise_equal(0.1 + 0.2, 0.30000000000000004),
        compare_series({("loss", 0): 0.5}, {("loss", 0): 0.5}, rtol=0.0, atol=0.0).ok,
        compare_files(a / "m.json", b / "m.json", CompareSettings(mode="bitwise")).status,
        compare_files(a / "w.bin", b / "w.bin", CompareSettings(mode="bitwise")).status,
    ]
    print(results, "numpy" in sys.modules)
    compare_files(a / "t.npy", b / "t.npy", CompareSettings(mode="bitwise"))
    print("numpy" in sys.modules)
    """
)


def test_replay_comparisons_without_tensors_import_no_numpy(tmp_path: Path) -> None:
    import numpy as np

    a, b = tmp_path / "a", tmp_path / "b"
    for d, last in ((a, b"\x00"), (b, b"\x01")):  # the binary and tensor files differ
        d.mkdir()
        (d / "m.json").write_text('{"w": [1.5, 2.5]}')
        (d / "w.bin").write_bytes(b"weights" + last)
        np.save(d / "t.npy", np.arange(4, dtype=np.float32) + last[0])
    out = subprocess.run(
        [sys.executable, "-c", PROBE, str(a), str(b)],
        env=subprocess_env(),
        capture_output=True,
        text=True,
    )
    assert out.returncode == 0, out.stderr
    assert out.stdout.splitlines() == [
        "[False, True, True, 'identical', 'different'] False",
        "True",
    ]
