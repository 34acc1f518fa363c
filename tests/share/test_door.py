"""Nothing enters a ledger that `ledger verify` would reject: package import, pull and clone
refuse, as a whole and before any ref is made, what verify's own checks reject once it is
in. Each case is a real package or a real remote, damaged or forged as an attacker would;
each is also forced in without the door, to show that verify rejects the same thing."""

from __future__ import annotations

import json
import subprocess
from collections.abc import Callable
from pathlib import Path

import pytest
from _forge import Forge, ledger_state
from _s3_server import RemoteUnderTest
from _support import init_ledger, run_ledger

from ledger._canonical import canonical_json
from ledger._hashing import hash_bytes

OTHER = "20260101T000000.000000Z-deadbeef"


def _omit_linked(f: Forge) -> str:
    stdout = f.json(f.ref("runs/")[1])["stdout"]
    del f.objects[stdout]
    return f"links to {stdout}, which is"


def _other_runs_record(f: Forge) -> str:
    name, oid = f.ref("runs/")
    del f.refs[name]
    f.refs[f"runs/{OTHER}"] = oid
    return f"runs/{OTHER} names run_id"


def _running(f: Forge) -> str:
    name, oid = f.ref("runs/")
    rec = f.json(oid)
    rec["status"], rec["ended"], rec["exit_code"] = "running", None, None
    f.refs[name] = f.put_json(rec)
    return "status 'running'"


def _checks_ref(f: Forge) -> str:
    f.refs["checks/c1"] = f.ref("runs/")[1]
    return "checks/c1"  # only `ledger check` writes one; verify's wording is the fold's


def _blob_ref(f: Forge) -> str:
    f.refs[f"runs/{OTHER}"] = f.json(f.ref("runs/")[1])["stdout"]
    return "is not a record"


ATTACKS: list[Callable[[Forge], str]] = [
    _omit_linked,
    _other_runs_record,
    _running,
    _checks_ref,
    _blob_ref,
]


def _fresh(path: Path) -> Path:
    path.mkdir()
    init_ledger(path)
    return path


def _refused(r: subprocess.CompletedProcess[str], phrase: str) -> None:
    assert r.returncode == 5, r.stdout + r.stderr
    text = " ".join(r.stderr.split())
    assert "would reject here, so nothing was added" in text and phrase in text, text


@pytest.mark.parametrize("attack", ATTACKS, ids=lambda a: a.__name__.strip("_"))
def test_import_refuses_what_verify_rejects(
    packaged: tuple[Path, str, Path], tmp_path: Path, attack: Callable[[Forge], str]
) -> None:
    _, _, pkg = packaged
    forge = Forge(pkg)
    phrase = attack(forge)
    bad = forge.write(tmp_path / "bad.ledgerpkg")
    review = _fresh(tmp_path / "review")
    before = ledger_state(review / ".ledger")
    _refused(run_ledger("import", str(bad), cwd=review), phrase)
    assert ledger_state(review / ".ledger") == before  # no ref, no log line
    r = run_ledger("verify", cwd=review)
    assert r.returncode == 0, r.stdout

    # The door runs verify's checks: forced in without it, verify rejects the same thing.
    forced = _fresh(tmp_path / "forced")
    forge.force_into(forced / ".ledger")
    r = run_ledger("verify", cwd=forced)
    assert r.returncode == 1 and phrase in " ".join(r.stdout.split()), r.stdout


def _push(repo: Path, url: str) -> None:
    r = run_ledger("push", url, cwd=repo)
    assert r.returncode == 0, r.stderr


def _origin_file(remote: RemoteUnderTest) -> tuple[str, dict[str, object]]:
    (path,) = remote.files("origins")
    return path, json.loads(remote.fs.cat_file(path))


def _put_remote(remote: RemoteUnderTest, data: bytes) -> str:
    oid = hash_bytes(data)
    folder = f"{remote.root}/objects/b3/{oid[3:5]}"
    remote.fs.makedirs(folder, exist_ok=True)
    remote.fs.pipe_file(f"{folder}/{oid[5:]}", data)
    return oid


def _forge_remote(remote: RemoteUnderTest, attack: Callable[[Forge], str], pkg: Path) -> str:
    """Apply a package attack to the remote's origin file and objects."""
    path, origin = _origin_file(remote)
    forge = Forge(pkg)
    forge.manifest["refs"] = dict(origin["refs"])  # type: ignore[call-overload]
    held = set(remote.objects())
    phrase = attack(forge)
    for oid in sorted(set(forge.objects) - held):
        _put_remote(remote, forge.objects[oid])
    for oid in sorted(held - set(forge.objects)):
        remote.fs.rm(remote.objects()[oid])
    origin["refs"] = forge.refs
    remote.fs.pipe_file(path, canonical_json(origin))
    return phrase


@pytest.mark.parametrize("attack", ATTACKS, ids=lambda a: a.__name__.strip("_"))
def test_pull_refuses_what_verify_rejects(
    packaged: tuple[Path, str, Path], tmp_path: Path, attack: Callable[[Forge], str]
) -> None:
    repo, _, pkg = packaged
    remote = RemoteUnderTest(str(tmp_path / "remote"))
    _push(repo, remote.url)
    phrase = _forge_remote(remote, attack, pkg)
    here = _fresh(tmp_path / "here")
    before = ledger_state(here / ".ledger")
    _refused(run_ledger("pull", remote.url, cwd=here), phrase)
    assert ledger_state(here / ".ledger") == before
    assert run_ledger("verify", cwd=here).returncode == 0
    # A clone of it leaves no ledger, and not the folder it would have made.
    _refused(run_ledger("clone", remote.url, str(tmp_path / "clone")), phrase)
    assert not (tmp_path / "clone").exists()


def test_a_remote_missing_a_linked_object_is_refused_whole(
    packaged: tuple[Path, str, Path], tmp_path: Path, remote: RemoteUnderTest
) -> None:
    """On a folder and on a real S3 server (SeaweedFS): the remote lost an object a run record
    links to (not the one its ref names). A pull used to add the ref and exit 0."""
    repo, run_id, pkg = packaged
    _push(repo, remote.url)
    phrase = _forge_remote(remote, _omit_linked, pkg)
    here = _fresh(tmp_path / "here")
    before = ledger_state(here / ".ledger")
    _refused(run_ledger("pull", remote.url, cwd=here), phrase)
    _refused(run_ledger("pull", remote.url, run_id, cwd=here), phrase)
    assert ledger_state(here / ".ledger") == before
    assert run_ledger("verify", cwd=here).returncode == 0


def test_a_pull_whose_remote_lost_a_run_record_adds_nothing_and_fails(
    packaged: tuple[Path, str, Path], tmp_path: Path
) -> None:
    """The ref's own object is gone from the remote: a pull used to skip the run, print
    `skipped:` and exit 0; now it names the ref, adds nothing (not the other refs either) and
    exits 5."""
    repo, run_id, _ = packaged
    remote = RemoteUnderTest(str(tmp_path / "remote"))
    _push(repo, remote.url)
    _, origin = _origin_file(remote)
    record = origin["refs"][f"runs/{run_id}"]  # type: ignore[index]
    remote.fs.rm(remote.objects()[record])
    here = _fresh(tmp_path / "here")
    before = ledger_state(here / ".ledger")
    _refused(run_ledger("pull", remote.url, cwd=here), f"ref runs/{run_id} points at {record}")
    assert ledger_state(here / ".ledger") == before
