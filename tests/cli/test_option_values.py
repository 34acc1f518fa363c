"""Numbers no command can use are refused as the arguments are parsed: exit 2, a message naming
the option, and nothing run or written.

Before, ``replay --atol inf`` ran the whole replay and then failed with pydantic's raw text
(the verdict cannot hold infinity); ``--tol loss=nan,0`` passed the "non-negative" check (no
comparison with NaN fails); ``audit --margin inf`` and ``gc --grace-hours inf`` got through
click's ``min=0``.
"""

from __future__ import annotations

import math
import sys
from pathlib import Path

import pytest
from _support import init_ledger, run_ledger

from ledger.errors import UsageError
from ledger.replay.engine import replay
from ledger.replay.options import ReplayOptions
from ledger.store import Store


@pytest.fixture(scope="module")
def recorded(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    """A ledger with one run that appends a line to ``marker`` each time it runs."""
    root = tmp_path_factory.mktemp("options") / "proj"
    root.mkdir()
    marker = root.parent / "marker"
    init_ledger(root)
    code = f"open({str(marker)!r}, 'a').write('ran\\n'); print('loss 0.5')"
    r = run_ledger("record", "--name", "base", "--", sys.executable, "-c", code, cwd=root)
    assert r.returncode == 0, r.stderr
    return root, marker


def refused(r: object, option: str) -> None:
    stderr = r.stderr  # type: ignore[attr-defined]
    assert r.returncode == 2, stderr[-2000:]  # type: ignore[attr-defined]
    assert option in stderr and "finite" in stderr, stderr
    assert "Traceback" not in stderr and "validation error" not in stderr, stderr


@pytest.mark.parametrize(
    ("args", "option"),
    [
        (["--mode", "tolerance", "--atol", "inf"], "--atol"),
        (["--mode", "tolerance", "--rtol", "nan"], "--rtol"),
        (["--mode", "tolerance", "--rtol", "-inf"], "--rtol"),
        (["--mode", "tolerance", "--atol", "-1"], "--atol"),
        (["--mode", "seeds", "--margin", "inf"], "--margin"),
        (["--mode", "tolerance", "--tol", "loss=nan,0"], "--tol"),
        (["--mode", "tolerance", "--tol", "loss=1e-5,inf"], "--tol"),
    ],
    ids=[
        "atol-inf",
        "rtol-nan",
        "rtol-minus-inf",
        "atol-negative",
        "margin-inf",
        "tol-nan",
        "tol-inf",
    ],
)
def test_replay_refuses_before_anything_runs(
    recorded: tuple[Path, Path], args: list[str], option: str
) -> None:
    root, marker = recorded
    before = marker.read_text()
    refs = sorted((root / ".ledger" / "refs").rglob("*"))
    refused(run_ledger("replay", "base", *args, cwd=root), option)
    assert marker.read_text() == before  # the command was not run again
    assert sorted((root / ".ledger" / "refs").rglob("*")) == refs  # no replay, no verdict


@pytest.mark.parametrize(
    "opts",
    [
        ReplayOptions(mode="tolerance", atol=math.inf),
        ReplayOptions(mode="tolerance", rtol=math.nan, atol=0.0),
        ReplayOptions(mode="tolerance", per_metric={"loss": (0.0, math.inf)}),
        ReplayOptions(mode="seeds", margin=math.inf),
    ],
    ids=["atol", "rtol", "per-metric", "margin"],
)
def test_the_library_refuses_them_too(recorded: tuple[Path, Path], opts: ReplayOptions) -> None:
    root, marker = recorded
    before = marker.read_text()
    with pytest.raises(UsageError, match="must be a finite number, 0 or more"):
        replay(Store.open(root / ".ledger"), "base", opts)
    assert marker.read_text() == before


def test_audit_margin_and_gc_grace_hours(recorded: tuple[Path, Path], tmp_path: Path) -> None:
    root, _ = recorded
    claims = tmp_path / "claims.yaml"
    claims.write_text("claims:\n- {metric: loss, value: 0.5, runs: {names: [base]}}\n")
    refused(run_ledger("audit", str(claims), "--margin", "inf", cwd=root), "--margin")
    objects = sorted((root / ".ledger" / "objects").rglob("*"))
    refused(run_ledger("gc", "--yes", "--grace-hours", "inf", cwd=root), "--grace-hours")
    assert sorted((root / ".ledger" / "objects").rglob("*")) == objects
    from ledger.audit import audit

    with pytest.raises(UsageError, match="margin must be a positive number"):
        audit(Store.open(root / ".ledger"), claims, margin=math.inf)
