"""The store commands through the real entry point: output, --json, errors and exit codes."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from _support import run_ledger

from ledger._hashing import hash_bytes
from ledger.store import Store


@pytest.fixture
def ledger_env(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    root = tmp_path / ".ledger"
    monkeypatch.setenv("LEDGER_DIR", str(root))
    return root


def test_init_verify_cat_reindex(cli, ledger_env: Path) -> None:  # type: ignore[no-untyped-def]
    r = cli("init")
    assert r.exit_code == 0 and "Initialised" in r.stdout
    assert cli("init").stdout.startswith("Using existing")
    store = Store.open(ledger_env)
    oid = store.objects.put_bytes(b"hello ledger\n")
    store.set_ref("demo/hello", oid)

    r = cli("verify", "--json")
    data = json.loads(r.stdout)
    assert r.exit_code == 0 and data["ok"] and data["objects"] == 1 and data["refs"] == 1

    assert cli("cat", oid[:9]).stdout == "hello ledger\n"
    assert cli("cat", oid[3:12]).stdout == "hello ledger\n"
    assert cli("cat", "demo/hello").stdout == "hello ledger\n"
    assert json.loads(cli("reindex", "--json").stdout) == {
        "log_entries_applied": 1,
        "refs_repaired": [],
        "refs_left": [],
    }


def test_verify_exit_code_on_corruption(cli, ledger_env: Path) -> None:  # type: ignore[no-untyped-def]
    cli("init")
    store = Store.open(ledger_env)
    oid = store.objects.put_bytes(b"precious" * 100)
    path = store.objects.path_of(oid)
    path.chmod(0o644)
    path.write_bytes(path.read_bytes()[:-3])
    r = cli("verify")
    assert r.exit_code == 1
    assert oid in r.stdout and "corrupt-object" in r.stdout


def test_cat_unknown_and_ambiguous_prefixes(cli, ledger_env: Path) -> None:  # type: ignore[no-untyped-def]
    cli("init")
    store = Store.open(ledger_env)
    oids = [store.objects.put_bytes(str(i).encode()) for i in range(400)]
    r = cli("cat", "b3:zz")
    assert r.exit_code == 2 and "not an object id" in r.stderr and "hint" in r.stderr
    # 400 ids share many 4-digit-free 2-digit prefixes; find an ambiguous 4-char one by brute force
    prefixes: dict[str, int] = {}
    for o in oids:
        prefixes[o[3:7]] = prefixes.get(o[3:7], 0) + 1
    missing = next(p for p in (f"{i:04x}" for i in range(65536)) if p not in prefixes)
    r = cli("cat", missing)
    assert r.exit_code == 2 and "no object id starts with" in r.stderr
    # Two contents whose ids share their first 4 hex digits (the shortest prefix `cat` takes):
    # found by hashing, not storing, so the prefix is ambiguous on every run.
    first_seen: dict[str, bytes] = {}
    pair: tuple[bytes, bytes] | None = None
    for i in range(100_000):
        content = f"collide {i}".encode()
        prefix = hash_bytes(content)[3:7]
        if prefix in first_seen:
            pair = (first_seen[prefix], content)
            break
        first_seen[prefix] = content
    assert pair is not None
    a, b = (store.objects.put_bytes(c) for c in pair)
    r = cli("cat", a[3:7])
    assert r.exit_code == 2 and f"{a[3:7]!r} matches" in r.stderr, r
    assert "ledger: hint: give more digits" in r.stderr
    assert a[:16] in r.stderr and b[:16] in r.stderr
    # One more digit than the two share is unique again.
    common = next(n for n in range(4, 65) if a[3 : 3 + n] != b[3 : 3 + n])
    assert cli("cat", a[3 : 3 + common]).stdout == pair[0].decode()


def test_gc_dry_run_then_yes(cli, ledger_env: Path) -> None:  # type: ignore[no-untyped-def]
    cli("init")
    store = Store.open(ledger_env)
    store.objects.put_bytes(b"garbage")
    r = cli("gc", "--grace-hours", "0")
    assert r.exit_code == 0 and "would delete 1" in r.stdout and "Dry run" in r.stdout
    r = cli("gc", "--grace-hours", "0", "--yes", "--json")
    assert len(json.loads(r.stdout)["deleted"]) == 1


def test_missing_ledger_is_exit_3(cli, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:  # type: ignore[no-untyped-def]
    monkeypatch.delenv("LEDGER_DIR", raising=False)
    monkeypatch.chdir(tmp_path)
    r = cli("verify")
    assert r.exit_code == 3
    assert "no .ledger" in r.stderr and "ledger init" in r.stderr


def test_newer_format_is_exit_4(cli, ledger_env: Path) -> None:  # type: ignore[no-untyped-def]
    cli("init")
    cfg = json.loads((ledger_env / "config.json").read_text())
    cfg["version"] = 99
    (ledger_env / "config.json").write_text(json.dumps(cfg))
    r = cli("verify")
    assert r.exit_code == 4 and "upgrade" in r.stderr


def test_unwritable_ledger_location_is_exit_3(cli, tmp_path: Path) -> None:  # type: ignore[no-untyped-def]
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    r = cli("init", "--ledger", str(blocker / ".ledger"))
    assert r.exit_code == 3 and "cannot create a ledger" in r.stderr


def test_malformed_config_is_reported(cli, ledger_env: Path) -> None:  # type: ignore[no-untyped-def]
    cli("init")
    (ledger_env / "config.json").write_text("{not json")
    r = cli("verify")
    assert r.exit_code == 3 and "not valid JSON" in r.stderr


def test_unknown_option_is_exit_2(tmp_path: Path) -> None:
    r = run_ledger("verify", "--no-such-option", cwd=tmp_path)
    assert r.returncode == 2 and "No such option" in r.stderr


def test_help_is_instant_and_imports_nothing_heavy(tmp_path: Path) -> None:
    import subprocess
    import sys

    from _support import subprocess_env

    code = (
        "import sys; sys.argv=['ledger','--help']\n"
        "from ledger.cli.app import main\n"
        "try:\n    main()\nexcept SystemExit:\n    pass\n"
        "heavy = [m for m in ('torch','numpy','scipy','dvc','git','sqlite_utils','pydantic')"
        " if m in sys.modules]\n"
        "print('HEAVY', heavy)"
    )
    out = subprocess.run(
        [sys.executable, "-c", code], env=subprocess_env(), capture_output=True, text=True
    ).stdout
    assert "HEAVY []" in out, out
