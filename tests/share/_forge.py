"""Taking a real package apart and putting a forged one together, as an attacker would:
every object still hashes to its name and the manifest lists them all, so only the door's
checks of what the objects *say* stand in the way."""

from __future__ import annotations

import io
import json
import tarfile
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import zstandard

from ledger._canonical import canonical_json, format_datetime
from ledger._hashing import hash_bytes
from ledger.store import Store


class Forge:
    def __init__(self, pkg: Path) -> None:
        with (
            open(pkg, "rb") as raw,
            zstandard.ZstdDecompressor().stream_reader(raw) as z,
            tarfile.open(fileobj=z, mode="r|") as tar,
        ):
            members = []
            for m in tar:
                f = tar.extractfile(m)
                assert f is not None
                members.append((m.name, f.read()))
        self.manifest: dict[str, Any] = json.loads(members[0][1])
        self.readme = members[1][1]
        self.objects = {"b3:" + name.rsplit("/", 1)[1]: data for name, data in members[2:]}

    @property
    def refs(self) -> dict[str, str]:
        refs: dict[str, str] = self.manifest["refs"]
        return refs

    def ref(self, prefix: str) -> tuple[str, str]:
        (found,) = [(n, o) for n, o in self.refs.items() if n.startswith(prefix)]
        return found

    def json(self, oid: str) -> Any:
        return json.loads(self.objects[oid])

    def put(self, data: bytes) -> str:
        oid = hash_bytes(data)
        self.objects[oid] = data
        return oid

    def put_json(self, value: Any) -> str:
        return self.put(canonical_json(value))

    def write(self, path: Path) -> Path:
        """The package with this manifest (sizes and total recomputed) and these objects."""
        m = dict(self.manifest)
        m["objects"] = {oid: len(data) for oid, data in sorted(self.objects.items())}
        m["total_size"] = sum(m["objects"].values())
        members = [("manifest.json", canonical_json(m)), ("README.md", self.readme)]
        members += [(f"objects/b3/{oid[3:]}", data) for oid, data in sorted(self.objects.items())]
        with (
            open(path, "wb") as raw,
            zstandard.ZstdCompressor().stream_writer(raw) as z,
            tarfile.open(fileobj=z, mode="w|", format=tarfile.PAX_FORMAT) as tar,
        ):
            for name, data in members:
                info = tarfile.TarInfo(name)
                info.size, info.mode = len(data), 0o444
                tar.addfile(info, io.BytesIO(data))
        return path

    def force_into(self, ledger: Path) -> None:
        """What an import without the door did: every object, then every ref, no questions."""
        store = Store.open(ledger)
        for data in self.objects.values():
            store.objects.put_bytes(data)
        origin = self.manifest["origin"]
        for name in sorted(self.refs, key=lambda n: (not n.startswith("sources/"), n)):
            # Past Store's own check of the move, as that import would have written it.
            now = format_datetime(datetime.now(UTC))
            store.log.append(
                op="import", ref=name, old=None, new=self.refs[name], time=now,
                origin=origin["ledger"], origin_head=origin["head"],
            )  # fmt: skip
            path = store.refs.path_of(name)
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(self.refs[name] + "\n")


def ledger_state(ledger: Path) -> tuple[list[tuple[str, str]], bytes]:
    """Refs and log bytes: what a refused import must leave exactly as they were."""
    store = Store.open(ledger)
    log = store.log.path.read_bytes() if store.log.path.exists() else b""
    return sorted(store.refs.iter()), log
