"""A snapshot of files: relative paths, modes, sizes and object ids. Used for code snapshots,
untracked files, inputs and outputs."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field

from .base import Oid, Record
from .plain import safe_relpath  # no pydantic: `ledger record` checks paths with it

__all__ = ["Tree", "TreeEntry", "safe_relpath"]


SafePath = Annotated[str, AfterValidator(safe_relpath)]


class TreeEntry(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    path: SafePath
    type: Literal["file", "symlink"] = "file"
    executable: bool = False
    size: int = Field(ge=0)
    oid: Oid  # content (for a symlink: its target, as UTF-8 bytes)


class Tree(Record):
    KIND = "tree"
    SCHEMA = 1

    kind: Literal["tree"] = "tree"
    entries: list[TreeEntry]
    total_size: int = Field(ge=0)
    truncated: bool = False
    note: str = ""
