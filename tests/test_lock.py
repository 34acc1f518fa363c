"""requirements/lock.txt covers what pyproject.toml asks for: every dependency of every extra
is pinned there, at a version its range admits, with hashes. A dependency added without
`make lock` fails here instead of being missing from `make install`."""

from __future__ import annotations

import re
import tomllib
from pathlib import Path

from packaging.requirements import Requirement
from packaging.utils import canonicalize_name

ROOT = Path(__file__).resolve().parent.parent
LOCK = ROOT / "requirements" / "lock.txt"


def _locked() -> dict[str, tuple[str, str]]:
    """name -> (version, the entry's text)."""
    text = LOCK.read_text()
    out = {}
    for m in re.finditer(
        r"^([A-Za-z0-9][A-Za-z0-9._-]*)==(\S+)((?:[ \\\n]+--hash=\S+)*)", text, re.M
    ):
        out[canonicalize_name(m[1])] = (m[2], m[3])
    return out


def _asked() -> list[Requirement]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = [Requirement(r) for r in project["dependencies"]]
    for extra in project["optional-dependencies"].values():
        reqs += [Requirement(r) for r in extra]
    return [r for r in reqs if canonicalize_name(r.name) != canonicalize_name(project["name"])]


def test_every_dependency_is_locked_at_a_version_its_range_admits() -> None:
    locked = _locked()
    for req in _asked():
        name = canonicalize_name(req.name)
        assert name in locked, f"{req.name} is not in requirements/lock.txt: run `make lock`"
        version, hashes = locked[name]
        assert req.specifier.contains(version, prereleases=True), (
            f"{req.name}=={version} in the lock is outside {req}: run `make lock`"
        )
        assert "--hash=sha256:" in hashes, f"{req.name} has no hash in the lock"


def test_torch_is_locked_to_its_cpu_build_and_rliable_comes_without_its_dependencies() -> None:
    assert _locked()["torch"][0].endswith("+cpu")
    no_deps = (ROOT / "requirements" / "no-deps.txt").read_text()
    assert re.search(r"^rliable==1\.2\.0 --hash=sha256:[0-9a-f]{64}$", no_deps, re.M)
    assert "--no-deps" in (ROOT / "Makefile").read_text()
