"""The command that runs one job of a Hydra multirun alone (ledger.sweeps.job_argv)."""

from __future__ import annotations

import pytest

from ledger.run.sweeps import job_argv


@pytest.mark.parametrize(
    ("argv", "overrides", "run_dir", "expected"),
    [
        (
            ["python", "train.py", "-m", "lr=0.1,0.01", "hydra.sweep.dir=sw"],
            ["lr=0.01"],
            "sw/1",
            ["python", "train.py", "hydra.sweep.dir=sw", "lr=0.01", "hydra.run.dir=sw/1"],
        ),
        (  # python's own flags and -m MODULE are not Hydra's
            ["python3", "-u", "-m", "pkg.train", "--multirun", "+opt=adam,sgd", "seed=3"],
            ["+opt=sgd", "seed=3"],
            None,
            ["python3", "-u", "-m", "pkg.train", "+opt=sgd", "seed=3"],
        ),
        (  # a console script; Hydra flags kept, an old run dir replaced
            ["train", "--config-name", "big", "-m", "lr=range(1,3)", "hydra.run.dir=x"],
            ["lr=2"],
            "multirun/0",
            ["train", "--config-name", "big", "lr=2", "hydra.run.dir=multirun/0"],
        ),
        (  # a script path as python's argument, with a path argument that has no '='
            ["/usr/bin/python3.11", "src/app.py", "-m", "~drop", "a.b=1,2"],
            ["~drop", "a.b=1"],
            None,
            ["/usr/bin/python3.11", "src/app.py", "~drop", "a.b=1"],
        ),
    ],
)
def test_job_argv(
    argv: list[str], overrides: list[str], run_dir: str | None, expected: list[str]
) -> None:
    assert job_argv(argv, overrides, run_dir) == expected
