"""Reproducibility packages: one ``.ledgerpkg`` file (tar + zstd) with everything to replay and
audit some runs (docs/format.md, "Reproducibility packages").

Members, in this order: ``manifest.json`` (format, version, origin, refs, every object's id and
size), ``README.md`` (for people), then ``objects/b3/<64 hex>`` holding each object's content.
Every member is a regular file with mode 0444, owner 0 and mtime 0, in sorted order: the same
runs give the same bytes.

Import reads the stream once into a private staging folder under ``tmp/`` and makes nothing
visible until every member passed: manifest first and of a known version, no member that is
not a regular file with an expected name (no links, absolute paths, ``..``, duplicates), every
size as the manifest says and the whole stream capped by the manifest's total (a
decompression bomb stops there), every object hashing to its name, every object present.
Then, holding the lease gc respects (``door.entry_lease``), objects, then refs, which the
door (``door.admit``) makes only if ``ledger verify`` would accept them.
"""

from __future__ import annotations

import io
import os
import re
import shutil
import stat
import tarfile
import tempfile
from dataclasses import dataclass, field
from pathlib import Path
from typing import IO, Any, BinaryIO

import zstandard

from .._canonical import canonical_json, parse_json
from .._hashing import ALGO_PREFIX, CHUNK, OID_RE, hash_bytes, new_hasher
from ..errors import CorruptObjectError, FormatVersionError, UsageError
from ..store import Store
from ..store.anchor import chain_head
from ..store.batch import put_files
from ..store.made import note_made
from ..store.refs import check_ref_name
from .closure import run_closure
from .door import RefsReport, admit, entry_lease, from_origin
from .readme import render_readme

__all__ = [
    "PACKAGE_FORMAT",
    "PACKAGE_VERSION",
    "ExportReport",
    "ImportReport",
    "export_package",
    "import_package",
    "package_manifest",
]

PACKAGE_FORMAT = "ledgerpkg"
PACKAGE_VERSION = 1
MANIFEST = "manifest.json"
README = "README.md"
MAX_MANIFEST = 64 << 20
_OBJECT_NAME = re.compile(r"^objects/b3/([0-9a-f]{64})$")
# tar framing per member (header + padding) and at the end (two zero blocks + blocking).
_PER_MEMBER = 1024
_TAIL = 20480
ZSTD_LEVEL = 3
# Expansion: a package may unpack to at most MAX_RATIO times its own size (or RATIO_FLOOR,
# whichever is more), checked on the manifest's total before any object is unpacked. Runs'
# records, logs and code compress 3-20x, float weights barely; 200x is only reached by
# padding or zeros. A 66 KB package once claimed (and unpacked) 2 GiB: 30,000x.
MAX_RATIO = 200
RATIO_FLOOR = 64 << 20


@dataclass
class ExportReport:
    path: Path
    runs: list[str]
    refs: int
    objects: int
    bytes: int
    left_out: int
    notes: list[str] = field(default_factory=list)


@dataclass
class ImportReport:
    runs: list[str]
    objects: int
    new_objects: int
    bytes: int
    refs: RefsReport
    origin: dict[str, Any]


def _size_and_check(store: Store, oid: str) -> int:
    """The content size of ``oid``, re-hashing it: a corrupt object is never packaged."""
    hasher, n = new_hasher(), 0
    with store.objects.open(oid) as f:
        while chunk := f.read(CHUNK):
            hasher.update(chunk)
            n += len(chunk)
    if ALGO_PREFIX + hasher.hexdigest() != oid:
        raise CorruptObjectError(
            oid,
            f"object {oid} is corrupt: its content does not hash to its id; nothing was exported",
            hint="run `ledger verify` to list every damaged object",
        )
    return n


def _info(name: str, size: int) -> tarfile.TarInfo:
    info = tarfile.TarInfo(name)
    info.size, info.mode, info.mtime, info.type = size, 0o444, 0, tarfile.REGTYPE
    info.uid = info.gid = 0
    info.uname = info.gname = ""
    return info


def package_manifest(
    origin: dict[str, Any],
    runs: list[str],
    refs: dict[str, str],
    sizes: dict[str, int],
    readme: bytes,
    left_out: list[dict[str, Any]],
) -> bytes:
    """The canonical bytes of ``manifest.json`` (docs/format.md has a worked example)."""
    return canonical_json(
        {
            "format": PACKAGE_FORMAT,
            "version": PACKAGE_VERSION,
            "origin": origin,
            "runs": runs,
            "refs": dict(sorted(refs.items())),
            "objects": dict(sorted(sizes.items())),
            "total_size": sum(sizes.values()),
            "readme": hash_bytes(readme),
            "left_out": left_out,
        }
    )


def export_package(
    store: Store, run_texts: list[str], out: Path, *, data: bool = True
) -> ExportReport:
    """Write the package of ``run_texts`` to ``out`` (atomically: a temp file renamed)."""
    closure = run_closure(store, run_texts, data=data)
    sizes = {oid: _size_and_check(store, oid) for oid in sorted(closure.objects)}
    readme = render_readme(store, closure).encode()
    head, _ = chain_head(store.log)
    manifest = package_manifest(
        {"ledger": store.id, "head": head},
        closure.runs,
        closure.refs,
        sizes,
        readme,
        [lo.__dict__ for lo in closure.left_out],
    )
    out = out.absolute()
    try:
        fd, tmp_name = tempfile.mkstemp(dir=out.parent, prefix=f".{out.name}.")
    except OSError as e:
        raise UsageError(
            f"cannot write {out}: {e.strerror}", hint="choose a writable place with -o"
        ) from None
    tmp = Path(tmp_name)
    try:
        with open(fd, "wb") as raw:
            cctx = zstandard.ZstdCompressor(level=ZSTD_LEVEL)
            with (
                cctx.stream_writer(raw, closefd=False) as z,
                tarfile.open(fileobj=z, mode="w|", format=tarfile.PAX_FORMAT) as tar,
            ):
                tar.addfile(_info(MANIFEST, len(manifest)), io.BytesIO(manifest))
                tar.addfile(_info(README, len(readme)), io.BytesIO(readme))
                for oid, size in sorted(sizes.items()):
                    with store.objects.open(oid) as f:
                        tar.addfile(_info(f"objects/b3/{oid[3:]}", size), f)
            raw.flush()
            os.fsync(raw.fileno())
        tmp.replace(out)
    except BaseException:
        tmp.unlink(missing_ok=True)
        raise
    note_made(store.root, out, "package")  # ledger's output, not the project's code
    return ExportReport(
        out,
        closure.runs,
        len(closure.refs),
        len(sizes),
        sum(sizes.values()),
        len(closure.left_out),
        closure.notes,
    )


# -- import ------------------------------------------------------------------------------------
class _Capped(io.RawIOBase):
    """A reader that refuses to yield more than ``cap`` bytes (raised once a manifest is read)."""

    def __init__(self, f: BinaryIO, cap: int, path: Path) -> None:
        self.f, self.cap, self.n, self.path = f, cap, 0, path

    def readable(self) -> bool:
        return True

    def readinto(self, b: Any) -> int:
        data = self.f.read(len(b))
        self.n += len(data)
        if self.n > self.cap:
            raise UsageError(
                f"{self.path} unpacks to more than the {self.cap} bytes its manifest allows "
                "(a decompression bomb or a damaged package); nothing was imported",
                hint="ask for the package again",
            )
        b[: len(data)] = data
        return len(data)


def _bad(path: Path, what: str) -> UsageError:
    return UsageError(
        f"{path} is not a valid reproducibility package: {what}; nothing was imported",
        hint="ask its author for the package again (`ledger export`)",
    )


def _check_manifest(path: Path, m: Any) -> dict[str, Any]:
    if not isinstance(m, dict) or m.get("format") != PACKAGE_FORMAT:
        raise _bad(path, "its manifest does not describe a ledger package")
    version = m.get("version")
    if not isinstance(version, int) or version < 1:
        raise _bad(path, f"its format version is {version!r}")
    if version > PACKAGE_VERSION:
        raise FormatVersionError(
            f"{path} is a package of format version {version}; this ledger reads up to "
            f"{PACKAGE_VERSION}; nothing was imported",
            hint="upgrade ledger (pip install -U ledger-repro) to import it",
        )
    objects, refs = m.get("objects"), m.get("refs")
    if not isinstance(objects, dict) or not isinstance(refs, dict):
        raise _bad(path, "its manifest lacks the objects or refs table")
    for oid, size in objects.items():
        if not OID_RE.match(oid) or not isinstance(size, int) or size < 0:
            raise _bad(path, f"manifest entry {oid!r}: {size!r} is not an object id and size")
    for name, oid in refs.items():
        try:
            check_ref_name(name)
        except UsageError:
            raise _bad(path, f"manifest ref {name!r} is not a valid ref name") from None
        if not isinstance(oid, str) or not OID_RE.match(oid):
            raise _bad(path, f"manifest ref {name} points at {oid!r}, not an object id")
    if m.get("total_size") != sum(objects.values()):
        raise _bad(path, "its manifest's total_size is not the sum of its object sizes")
    if not isinstance(m.get("readme"), str) or not OID_RE.match(m["readme"]):
        raise _bad(path, "its manifest does not name the README's digest")
    return m


def _member_name(path: Path, member: tarfile.TarInfo) -> str:
    name = member.name
    if member.issym() or member.islnk():
        raise _bad(path, f"entry {name!r} is a link; a package holds regular files only")
    if not member.isreg():
        raise _bad(path, f"entry {name!r} is not a regular file")
    if name.startswith("/") or "\\" in name or any(p in ("..", "", ".") for p in name.split("/")):
        raise _bad(path, f"entry {name!r} has an absolute or escaping path")
    return name


def _receive(f: IO[bytes], size: int, dest: Path) -> str:
    """Copy exactly ``size`` bytes to ``dest``; their id."""
    hasher, left = new_hasher(), size
    with open(dest, "wb") as out:
        while left:
            chunk = f.read(min(CHUNK, left))
            if not chunk:
                break
            hasher.update(chunk)
            out.write(chunk)
            left -= len(chunk)
    return ALGO_PREFIX + hasher.hexdigest()


def _check_bounds(
    path: Path, manifest: dict[str, Any], packed: int, max_ratio: float, staging: Path
) -> None:
    """Refuse, before any object is unpacked, a package whose manifest claims more than
    ``max_ratio`` times its own size, or more than the disk where it unpacks holds (it is
    unpacked there, then stored: twice its size at the peak)."""
    total = manifest["total_size"]
    allowed = max(RATIO_FLOOR, max_ratio * packed)
    if total > allowed:
        raise UsageError(
            f"{path} ({packed} bytes) would unpack to {total} bytes, {total / max(packed, 1):.0f} "
            f"times its size; packages may unpack to {max_ratio:g} times theirs (a "
            "decompression bomb, or content of zeros); nothing was imported",
            hint="if you trust the package and its content is that compressible, raise the "
            f"limit: ledger import {path} --max-ratio N",
        )
    free = shutil.disk_usage(staging).free
    if 2 * total > free:
        raise UsageError(
            f"{path} unpacks to {total} bytes, and importing it needs twice that on the disk "
            f"of {staging.parent} ({free} bytes free); nothing was imported",
            hint="free some space (`ledger gc`), or import into a ledger on a larger disk",
        )


def _unpack(
    path: Path, raw: BinaryIO, staging: Path, max_ratio: float = MAX_RATIO
) -> tuple[dict[str, Any], bytes]:
    """Read and check every member into ``staging``; the manifest and README."""
    capped = _Capped(zstandard.ZstdDecompressor().stream_reader(raw), MAX_MANIFEST, path)
    stream = io.BufferedReader(capped, buffer_size=CHUNK)
    manifest: dict[str, Any] | None = None
    readme: bytes | None = None
    seen: set[str] = set()
    try:
        tar = tarfile.open(fileobj=stream, mode="r|")  # noqa: SIM115 - closed with the file
        for member in tar:
            name = _member_name(path, member)
            if name in seen:
                raise _bad(path, f"entry {name!r} appears twice")
            seen.add(name)
            f = tar.extractfile(member)
            if f is None:
                raise _bad(path, f"entry {name!r} has no content to read")
            if manifest is None:
                if name != MANIFEST:
                    raise _bad(path, f"its first entry is {name!r}, not {MANIFEST}")
                if member.size > MAX_MANIFEST:
                    raise _bad(path, f"its manifest is larger than {MAX_MANIFEST} bytes")
                manifest = _check_manifest(path, parse_json(f.read()))
                _check_bounds(path, manifest, os.fstat(raw.fileno()).st_size, max_ratio, staging)
                n = len(manifest["objects"]) + 2
                capped.cap = (
                    capped.n + manifest["total_size"] + MAX_MANIFEST + n * _PER_MEMBER + _TAIL
                )
                continue
            if name == README:
                if member.size > MAX_MANIFEST:
                    raise _bad(path, "its README is too large")
                readme = f.read()
                if hash_bytes(readme) != manifest["readme"]:
                    raise _bad(path, "README.md does not match the digest its manifest gives")
                continue
            m = _OBJECT_NAME.match(name)
            if m is None:
                raise _bad(path, f"unexpected entry {name!r}")
            oid = ALGO_PREFIX + m.group(1)
            want = manifest["objects"].get(oid)
            if want is None:
                raise _bad(path, f"entry {name!r} is not in its manifest")
            if member.size != want:
                raise _bad(
                    path, f"entry {name!r} has {member.size} bytes, the manifest says {want}"
                )
            got = _receive(f, member.size, staging / m.group(1))
            if got != oid:
                raise CorruptObjectError(
                    oid,
                    f"package entry {name} is corrupt: its content hashes to {got}; nothing "
                    "was imported",
                    hint="ask for the package again",
                )
    except (tarfile.TarError, zstandard.ZstdError, EOFError, ValueError) as e:
        raise _bad(path, f"it cannot be read ({e})") from None
    if manifest is None:
        raise _bad(path, "it has no manifest")
    if readme is None:
        raise _bad(path, "it has no README.md")
    missing = sorted(set(manifest["objects"]) - {ALGO_PREFIX + p.name for p in staging.iterdir()})
    if missing:
        raise _bad(
            path, f"{len(missing)} object(s) its manifest lists are absent, e.g. {missing[0]}"
        )
    return manifest, readme


def import_package(store: Store, path: Path, *, max_ratio: float = MAX_RATIO) -> ImportReport:
    """Check the whole package, then add its objects and refs to ``store``. ``max_ratio``:
    how many times its own size the package may unpack to (``_check_bounds``)."""
    path = Path(path)
    try:  # O_NONBLOCK: a FIFO given as the package is refused, never waited on
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK | os.O_CLOEXEC)
    except OSError as e:
        raise UsageError(f"cannot read {path}: {e.strerror}", hint="check the path") from None
    if not stat.S_ISREG(os.fstat(fd).st_mode):
        os.close(fd)
        raise UsageError(
            f"{path} is not a regular file; a package is read from a file",
            hint="save the package to a file first",
        )
    os.set_blocking(fd, True)
    raw = os.fdopen(fd, "rb")
    with entry_lease(store, "import"):
        staging = Path(tempfile.mkdtemp(prefix="import-", dir=store.tmp_dir))
        try:
            with raw:
                manifest, _ = _unpack(path, raw, staging, max_ratio)
            refs: dict[str, str] = manifest["refs"]
            have = set(manifest["objects"])
            # Stored in batches (``put_files``): one durability barrier per batch, not an fsync
            # and a directory fsync per object (5,000 small objects: 96 s before, see the bench).
            stored = store.objects.touch_all(have)
            todo = sorted(have - stored)
            got = put_files(
                store.objects,
                [str(staging / oid[3:]) for oid in todo],
                [manifest["objects"][oid] for oid in todo],
            )
            for oid, stored_as in zip(todo, got, strict=True):
                if stored_as != oid:  # its staged copy changed after the check: refuse
                    raise CorruptObjectError(
                        oid,
                        f"object {oid} of {path} changed after it was checked (it hashed to "
                        f"{stored_as} when stored); no ref was imported",
                        hint="import it again; if it recurs, see what writes to the ledger's tmp/",
                    )
            new = len(todo)
            found = manifest.get("origin")
            origin: dict[str, Any] = found if isinstance(found, dict) else {}
            report = admit(
                store,
                from_origin(refs, origin),
                source=f"package {path}",
                hint="ask its author to export it again (`ledger export`) from a ledger that "
                "`ledger verify` accepts",
            )
        finally:
            shutil.rmtree(staging, ignore_errors=True)
    runs = [str(r) for r in manifest.get("runs", []) if isinstance(r, str)]
    return ImportReport(runs, len(have), new, int(manifest["total_size"]), report, origin)
