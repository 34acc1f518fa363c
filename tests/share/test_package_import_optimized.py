"""`ledger import` refuses a hostile or damaged package under ``python -O`` as well: -O strips
every ``assert``, so no refusal may rest on one (ruff's S101 keeps them out of ledger/)."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest
from _support import subprocess_env
from test_package_import import HOSTILE, read_members, snapshot, write_members

from ledger.store import Store


def _optimized(*args: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    # `if __debug__` holds only without -O: the child says so if -O did not take.
    check = "import sys; sys.exit('-O did not take') if __debug__ else None; "
    return subprocess.run(
        [sys.executable, "-O", "-c", check + "from ledger.cli.entry import main; main()", *args],
        cwd=cwd,
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )


@pytest.mark.parametrize("case", sorted(HOSTILE))
def test_hostile_packages_are_refused_under_python_O(
    case: str, packaged: tuple[Path, str, Path], fresh: Path, tmp_path: Path
) -> None:
    _, _, pkg = packaged
    change, code, words = HOSTILE[case]
    bad = tmp_path / "bad.ledgerpkg"
    write_members(bad, change(read_members(pkg)))
    before = snapshot(fresh / ".ledger")
    r = _optimized("import", str(bad), cwd=fresh)
    assert r.returncode == code, r.stderr
    assert r.stderr.startswith("ledger: error: ") and words in r.stderr, r.stderr
    assert snapshot(fresh / ".ledger") == before
    assert not (tmp_path / "evil").exists()


def test_a_corrupt_object_is_refused_under_python_O(
    packaged: tuple[Path, str, Path], fresh: Path, tmp_path: Path
) -> None:
    _, _, pkg = packaged
    members = read_members(pkg)
    i = next(i for i, (m, _) in enumerate(members) if m.name.startswith("objects/"))
    info, data = members[i]
    members[i] = (info, bytes([data[0] ^ 1]) + data[1:])
    bad = tmp_path / "bad.ledgerpkg"
    write_members(bad, members)
    before = snapshot(fresh / ".ledger")
    r = _optimized("import", str(bad), cwd=fresh)
    assert r.returncode == 5 and f"package entry {info.name} is corrupt" in r.stderr, r.stderr
    assert snapshot(fresh / ".ledger") == before


# Between the check of a package's objects and their storing, something rewrites one staged
# copy in the ledger's tmp/ (here: right after the check, in the importing process itself), so
# that it hashes below its name ("below") or above it ("above").
TAMPER = """
import sys
from pathlib import Path
from ledger._hashing import hash_bytes
from ledger.errors import LedgerError
from ledger.share import package
from ledger.store import Store
if __debug__:
    sys.exit("-O did not take")
checked = package._unpack
def check_then_tamper(path, raw, staging, *bounds):
    out = checked(path, raw, staging, *bounds)
    # The object whose name leaves most room on that side: the last name, or the first.
    files = sorted(p for p in staging.iterdir() if p.is_file())
    staged = files[-1] if sys.argv[2] == "below" else files[0]
    name, data = staged.name, staged.read_bytes()
    for n in range(200):
        changed = data + b" and then some %d" % n
        if (hash_bytes(changed)[3:] < name) == (sys.argv[2] == "below"):
            break
    else:
        sys.exit("no change hashed on that side")
    staged.write_bytes(changed)
    return out
package._unpack = check_then_tamper
try:
    package.import_package(Store.open(Path(".ledger")), Path(sys.argv[1]))
except LedgerError as e:
    print(type(e).__name__, e.message)
    sys.exit(e.exit_code)
print("imported")
"""


@pytest.mark.parametrize("side", ["below", "above"])
def test_a_staged_object_changed_after_the_check_is_refused_under_python_O(
    packaged: tuple[Path, str, Path], fresh: Path, side: str
) -> None:
    _, _, pkg = packaged
    before = snapshot(fresh / ".ledger")
    r = subprocess.run(
        [sys.executable, "-O", "-c", TAMPER, str(pkg), side],
        cwd=fresh,
        env=subprocess_env(),
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert r.returncode == 5, r.stdout + r.stderr
    assert r.stdout.startswith("CorruptObjectError object ") and "changed after it was checked" in (
        r.stdout
    )
    store = Store.open(fresh / ".ledger")
    assert list(store.refs.iter("runs/")) == []  # no ref was imported
    assert snapshot(fresh / ".ledger")[1] == before[1]  # nor logged
