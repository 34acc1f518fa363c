"""A real one-node Slurm for the session (``_slurm.py``), started once and always stopped;
with accounting (slurmdbd and a private MariaDB) only for the tests that ask for it. On CI
(``CI=true``) a missing Slurm fails these tests: ``.ci/run`` installs it."""

from __future__ import annotations

import os
from collections.abc import Iterator

import pytest
from _slurm import SlurmCluster, missing, slurm_cluster
from _support import require_component

_INSTALL = (
    "apt-get install slurmctld slurmd slurm-client munge (accounting: slurmdbd mariadb-server)"
)


def _require(accounting: bool) -> None:
    gone = missing(accounting)
    require_component(not gone, "Slurm (" + ", ".join(gone) + ")", _INSTALL)
    if os.geteuid() != 0:  # slurmd runs each job as its user: only root can
        require_component(None, "root, to run slurmd", "run the Slurm tests as root")


@pytest.fixture(scope="session")
def slurm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmCluster]:
    """One node, no accounting: ``sacct`` answers 'accounting storage is disabled'."""
    _require(False)
    with slurm_cluster(tmp_path_factory.mktemp("slurm"), "ledgernoacct") as cluster:
        yield cluster


@pytest.fixture(scope="session")
def slurm_accounting(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmCluster]:
    """One node with slurmdbd and MariaDB on loopback: ``sacct`` answers."""
    _require(True)
    with slurm_cluster(tmp_path_factory.mktemp("slurmacct"), "ledgeracct", True) as cluster:
        yield cluster
