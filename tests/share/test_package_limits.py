"""The size limits of `ledger import`, each met exactly and passed by one byte: the manifest and
the README (64 MiB each), the bytes a package may spend before its manifest, the expansion a
manifest may claim (200 times the package's size, at least 64 MiB) and the disk it needs (twice
what it unpacks to). Each case is a real package from a real run, changed as an attacker (or a
careless exporter) would; a claim within a limit is refused later, by what is really missing."""

from __future__ import annotations

import io
import shutil
import tarfile
from pathlib import Path

import pytest
import zstandard
from _support import run_ledger
from test_package_import import (
    Member,
    manifest_of,
    read_members,
    snapshot,
    with_manifest,
)

from ledger._hashing import hash_bytes
from ledger.errors import LedgerError
from ledger.share.package import import_package
from ledger.store import Store

MIB64 = 64 << 20
# An object the manifest lists and the package leaves out: its size tunes the claimed total.
ABSENT = "b3:" + "ab" * 32


def write_members(pkg: Path, members: list[Member]) -> None:
    """As test_package_import's, but through a seekable-mode tar writer: the stream mode
    slices its buffer once per 10 KiB record, quadratic in a 66 MiB PAX header."""
    with (
        open(pkg, "wb") as raw,
        zstandard.ZstdCompressor().stream_writer(raw) as z,
        tarfile.open(fileobj=z, mode="w", format=tarfile.PAX_FORMAT) as tar,
    ):
        for info, data in members:
            info.size = len(data) if info.isreg() else 0
            tar.addfile(info, io.BytesIO(data) if info.isreg() else None)


def _import(fresh: Path, pkg: Path, *args: str) -> tuple[int, str]:
    r = run_ledger("import", str(pkg), *args, cwd=fresh)
    assert "Traceback" not in r.stderr, r.stderr
    return r.returncode, r.stderr


def _padded_manifest(members: list[Member], size: int) -> list[Member]:
    """The same manifest, its JSON text padded with spaces to exactly ``size`` bytes."""
    text = members[0][1]
    return [(members[0][0], text + b" " * (size - len(text))), *members[1:]]


@pytest.mark.parametrize("extra", [1, 0])
def test_a_manifest_over_64_mib_is_refused_by_its_size(
    packaged: tuple[Path, str, Path], fresh: Path, tmp_path: Path, extra: int
) -> None:
    _, _, pkg = packaged
    big = tmp_path / "big.ledgerpkg"
    write_members(big, _padded_manifest(read_members(pkg), MIB64 + extra))
    before = snapshot(fresh / ".ledger")
    code, err = _import(fresh, big)
    assert code == 2, err
    if extra:
        assert f"its manifest is larger than {MIB64} bytes" in err, err
    else:  # 64 MiB exactly passes the size check; the stream cap stops its header's bytes
        assert f"unpacks to more than the {MIB64} bytes its manifest allows" in err, err
    assert snapshot(fresh / ".ledger") == before


def test_a_manifest_just_under_the_cap_imports(
    packaged: tuple[Path, str, Path], fresh: Path, tmp_path: Path
) -> None:
    """The largest manifest the 64 MiB stream cap lets through (its tar header and the reader's
    1 MiB read-ahead count too): the run is imported."""
    _, run_id, pkg = packaged
    big = tmp_path / "big.ledgerpkg"
    write_members(big, _padded_manifest(read_members(pkg), MIB64 - (2 << 20)))
    code, err = _import(fresh, big)
    assert code == 0, err
    assert Store.open(fresh / ".ledger").refs.get(f"runs/{run_id}") is not None


def _with_readme(members: list[Member], readme: bytes) -> list[Member]:
    m = manifest_of(members)
    m["readme"] = hash_bytes(readme)
    members = with_manifest(members, m)
    i = next(i for i, (info, _) in enumerate(members) if info.name == "README.md")
    members[i] = (members[i][0], readme)
    return members


@pytest.mark.parametrize("extra", [1, 0])
def test_a_readme_of_64_mib_imports_and_one_byte_more_is_refused(
    packaged: tuple[Path, str, Path], fresh: Path, tmp_path: Path, extra: int
) -> None:
    _, run_id, pkg = packaged
    readme = b"# A long README\n" + b"=" * (MIB64 + extra - 16)
    big = tmp_path / "readme.ledgerpkg"
    write_members(big, _with_readme(read_members(pkg), readme))
    before = snapshot(fresh / ".ledger")
    code, err = _import(fresh, big)
    if extra:
        assert code == 2 and "its README is too large" in err, err
        assert snapshot(fresh / ".ledger") == before
    else:
        assert code == 0, err
        assert Store.open(fresh / ".ledger").refs.get(f"runs/{run_id}") is not None


def test_more_than_64_mib_before_the_manifest_is_refused_as_a_bomb(
    packaged: tuple[Path, str, Path], fresh: Path, tmp_path: Path
) -> None:
    """A PAX header of 65 MiB ahead of the manifest: the reader stops at 64 MiB, before the
    manifest could raise the cap, and nothing is imported."""
    _, _, pkg = packaged
    members = read_members(pkg)
    info = members[0][0]
    info.pax_headers = {"comment": "x" * (65 << 20)}
    bomb = tmp_path / "header-bomb.ledgerpkg"
    write_members(bomb, members)
    assert bomb.stat().st_size < (1 << 20)
    before = snapshot(fresh / ".ledger")
    code, err = _import(fresh, bomb)
    assert code == 2, err
    assert f"unpacks to more than the {MIB64} bytes its manifest allows" in err, err
    assert snapshot(fresh / ".ledger") == before
    assert not list((fresh / ".ledger" / "tmp").iterdir())


def _claiming(pkg: Path, out: Path, total: int, size: int | None = None) -> None:
    """``pkg`` with one more object listed (and left out) so that its manifest claims
    ``total`` bytes; the file padded after its zstd frame (never read) to ``size`` bytes."""
    members = read_members(pkg)
    m = manifest_of(members)
    objects = m["objects"]
    assert isinstance(objects, dict)
    objects[ABSENT] = total - sum(objects.values())
    assert objects[ABSENT] > 0
    m["total_size"] = total
    write_members(out, with_manifest(members, m))
    if size is not None:
        assert out.stat().st_size < size
        with open(out, "ab") as f:
            f.write(b"\0" * (size - out.stat().st_size))
        assert out.stat().st_size == size


ABSENT_WORDS = "1 object(s) its manifest lists are absent"


@pytest.mark.parametrize("extra", [1, 0])
def test_a_small_package_may_claim_64_mib_and_not_a_byte_more(
    packaged: tuple[Path, str, Path], fresh: Path, tmp_path: Path, extra: int
) -> None:
    _, _, pkg = packaged
    claim = tmp_path / "claim.ledgerpkg"
    _claiming(pkg, claim, MIB64 + extra)
    packed = claim.stat().st_size
    assert 200 * packed < MIB64  # the floor, not the ratio, is the limit here
    code, err = _import(fresh, claim)
    assert code == 2, err
    if extra:
        assert f"would unpack to {MIB64 + 1} bytes" in err and "--max-ratio" in err, err
        assert f"{(MIB64 + 1) / packed:.0f} times its size" in err, err
    else:
        assert "times its size" not in err and ABSENT_WORDS in err, err


@pytest.mark.parametrize("extra", [1, 0])
def test_a_package_may_claim_200_times_its_size_and_not_a_byte_more(
    packaged: tuple[Path, str, Path], fresh: Path, tmp_path: Path, extra: int
) -> None:
    """Through the CLI and through ``import_package`` with its default ratio."""
    _, _, pkg = packaged
    packed = 400_000  # 200 times it is above the 64 MiB floor
    claim = tmp_path / "claim.ledgerpkg"
    _claiming(pkg, claim, 200 * packed + extra, size=packed)
    code, err = _import(fresh, claim)
    assert code == 2, err
    store = Store.open(fresh / ".ledger")
    with pytest.raises(LedgerError) as raised:
        import_package(store, claim)
    if extra:
        assert "would unpack to 80000001 bytes, 200 times its size" in err, err
        assert "times its size" in raised.value.message
    else:
        assert "times its size" not in err and ABSENT_WORDS in err, err
        assert ABSENT_WORDS in raised.value.message
    # --max-ratio moves the bound: one more times the size lets the byte more through.
    code, err = _import(fresh, claim, "--max-ratio", "201")
    assert code == 2 and ABSENT_WORDS in err, err


@pytest.mark.parametrize("share", [0.6, 0.4])
def test_a_package_needing_more_than_the_free_disk_is_refused_up_front(
    packaged: tuple[Path, str, Path], fresh: Path, tmp_path: Path, share: float
) -> None:
    """It is unpacked, then stored: twice what it claims must be free. A claim of 60% of the
    free space is refused before anything is unpacked; one of 40% is not (and fails on the
    object it lacks)."""
    _, _, pkg = packaged
    total = int(share * shutil.disk_usage(fresh).free)
    claim = tmp_path / "claim.ledgerpkg"
    _claiming(pkg, claim, total)
    code, err = _import(fresh, claim, "--max-ratio", "1e15")
    assert code == 2, err
    if share > 0.5:
        assert "importing it needs twice that on the disk" in err, err
    else:
        assert "needs twice" not in err and ABSENT_WORDS in err, err
    assert not list((fresh / ".ledger" / "tmp").iterdir())


def _stream_size(pkg: Path) -> int:
    with open(pkg, "rb") as raw, zstandard.ZstdDecompressor().stream_reader(raw) as z:
        return sum(len(b) for b in iter(lambda: z.read(1 << 20), b""))


@pytest.mark.parametrize("over", [1, 0])
def test_past_the_manifest_the_stream_cap_holds_to_the_byte(
    packaged: tuple[Path, str, Path], fresh: Path, tmp_path: Path, over: int
) -> None:
    """Past its manifest a package may unpack to what the manifest lists, plus 64 MiB (a
    README), 1 KiB of tar framing per member, 20 KiB at its end and the 1 MiB read before
    the manifest was parsed. A PAX header of 66 MiB on the README fills that allowance: the
    stream one byte past it is refused as a bomb; one that meets it is read to its end (and
    fails on the object its manifest lists and it lacks)."""
    _, _, pkg = packaged
    members = read_members(pkg)
    i = next(i for i, (info, _) in enumerate(members) if info.name == "README.md")
    members[i][0].pax_headers = {"comment": "z" * (66 << 20)}

    def build(absent: int) -> tuple[Path, int]:
        m = manifest_of(members)
        objects = m["objects"]
        assert isinstance(objects, dict)
        objects[ABSENT] = absent
        m["total_size"] = sum(objects.values())
        out = tmp_path / f"stuffed-{absent}.ledgerpkg"
        write_members(out, with_manifest(members, m))
        cap = (1 << 20) + m["total_size"] + MIB64 + (len(objects) + 2) * 1024 + 20480
        return out, cap

    first, cap = build(1 << 20)
    size = _stream_size(first)
    # The absent object's size moves the cap, not the stream (its manifest line keeps its
    # length): the stream ends ``over`` bytes past the cap.
    stuffed, cap = build((1 << 20) + size - over - cap)
    assert _stream_size(stuffed) == size == cap + over
    before = snapshot(fresh / ".ledger")
    code, err = _import(fresh, stuffed)
    assert code == 2, err
    if over:
        assert f"unpacks to more than the {cap} bytes its manifest allows" in err, err
    else:
        assert "unpacks to more than" not in err and ABSENT_WORDS in err, err
    assert snapshot(fresh / ".ledger") == before


def test_a_member_type_tar_knows_but_a_package_never_holds_is_refused(
    packaged: tuple[Path, str, Path], fresh: Path, tmp_path: Path
) -> None:
    _, _, pkg = packaged
    members = read_members(pkg)
    fifo = tarfile.TarInfo(members[-1][0].name)
    fifo.type = tarfile.FIFOTYPE
    bad = tmp_path / "fifo.ledgerpkg"
    write_members(bad, [*members[:-1], (fifo, b"")])
    code, err = _import(fresh, bad)
    assert code == 2 and "is not a regular file" in err, err


@pytest.mark.parametrize("over", [0, 1])
def test_before_its_manifest_a_package_may_spend_64_mib_and_not_a_byte_more(
    packaged: tuple[Path, str, Path], fresh: Path, tmp_path: Path, over: int
) -> None:
    """A stream that is a PAX header and the manifest, its last byte the manifest's last, 64
    MiB long (the manifest is read, and the package then lacks its README) or one byte longer
    (refused as a bomb before the manifest is read)."""
    _, _, pkg = packaged
    manifest = read_members(pkg)[0]
    end = MIB64 + over

    def tar_bytes(pad: int, size: int) -> tuple[bytes, int]:
        info = tarfile.TarInfo("manifest.json")
        info.pax_headers = {"comment": "p" * pad}
        data = manifest[1] + b" " * (size - len(manifest[1]))
        raw = io.BytesIO()
        with tarfile.open(fileobj=raw, mode="w", format=tarfile.PAX_FORMAT) as tar:
            info.size = len(data)
            tar.addfile(info, io.BytesIO(data))
        with tarfile.open(fileobj=io.BytesIO(raw.getvalue()), mode="r") as tar:
            offset = tar.getmembers()[0].offset_data
        return raw.getvalue(), offset

    pad = MIB64 - (16 << 10)
    _, offset = tar_bytes(pad, len(manifest[1]))
    size = end - offset  # the manifest padded with spaces to end the stream at ``end``
    whole, again = tar_bytes(pad, size)
    assert again == offset and size >= len(manifest[1])
    stream = whole[:end]  # no end-of-archive blocks: the stream ends with the manifest
    assert len(stream) == end
    short = tmp_path / "short.ledgerpkg"
    short.write_bytes(zstandard.ZstdCompressor().compress(stream))
    code, err = _import(fresh, short)
    assert code == 2, err
    if over:
        assert f"unpacks to more than the {MIB64} bytes its manifest allows" in err, err
    else:
        assert "it has no README.md" in err, err
