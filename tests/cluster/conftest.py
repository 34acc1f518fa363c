"""A real one-node Slurm for the session (``tests/_slurm.py``), started once and always
stopped; with accounting (slurmdbd and a private MariaDB) only for the tests that ask for it.
On CI (``CI=true``) a missing Slurm fails these tests: ``.ci/run`` installs it."""

from __future__ import annotations

from collections.abc import Iterator

import pytest
from _slurm import SlurmCluster, require_slurm, slurm_cluster


@pytest.fixture(scope="session")
def slurm(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmCluster]:
    """One node, no accounting: ``sacct`` answers 'accounting storage is disabled'."""
    require_slurm()
    with slurm_cluster(tmp_path_factory.mktemp("slurm"), "ledgernoacct") as cluster:
        yield cluster


@pytest.fixture(scope="session")
def slurm_accounting(tmp_path_factory: pytest.TempPathFactory) -> Iterator[SlurmCluster]:
    """One node with slurmdbd and MariaDB on loopback: ``sacct`` answers."""
    require_slurm(accounting=True)
    with slurm_cluster(tmp_path_factory.mktemp("slurmacct"), "ledgeracct", True) as cluster:
        yield cluster
