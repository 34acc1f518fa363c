"""On CI (``CI=true``) the Slurm tests fail when Slurm is missing; elsewhere they skip, saying
why. ``.ci/run`` installs the packages."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from _support import REPO, subprocess_env

TARGET = "tests/cluster/test_slurm_recording.py::test_recording_srun_warns_and_records_no_job"


@pytest.mark.parametrize(("ci", "outcome"), [("true", "failed"), ("false", "skipped")])
def test_a_missing_slurm_fails_on_ci_and_skips_elsewhere(
    tmp_path: Path, ci: str, outcome: str
) -> None:
    # The fixture's own guard: an inner pytest sees no Slurm program installed.
    (tmp_path / "hide_slurm.py").write_text(
        f"import sys\nsys.path.insert(0, {str(REPO / 'tests')!r})\n"
        "import _slurm\n_slurm.missing = lambda accounting=False: ['slurmctld']\n"
    )
    r = subprocess.run(
        [sys.executable, "-m", "pytest", "-q", "-n", "0", "-p", "no:cacheprovider",
         "-p", "hide_slurm", "-rs", TARGET],
        cwd=REPO, env=subprocess_env(CI=ci, PYTHONPATH=f"{tmp_path}:{REPO}"),
        capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    out = r.stdout + r.stderr
    assert f"1 {outcome}" in out or (outcome == "failed" and "1 error" in out), out
    if outcome == "failed":
        assert "Slurm (slurmctld) is missing on CI" in out
    else:
        assert "Slurm (slurmctld) is not installed: apt-get install slurmctld" in out


def test_ci_run_installs_slurm() -> None:
    script = (REPO / ".ci" / "run").read_text()
    assert "slurmctld slurmd slurm-client munge slurmdbd mariadb-server" in script
