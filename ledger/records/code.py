"""The code a run ran: a git commit plus everything that differed from it, or a plain snapshot."""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from .base import Oid, Record
from .tree import SafePath

__all__ = ["CodeSnapshot", "PatchStats", "Submodule"]


class PatchStats(BaseModel):
    """Size of the stored patch, so a reader can judge it without fetching it."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    files: int = Field(ge=0)
    bytes: int = Field(ge=0)


class Submodule(BaseModel):
    """A submodule as it was checked out: its own commit, not only the superproject's gitlink."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    path: SafePath
    commit: str | None  # None: registered but never initialised (an empty directory)
    dirty: bool = False  # its own uncommitted changes are noted, not captured
    url: str | None = None  # redacted like remotes


class CodeSnapshot(Record):
    """Inside a repository: ``commit`` + ``patch`` + ``untracked`` rebuild the working tree.
    Outside one: ``snapshot`` holds the files under the working directory."""

    KIND = "code"
    SCHEMA = 1

    kind: Literal["code"] = "code"
    in_repo: bool
    root: str  # absolute path of the repository root (or cwd outside a repo); informational
    cwd_relpath: SafePath = "."  # where the command ran, relative to root
    object_format: Literal["sha1", "sha256"] = "sha1"
    commit: str | None = None  # None when the repository has no commits yet
    branch: str | None = None  # None when detached (or outside a repo)
    remotes: dict[str, str] = Field(default_factory=dict)  # name -> URL, credentials redacted
    dirty: bool = False  # anything differs from HEAD: tracked changes or untracked files
    patch: Oid | None = None  # `git diff --binary --full-index -M HEAD`; None when clean
    patch_stats: PatchStats | None = None
    untracked: Oid | None = None  # a Tree of untracked, not ignored files
    submodules: list[Submodule] = Field(default_factory=list)
    snapshot: Oid | None = None  # outside a repo: a Tree of the files under cwd
    truncated: bool = False  # a limit left files out; notes say which
    # "path:line" of each line replaced because it held a secret (patch and untracked files)
    redacted: list[str] = Field(default_factory=list)
    notes: list[str] = Field(default_factory=list)
