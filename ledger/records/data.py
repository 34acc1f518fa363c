"""Input data digests: what a run read, digested before launch and checked again after exit.

The directory digest rule lives in ``docs/reference/data-digests.md`` and ``listing_bytes``
below, so anyone can recompute it from a ``data-manifest`` without ledger.
"""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, PrivateAttr

from .base import Oid, Record

__all__ = [
    "DataManifest",
    "DvcInfo",
    "InputChange",
    "InputDigest",
    "ManifestEntry",
    "listing_bytes",
]


def _relpath(value: str) -> str:
    """Relative POSIX paths only; unlike ``safe_relpath`` a backslash is a legal name byte."""
    if (
        not value
        or value.startswith("/")
        or "\x00" in value
        or any(part in {"", ".", ".."} for part in value.split("/"))
    ):
        raise ValueError(f"unsafe path {value!r}: paths must be relative and stay inside")
    return value


RelPath = Annotated[str, AfterValidator(_relpath)]


class ManifestEntry(BaseModel):
    """One file, symlink or empty directory below a directory input."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    path: RelPath
    type: Literal["file", "symlink", "dir"] = "file"
    size: int = Field(ge=0)
    mode: int = Field(ge=0, description="permission bits (st_mode & 0o7777)")
    # BLAKE3 of the content (a symlink: of its target as UTF-8), equal to the store object id;
    # None for an empty directory.
    digest: Oid | None


def listing_bytes(entries: list[ManifestEntry]) -> bytes:
    """The canonical listing a directory digest hashes (docs/reference/data-digests.md).

    One line per entry, sorted by path (code point order = UTF-8 byte order):
    ``type NUL path NUL size NUL digest LF``; an empty directory has an empty digest field.
    """
    ordered = sorted(entries, key=lambda e: e.path)
    return b"".join(
        f"{e.type}\x00{e.path}\x00{e.size}\x00{e.digest or ''}\n".encode() for e in ordered
    )


class DataManifest(Record):
    """Every file below a directory input, so replay can restore each one by its digest."""

    KIND = "data-manifest"
    SCHEMA = 1

    kind: Literal["data-manifest"] = "data-manifest"
    dir_digest: Oid = Field(description="the directory digest: BLAKE3 of listing_bytes(entries)")
    n_files: int = Field(ge=0)
    n_bytes: int = Field(ge=0)
    entries: list[ManifestEntry]


class DvcInfo(BaseModel):
    """What DVC tracks for an input, in DVC's own hash, and whether the workspace still matches."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    repo_root: str
    source: str = Field(description="the .dvc file or dvc.lock that tracks it, repo-relative")
    hash_name: str = Field(description="DVC hash name: md5 (DVC 3) or md5-dos2unix (DVC 2)")
    md5: str | None = Field(description="as recorded by DVC; directories end in .dir")
    nfiles: int | None = None
    size: int | None = None
    workspace_md5: str = Field(description="DVC's hash of the data as it is now")
    workspace_nfiles: int | None = None
    workspace_size: int | None = None
    matches: bool = Field(description="the workspace data is what DVC recorded")


class InputDigest(BaseModel):
    """One ``--input`` of a run."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    path: str = Field(description="as given on the command line")
    abspath: str
    kind: Literal["file", "dir"]
    digest: Oid = Field(description="file: BLAKE3 of content; dir: BLAKE3 of the listing")
    n_files: int = Field(ge=0)
    n_bytes: int = Field(ge=0)
    mode: int | None = Field(default=None, description="file inputs: permission bits")
    files: Oid | None = Field(default=None, description="dirs: id of the data-manifest")
    dvc: DvcInfo | None = None

    # In-memory only: the manifest as JSON data (dirs), for store_inputs and recheck; or,
    # from a warm digest, what it is built from when asked (capture.data.manifest_data).
    _manifest: dict[str, Any] | None = PrivateAttr(default=None)
    _listing: tuple[Any, list[Any]] | None = PrivateAttr(default=None)


class InputChange(BaseModel):
    """An input that differs after the run from what it was at launch."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    path: str
    before: Oid
    after: Oid | None = Field(description="None: the input is gone or unreadable (see error)")
    error: str | None = Field(default=None, description="why the input could not be digested")
    added: list[str] = Field(default_factory=list)
    removed: list[str] = Field(default_factory=list)
    modified: list[str] = Field(default_factory=list)
    n_added: int = Field(default=0, ge=0)
    n_removed: int = Field(default=0, ge=0)
    n_modified: int = Field(default=0, ge=0)
    truncated: bool = Field(
        default=False, description="name lists were cut short; counts are exact"
    )
