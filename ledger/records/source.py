"""A git commit carried inside the ledger, so a run's code can be rebuilt without its repository.

A code snapshot names its commit only by id; a reviewer on another machine has no repository
holding it. ``ledger export`` (and ``push``) store the commit's files as a Tree plus the raw
commit object, and point ``sources/git/<commit>`` at this record. Replay rebuilds the exact
commit from it: ``git write-tree`` must give ``git_tree`` and hashing ``raw_commit`` must give
``commit``, so the rebuilt code is checked by git's own ids as well as by BLAKE3.
"""

from __future__ import annotations

from typing import Literal

from pydantic import BaseModel, ConfigDict, Field

from .base import Oid, Record
from .tree import SafePath

__all__ = ["GitLink", "GitSource"]


class GitLink(BaseModel):
    """A submodule entry of the commit (mode 160000): only its commit id is part of the tree."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    path: SafePath
    commit: str


class GitSource(Record):
    KIND = "git-source"
    SCHEMA = 1

    kind: Literal["git-source"] = "git-source"
    commit: str  # the commit id, as the code snapshot names it
    object_format: Literal["sha1", "sha256"] = "sha1"
    git_tree: str  # the commit's tree id, which the rebuilt index must hash to
    raw_commit: Oid  # the commit object's bytes (`git cat-file commit`)
    tree: Oid  # a Tree of every file of the commit
    gitlinks: list[GitLink] = Field(default_factory=list)
