"""``ledger.store.repo``: where a ledger is found, what ``init`` writes and ``open`` accepts,
the write lock, and the ref moves' edge cases (#18: the mutants the store tests left alive)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
from _support import SETPRIV, run_without_dac_override

from ledger.errors import FormatVersionError, LedgerAccessError, LedgerNotFoundError, UsageError
from ledger.store import Store
from ledger.store.repo import FORMAT_VERSION, find_ledger_dir
from ledger.store.safe_read import NotRegularError


def test_init_writes_format_version_2_and_open_refuses_the_next(tmp_path: Path) -> None:
    # docs/format.md: version 2. A ledger written by a newer format is refused, not misread.
    store = Store.init(tmp_path / "l")
    config = json.loads((tmp_path / "l" / "config.json").read_bytes())
    assert config["version"] == 2 == FORMAT_VERSION
    assert config["format"] == "ledger" and config["hash"] == "blake3-256"
    assert store.id == config["id"] and isinstance(store.id, str) and len(store.id) == 36
    assert Store.open(tmp_path / "l").id == store.id
    config["version"] = 3
    (tmp_path / "l" / "config.json").write_text(json.dumps(config))
    with pytest.raises(FormatVersionError, match="version 3; this ledger reads up to 2"):
        Store.open(tmp_path / "l")


@pytest.mark.parametrize("version", [None, "1", 1.0])
def test_a_version_that_is_not_an_int_is_refused(tmp_path: Path, version: object) -> None:
    Store.init(tmp_path / "l")
    cfg = tmp_path / "l" / "config.json"
    config = json.loads(cfg.read_bytes())
    config["version"] = version
    cfg.write_text(json.dumps(config))
    with pytest.raises(FormatVersionError):
        Store.open(tmp_path / "l")


@pytest.mark.parametrize(
    ("text", "error", "match"),
    [
        ("{not json", LedgerAccessError, "is not valid JSON"),
        ('["ledger"]', LedgerAccessError, "does not describe a ledger"),
        ('{"format": "other", "version": 1}', LedgerAccessError, "does not describe a ledger"),
        # a name that sorts before "ledger" too: the test is equality, not order
        ('{"format": "dvc", "version": 1}', LedgerAccessError, "does not describe a ledger"),
        ('{"version": 2}', LedgerAccessError, "does not describe a ledger"),
    ],
)
def test_a_config_that_is_no_ledger_is_refused(
    tmp_path: Path, text: str, error: type[Exception], match: str
) -> None:
    Store.init(tmp_path / "l")
    (tmp_path / "l" / "config.json").write_text(text)
    with pytest.raises(error, match=match):
        Store.open(tmp_path / "l")


def test_a_config_json_over_one_mib_is_refused_unread(tmp_path: Path) -> None:
    # config.json holds a few names and remotes: one of exactly 1 MiB (padded by a long remote
    # note) still opens; one byte more is damage or a plant, refused before it is parsed.
    store = Store.init(tmp_path / "l")
    cfg = tmp_path / "l" / "config.json"
    config = json.loads(cfg.read_bytes())
    config["note"] = ""
    base = len(json.dumps(config).encode())
    for size in (1 << 20, (1 << 20) + 1):
        config["note"] = "x" * (size - base)
        cfg.write_text(json.dumps(config))
        assert cfg.stat().st_size == size
        if size == 1 << 20:
            assert Store.open(tmp_path / "l").id == store.id
        else:
            with pytest.raises(NotRegularError, match="more than the 1048576 bytes"):
                Store.open(tmp_path / "l")


def test_a_folder_without_config_is_not_a_ledger(tmp_path: Path) -> None:
    (tmp_path / "l").mkdir()
    with pytest.raises(LedgerNotFoundError, match=r"no config\.json"):
        Store.open(tmp_path / "l")


def test_init_of_an_existing_ledger_opens_it(tmp_path: Path) -> None:
    first = Store.init(tmp_path / "l")
    again = Store.init(tmp_path / "l")
    assert again.id == first.id
    assert sorted(p.name for p in (tmp_path / "l").iterdir()) == [
        "config.json",
        "locks",
        "log",
        "objects",
        "refs",
        "tmp",
    ]


def test_init_where_nothing_can_be_created_says_so(tmp_path: Path) -> None:
    (tmp_path / "file").write_text("x")
    with pytest.raises(LedgerAccessError, match="cannot create a ledger at"):
        Store.init(tmp_path / "file" / "l")


def test_init_at_the_git_root_from_a_subfolder(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    repo = tmp_path / "repo"
    (repo / "src" / "deep").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    monkeypatch.delenv("LEDGER_DIR", raising=False)
    monkeypatch.chdir(repo / "src" / "deep")
    assert find_ledger_dir(for_init=True) == repo / ".ledger"
    with pytest.raises(LedgerNotFoundError, match=r"no \.ledger ledger in"):
        find_ledger_dir()
    Store.init(find_ledger_dir(for_init=True))
    assert find_ledger_dir() == repo / ".ledger"  # found from below, once it exists
    # Outside any git repository: here.
    (tmp_path / "plain").mkdir()
    monkeypatch.chdir(tmp_path / "plain")
    if not any((d / ".git").exists() for d in [tmp_path, *tmp_path.parents]):
        assert find_ledger_dir(for_init=True) == tmp_path / "plain" / ".ledger"


def test_explicit_and_environment_choices_win(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    Store.init(tmp_path / ".ledger")
    monkeypatch.setenv("LEDGER_DIR", str(tmp_path / "env"))
    assert find_ledger_dir() == tmp_path / "env"
    assert find_ledger_dir("~/x") == Path("~/x").expanduser().absolute()
    monkeypatch.setenv("LEDGER_DIR", "")  # empty: as if unset
    assert find_ledger_dir() == tmp_path / ".ledger"


@pytest.mark.skipif(os.geteuid() != 0 or SETPRIV is None, reason="needs root and setpriv")
@pytest.mark.parametrize("sub", ["objects", "tmp", "refs", "log", None])
def test_check_writable_names_the_folder(tmp_path: Path, sub: str | None) -> None:
    # Root writes through chmod; the child drops the capabilities that let it.
    Store.init(tmp_path / "l")
    if sub is not None:
        (tmp_path / "l" / sub).chmod(0o555)
    code = (
        "import sys\n"
        "from ledger.errors import LedgerAccessError\n"
        "from ledger.store import Store\n"
        "try:\n"
        f"    Store.open({str(tmp_path / 'l')!r}).check_writable()\n"
        "except LedgerAccessError as e:\n"
        "    print(e.message); sys.exit(2)\n"
    )
    proc = run_without_dac_override(code)
    if sub is None:
        assert proc.returncode == 0, proc.stderr
    else:
        assert proc.returncode == 2, proc.stderr
        assert f"is not writable ({sub}/)" in proc.stdout


def test_check_writable_passes_on_a_fresh_ledger(tmp_path: Path) -> None:
    Store.init(tmp_path / "l").check_writable()


def test_the_lock_excludes_another_process(tmp_path: Path) -> None:
    store = Store.init(tmp_path / "l")
    probe = (
        "import fcntl, os, sys\n"
        "fd = os.open(sys.argv[1], os.O_RDWR)\n"
        "try:\n"
        "    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)\n"
        "    print('free')\n"
        "except BlockingIOError:\n"
        "    print('held')\n"
    )
    lock = tmp_path / "l" / "locks" / "refs.lock"

    def state() -> str:
        return subprocess.run(
            [sys.executable, "-c", probe, str(lock)], capture_output=True, text=True, check=True
        ).stdout.strip()

    with store.lock():
        assert state() == "held"
    assert state() == "free"  # released on exit
    with pytest.raises(RuntimeError), store.lock():
        raise RuntimeError
    assert state() == "free"  # and on an error


def test_a_lock_file_that_is_a_symlink_is_refused_and_its_target_left_alone(
    tmp_path: Path,
) -> None:
    store = Store.init(tmp_path / "l")
    target = tmp_path / "elsewhere.txt"
    target.write_text("not ledger's\n")
    (tmp_path / "l" / "locks" / "refs.lock").symlink_to(target)
    oid = store.put_json({"kind": "note", "schema": 1})
    with pytest.raises(NotRegularError, match=r"refs\.lock is a symbolic link or a socket"):
        store.set_ref("notes/a", oid)
    assert target.read_text() == "not ledger's\n"
    assert store.refs.get("notes/a") is None and list(store.log.entries()) == []


def test_a_lock_folder_that_cannot_be_opened_raises_its_own_error(tmp_path: Path) -> None:
    # Only a symlink or a socket is called "not a lock file"; other failures keep their cause.
    store = Store.init(tmp_path / "l")
    (tmp_path / "l" / "locks").rmdir()
    with pytest.raises(FileNotFoundError), store.lock():
        pass


def _sealed_run(store: Store, name: str) -> str:
    rec = store.put_json({"kind": "run", "schema": 1, "status": "succeeded", "name": name})
    store.set_ref(f"runs/{name}", rec, op="seal")
    return rec


@pytest.mark.parametrize("move", ["seal again", "delete", "create with a forbidden op"])
def test_a_writer_refuses_a_move_the_format_forbids_before_logging_it(
    tmp_path: Path, move: str
) -> None:
    # docs/format.md, "Transitions": a sealed run never changes. Each writer checks the move
    # under the lock, so no line the fold would refuse is ever logged.
    store = Store.init(tmp_path / "l")
    rec = _sealed_run(store, "r1")
    other = store.put_json({"kind": "run", "schema": 1, "status": "failed", "name": "r1"})
    log_before = store.log.path.read_bytes()
    with pytest.raises(UsageError, match="a run is started once and sealed once"):
        if move == "seal again":
            store.set_ref("runs/r1", other, op="seal")
        elif move == "delete":
            store.delete_ref("runs/r1")
        else:
            store.create_ref("runs/r2", other, op="publish")
    assert store.log.path.read_bytes() == log_before
    assert store.refs.get("runs/r1") == rec and store.refs.get("runs/r2") is None


def test_a_curation_is_retracted_once_and_never_again(tmp_path: Path) -> None:
    # docs/format.md, "Transitions": a curation ref's state is its record's (retracted or not):
    # a tagged run may be retracted; a retracted one may be tagged, not retracted again.
    store = Store.init(tmp_path / "l")
    tagged = store.put_json({"kind": "curation", "schema": 1, "tags": ["good"]})
    store.set_ref("curation/r1", tagged, op="tag")
    gone = store.put_json({"kind": "curation", "schema": 1, "retracted": True})
    store.set_ref("curation/r1", gone, op="retract")
    again = store.put_json({"kind": "curation", "schema": 1, "retracted": True, "n": 2})
    with pytest.raises(UsageError, match="a retraction is never undone"):
        store.set_ref("curation/r1", again, op="retract")
    assert store.refs.get("curation/r1") == gone


def test_a_verdict_written_twice_is_refused_as_a_set_verdict(tmp_path: Path) -> None:
    # Only a run's state comes from its record's status: a verdict (whose kind sorts after
    # "run") is "set" once written, and the refusal says so.
    store = Store.init(tmp_path / "l")
    first = store.put_json({"kind": "verdict", "schema": 1, "status": "reproduced"})
    store.set_ref("verdicts/r1/v1", first, op="verdict")
    other = store.put_json({"kind": "verdict", "schema": 1, "status": "diverged"})
    with pytest.raises(UsageError, match="not allowed on a set verdict ref"):
        store.set_ref("verdicts/r1/v1", other, op="verdict")
    assert store.refs.get("verdicts/r1/v1") == first


def test_get_json_of_an_object_that_is_no_json_is_corrupt(tmp_path: Path) -> None:
    from ledger.errors import CorruptObjectError

    store = Store.init(tmp_path / "l")
    oid = store.objects.put_bytes(b"\xff\xfe not json")
    with pytest.raises(CorruptObjectError, match="is not a JSON record"):
        store.get_json(oid)
    assert store.get_json(store.put_json({"a": [1, 2]})) == {"a": [1, 2]}


def test_create_ref_sets_only_a_new_ref(tmp_path: Path) -> None:
    store = Store.init(tmp_path / "l")
    a, b = store.put_json({"i": 1}), store.put_json({"i": 2})
    assert store.create_ref("notes/x", a, op="import") is None
    assert store.create_ref("notes/x", b, op="import") == a  # held: nothing changed
    assert store.refs.get("notes/x") == a
    entries = list(store.log.entries())
    assert [(e.data["op"], e.data["old"], e.data["new"]) for e in entries] == [("import", None, a)]
    with pytest.raises(UsageError, match="no such object"):
        store.create_ref("notes/y", "b3:" + "0" * 64, op="import")


def test_delete_ref_logs_and_removes(tmp_path: Path) -> None:
    store = Store.init(tmp_path / "l")
    a = store.put_json({"i": 1})
    store.set_ref("names/x", a, op="set")
    assert store.delete_ref("names/missing") is None
    entry = store.delete_ref("names/x", why="test")
    assert entry is not None
    assert entry.data["op"] == "delete" and entry.data["old"] == a and entry.data["new"] is None
    assert entry.data["why"] == "test"
    assert store.refs.get("names/x") is None
    assert store.ref_state_from_log() == {}


def test_ref_state_from_log_follows_moves_and_deletes(tmp_path: Path) -> None:
    store = Store.init(tmp_path / "l")
    a, b = store.put_json({"i": 1}), store.put_json({"i": 2})
    store.set_ref("names/x", a)
    store.set_ref("names/y", a)
    store.set_ref("names/x", b)
    store.delete_ref("names/y")
    assert store.ref_state_from_log() == {"names/x": b}


def test_init_into_an_existing_empty_folder_and_a_missing_parent(tmp_path: Path) -> None:
    (tmp_path / "made").mkdir()
    Store.init(tmp_path / "made")  # a folder the user made first
    assert (tmp_path / "made" / "config.json").is_file()
    Store.init(tmp_path / "a" / "b" / ".ledger")  # its parents made too
    assert (tmp_path / "a" / "b" / ".ledger" / "config.json").is_file()


def test_the_lock_file_is_made_with_mode_644(tmp_path: Path) -> None:
    store = Store.init(tmp_path / "l")
    old = os.umask(0o022)
    try:
        with store.lock("other"):
            pass
    finally:
        os.umask(old)
    assert (tmp_path / "l" / "locks" / "other.lock").stat().st_mode & 0o777 == 0o644


@pytest.mark.parametrize("bad", ["../escape", "/abs", "a//b", "names/.hidden/../x", ""])
def test_a_bad_ref_name_is_refused_before_anything_is_logged(tmp_path: Path, bad: str) -> None:
    store = Store.init(tmp_path / "l")
    a = store.put_json({"i": 1})
    with pytest.raises(UsageError):
        store.set_ref(bad, a)
    with pytest.raises(UsageError):
        store.set_refs([("names/ok", a, "set", {}), (bad, a, "set", {})])
    with pytest.raises(UsageError):
        store.create_ref(bad, a, op="import")
    assert list(store.log.entries()) == []
    assert store.refs.get("names/ok") is None
    assert not (tmp_path / "escape").exists()


def test_create_ref_beside_an_existing_one(tmp_path: Path) -> None:
    store = Store.init(tmp_path / "l")
    a, b = store.put_json({"i": 1}), store.put_json({"i": 2})
    assert store.create_ref("notes/x", a, op="import") is None
    assert store.create_ref("notes/y", b, op="import") is None  # the folder exists already
    assert (tmp_path / "l" / "refs" / "notes" / "y").read_bytes() == b.encode() + b"\n"
    assert store.ref_state_from_log() == {"notes/x": a, "notes/y": b}


@pytest.mark.skipif(os.geteuid() != 0 or SETPRIV is None, reason="needs root and setpriv")
def test_an_unreadable_config_says_so(tmp_path: Path) -> None:
    Store.init(tmp_path / "l")
    (tmp_path / "l" / "config.json").chmod(0)
    code = (
        "import sys\n"
        "from ledger.errors import LedgerAccessError\n"
        "from ledger.store import Store\n"
        "try:\n"
        f"    Store.open({str(tmp_path / 'l')!r})\n"
        "except LedgerAccessError as e:\n"
        "    print(e.message); sys.exit(2)\n"
    )
    proc = run_without_dac_override(code)
    assert proc.returncode == 2, proc.stderr
    assert f"cannot read {tmp_path / 'l' / 'config.json'}" in proc.stdout


def test_init_finishes_an_unfinished_init(tmp_path: Path) -> None:
    # A ledger without config.json is an unfinished init: its folders may all exist.
    for sub in ("objects", "refs", "log", "tmp", "locks"):
        (tmp_path / "l" / sub).mkdir(parents=True)
    Store.init(tmp_path / "l")
    assert Store.open(tmp_path / "l").config["version"] == FORMAT_VERSION


@pytest.mark.skipif(not Path("/proc/self/fd").is_dir(), reason="counts descriptors in /proc")
def test_the_lock_leaves_no_descriptor_open(tmp_path: Path) -> None:
    store = Store.init(tmp_path / "l")
    before = len(os.listdir("/proc/self/fd"))
    for _ in range(5):
        with store.lock():
            pass
    assert len(os.listdir("/proc/self/fd")) == before


def test_create_ref_makes_the_folders_of_a_nested_name(tmp_path: Path) -> None:
    store = Store.init(tmp_path / "l")
    a = store.put_json({"i": 1})
    assert store.create_ref("checkpoints/run-1/step-1", a, op="checkpoint") is None
    assert store.refs.get("checkpoints/run-1/step-1") == a


def test_a_bad_ref_name_is_named_first_even_with_a_missing_object(tmp_path: Path) -> None:
    # The name is what is wrong first: the error says so, whatever the object.
    store = Store.init(tmp_path / "l")
    missing = "b3:" + "0" * 64
    for call in (
        lambda: store.set_ref("../x", missing),
        lambda: store.set_refs([("../x", missing, "set", {})]),
        lambda: store.create_ref("../x", missing, op="import"),
    ):
        with pytest.raises(UsageError, match=r"invalid ref name '\.\./x'"):
            call()
