"""A run's curation (``ledger tag``, ``rename``, ``retract``) travels with it through push,
pull, clone, export and import, as its chain of records: a reviewer sees a retracted run as
retracted, a remote can never take a retraction back, and a forged curation record (another
run's, a link to something that is not its predecessor) is refused with nothing written."""

from __future__ import annotations

import json
from pathlib import Path

from _forge import Forge, ledger_state
from _share_lab import make_repo, record
from _support import run_ledger

from ledger.run.curate import read_curation, retracted_runs
from ledger.share.remote import Remote
from ledger.store import Store


def _ok(*args: str, cwd: Path) -> str:
    r = run_ledger(*args, cwd=cwd)
    assert r.returncode == 0, r.stderr
    return r.stdout


def _verify_ok(repo: Path) -> None:
    r = run_ledger("verify", "--json", cwd=repo)
    assert r.returncode == 0 and json.loads(r.stdout)["ok"], r.stdout + r.stderr


def _fresh(path: Path) -> Path:
    path.mkdir()
    _ok("init", cwd=path)
    return path


def _log(repo: Path) -> list[dict[str, object]]:
    return [dict(e.data) for e in Store.open(repo / ".ledger").log.entries()]


def test_a_retraction_is_pulled_cloned_and_imported(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "authors")
    run_id = record(repo)
    _ok("tag", run_id, "owner=ana", cwd=repo)
    _ok("retract", run_id, "--reason", "trained on the test split", cwd=repo)
    remote = tmp_path / "remote"
    _ok("push", str(remote), cwd=repo)

    review = _fresh(tmp_path / "review")
    _ok("pull", str(remote), cwd=review)
    store = Store.open(review / ".ledger")
    assert retracted_runs(store)[run_id]["reason"] == "trained on the test split"
    # The chain arrived as the author's own acts, each line saying where it came from.
    lines = [d for d in _log(review) if d["ref"] == f"curation/{run_id}"]
    assert [d["op"] for d in lines] == ["tag", "retract"]
    assert lines[0]["old"] is None and lines[1]["old"] == lines[0]["new"]
    assert all(d["origin"] == Store.open(repo / ".ledger").id for d in lines)
    _verify_ok(review)
    listed = json.loads(_ok("ls", "--json", cwd=review))
    assert run_id not in json.dumps(listed)  # hidden from ls, as it is in the author's ledger

    _ok("clone", str(remote), str(tmp_path / "clone"), cwd=tmp_path)
    assert run_id in retracted_runs(Store.open(tmp_path / "clone" / ".ledger"))

    pkg = tmp_path / "run.ledgerpkg"
    _ok("export", run_id, "-o", str(pkg), cwd=repo)
    imported = _fresh(tmp_path / "imported")
    _ok("import", str(pkg), cwd=imported)
    _, rec = read_curation(Store.open(imported / ".ledger"), run_id)
    assert rec is not None and rec["retracted"] is True and rec["tags"] == {"owner": "ana"}
    _verify_ok(imported)
    # Imported twice: the chain here holds the one brought, nothing is written.
    before = ledger_state(imported / ".ledger")
    _ok("import", str(pkg), cwd=imported)
    assert ledger_state(imported / ".ledger") == before


def test_a_newer_chain_extends_and_an_older_one_never_takes_a_retraction_back(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "authors")
    run_id = record(repo)
    remote = tmp_path / "remote"
    _ok("tag", run_id, "owner=ana", cwd=repo)
    _ok("push", str(remote), cwd=repo)
    review = _fresh(tmp_path / "review")
    _ok("pull", str(remote), cwd=review)
    assert not retracted_runs(Store.open(review / ".ledger"))

    # The author retracts later: the next pull extends the chain here.
    _ok("retract", run_id, "--reason", "leak", cwd=repo)
    _ok("push", str(remote), cwd=repo)
    _ok("pull", str(remote), cwd=review)
    assert retracted_runs(Store.open(review / ".ledger"))[run_id]["reason"] == "leak"
    _verify_ok(review)

    # A remote that is behind (its origin file as it was before the retraction was pushed)
    # changes nothing here: the retraction stays.
    store = Store.open(review / ".ledger")
    head = store.refs.get(f"curation/{run_id}")
    first = next(d["new"] for d in _log(review) if d["ref"] == f"curation/{run_id}")
    origin_file = next((remote / "origins").iterdir())
    data = json.loads(origin_file.read_text())
    data["refs"][f"curation/{run_id}"] = first
    origin_file.write_text(json.dumps(data))
    _ok("pull", str(remote), cwd=review)
    assert store.refs.get(f"curation/{run_id}") == head
    assert run_id in retracted_runs(store)
    _verify_ok(review)


def test_diverged_curation_is_refused_naming_the_dropped_retraction(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "authors")
    run_id = record(repo)
    remote = tmp_path / "remote"
    _ok("tag", run_id, "owner=ana", cwd=repo)
    _ok("push", str(remote), cwd=repo)
    review = _fresh(tmp_path / "review")
    _ok("pull", str(remote), cwd=review)
    _ok("retract", run_id, "--reason", "seen the test set", cwd=review)
    # Meanwhile the author tags again and records a new run: the chains have diverged.
    _ok("tag", run_id, "owner=bo", cwd=repo)
    new_run = record(repo)
    _ok("push", str(remote), cwd=repo)

    before = ledger_state(review / ".ledger")
    r = run_ledger("pull", str(remote), cwd=review)
    assert r.returncode != 0
    assert "diverged" in r.stderr and "drops the retraction made here" in r.stderr, r.stderr
    assert f"curation of run {run_id}" in r.stderr
    # Nothing half-written: not the new run, not the author's tag.
    assert ledger_state(review / ".ledger") == before
    store = Store.open(review / ".ledger")
    assert store.refs.get(f"runs/{new_run}") is None
    assert run_id in retracted_runs(store)
    _verify_ok(review)


def _curated_package(tmp_path: Path) -> tuple[Path, str, str, Path]:
    """(repo, run x, run y, package of both), each run tagged."""
    repo = make_repo(tmp_path / "authors")
    x, y = record(repo), record(repo)
    _ok("tag", x, "k=x", cwd=repo)
    _ok("tag", y, "k=y", cwd=repo)
    pkg = tmp_path / "both.ledgerpkg"
    _ok("export", x, y, "-o", str(pkg), cwd=repo)
    return repo, x, y, pkg


def _refused_import(tmp_path: Path, forged: Path, words: str) -> None:
    review = _fresh(tmp_path / "review")
    before = ledger_state(review / ".ledger")
    r = run_ledger("import", str(forged), cwd=review)
    assert r.returncode != 0 and words in r.stderr, r.stderr
    assert ledger_state(review / ".ledger") == before


def test_a_package_with_another_runs_curation_is_refused(tmp_path: Path) -> None:
    _, x, y, pkg = _curated_package(tmp_path)
    forge = Forge(pkg)
    forge.manifest["refs"][f"curation/{x}"] = forge.refs[f"curation/{y}"]
    _refused_import(tmp_path, forge.write(tmp_path / "forged.ledgerpkg"), f"not of run {x}")


def test_a_package_whose_curation_links_a_foreign_record_is_refused(tmp_path: Path) -> None:
    _, x, _, pkg = _curated_package(tmp_path)
    forge = Forge(pkg)
    rec = forge.json(forge.refs[f"curation/{x}"])
    rec["previous"] = forge.refs[f"runs/{x}"]  # a link to the run record, not a curation
    rec["op"] = "retract"
    rec["retracted"], rec["reason"] = True, "forged"
    forge.manifest["refs"][f"curation/{x}"] = forge.put_json(rec)
    _refused_import(tmp_path, forge.write(tmp_path / "forged.ledgerpkg"), "not a curation record")


def test_a_remote_whose_curation_drops_a_retraction_in_its_chain_is_refused(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "authors")
    run_id = record(repo)
    _ok("retract", run_id, "--reason", "leak", cwd=repo)
    remote = tmp_path / "remote"
    _ok("push", str(remote), cwd=repo)
    # A forged link after the retraction that silently drops it, planted on the remote.
    store = Store.open(repo / ".ledger")
    head = store.refs.get(f"curation/{run_id}")
    rec = store.get_json(head)
    rec.update(op="tag", previous=head, retracted=False, reason=None, tags={"ok": "yes"})
    forged = store.put_json(rec)  # into the author's objects, then copied as push would

    target = Remote(str(remote))
    planted = Path(target.object_path(forged))
    planted.parent.mkdir(parents=True, exist_ok=True)
    with store.objects.open(forged) as f:
        planted.write_bytes(f.read())
    origin_file = next((remote / "origins").iterdir())
    data = json.loads(origin_file.read_text())
    data["refs"][f"curation/{run_id}"] = forged
    origin_file.write_text(json.dumps(data))

    review = _fresh(tmp_path / "review")
    before = ledger_state(review / ".ledger")
    r = run_ledger("pull", str(remote), cwd=review)
    assert r.returncode != 0 and "drops the retraction" in r.stderr, r.stderr
    assert ledger_state(review / ".ledger") == before


def test_a_teammates_retraction_reaches_the_author_and_a_third_puller(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "authors")
    run_id = record(repo)
    remote = tmp_path / "remote"
    _ok("tag", run_id, "owner=ana", cwd=repo)
    _ok("push", str(remote), cwd=repo)
    mate = tmp_path / "mate"
    _ok("clone", str(remote), str(mate), cwd=tmp_path)
    _ok("retract", run_id, "--reason", "duplicate of another run", cwd=mate)
    _ok("push", str(remote), cwd=mate)  # a second origin on the remote, its chain longer
    third = _fresh(tmp_path / "third")
    _ok("pull", str(remote), cwd=third)
    assert retracted_runs(Store.open(third / ".ledger"))[run_id]["reason"].startswith("duplicate")
    _ok("pull", str(remote), cwd=repo)  # the author's own chain is extended
    assert run_id in retracted_runs(Store.open(repo / ".ledger"))
    _verify_ok(third)
    _verify_ok(repo)
