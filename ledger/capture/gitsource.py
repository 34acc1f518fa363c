"""Carry a commit inside the ledger (``records/source.py``) and rebuild it without its repository.

``store_git_source`` reads a commit from a repository into the store and points
``sources/git/<commit>`` at it; ``rebuild_from_source`` makes a one-commit repository in an
empty directory whose HEAD is that exact commit (its parents are marked shallow).

``check_git_source`` proves a carried commit end to end without git, by git's own ids: the raw
commit hashes to the commit id, the tree named inside it is ``git_tree``, and the tree made
from the stored entries and blobs hashes to that id. Import, pull, ``verify`` and replay run
it: a record that keeps a real commit but carries other files is refused everywhere.
"""

from __future__ import annotations

import hashlib
from pathlib import Path
from typing import Any

from .._hashing import CHUNK
from ..errors import LedgerError, ReplayError, UsageError
from ..records.base import record_from_json
from ..records.source import GitLink, GitSource
from ..records.tree import Tree, TreeEntry
from ..store import Store
from ..store.verify import Problem
from .gitsnap import run_git
from .trees import load_tree, put_tree, write_tree

__all__ = [
    "check_git_source",
    "check_git_sources",
    "find_git_source",
    "rebuild_from_source",
    "source_ref",
    "store_git_source",
]

_HEX_LEN = {"sha1": 40, "sha256": 64}


def source_ref(commit: str) -> str:
    return f"sources/git/{commit}"


def find_git_source(store: Store, commit: str) -> GitSource | None:
    """The stored source of ``commit``, or None."""
    oid = store.refs.get(source_ref(commit))
    if oid is None or not store.objects.has(oid):
        return None
    try:
        src = record_from_json(store.get_json(oid), GitSource)
    except (LedgerError, ValueError):
        return None
    return src


def _cat_batch(repo: Path, shas: list[str]) -> list[bytes]:
    """The contents of ``shas`` (blobs), in order, through one ``git cat-file --batch``."""
    if not shas:
        return []
    proc = run_git(repo, "cat-file", "--batch", input=("\n".join(shas) + "\n").encode())
    out, pos, contents = proc.stdout, 0, []
    for sha in shas:
        nl = out.index(b"\n", pos)
        header = out[pos:nl].split()
        if len(header) != 3 or header[1] == b"missing":
            raise UsageError(f"git object {sha} is missing from {repo}")
        size = int(header[2])
        contents.append(out[nl + 1 : nl + 1 + size])
        pos = nl + 1 + size + 1
    return contents


def build_git_source(store: Store, repo: Path, commit: str) -> GitSource:
    """Store the files and the commit object of ``commit`` from ``repo``; the record is not
    stored (``store_git_source`` does that and sets the ref)."""
    fmt = run_git(repo, "rev-parse", "--show-object-format", check=False).stdout.decode().strip()
    raw = run_git(repo, "cat-file", "commit", commit).stdout
    git_tree = run_git(repo, "rev-parse", f"{commit}^{{tree}}").stdout.decode().strip()
    listing = run_git(repo, "ls-tree", "-r", "-z", "--full-tree", commit).stdout
    files: list[tuple[str, str, str]] = []  # mode, sha, path
    links: list[GitLink] = []
    for item in filter(None, listing.split(b"\0")):
        meta, path_b = item.split(b"\t", 1)
        mode, kind, sha = meta.decode().split()
        path = path_b.decode("utf-8")
        if kind == "commit":
            links.append(GitLink(path=path, commit=sha))
        elif kind == "blob":
            files.append((mode, sha, path))
    contents = _cat_batch(repo, [sha for _, sha, _ in files])
    entries = []
    for (mode, _, path), data in zip(files, contents, strict=True):
        oid = store.objects.put_bytes(data)
        entries.append(
            TreeEntry(
                path=path,
                type="symlink" if mode == "120000" else "file",
                executable=mode == "100755",
                size=len(data),
                oid=oid,
            )
        )
    tree = Tree(entries=entries, total_size=sum(e.size for e in entries))
    return GitSource(
        commit=commit,
        object_format="sha256" if fmt == "sha256" else "sha1",
        git_tree=git_tree,
        raw_commit=store.objects.put_bytes(raw),
        tree=put_tree(store, tree),
        gitlinks=links,
    )


def store_git_source(store: Store, repo: Path, commit: str) -> str:
    """Carry ``commit`` in the store (once); returns the record id ``sources/git/<commit>``
    points at."""
    ref = source_ref(commit)
    have = store.refs.get(ref)
    if have is not None and store.objects.has(have):
        return have
    oid = store.put_json(build_git_source(store, repo, commit).to_json())
    store.set_ref(ref, oid, op="source")
    return oid


def _git_id(fmt: str, kind: bytes, parts: list[bytes] | None, size: int) -> Any:
    """A git object hasher primed with the header of a ``kind`` object of ``size`` bytes."""
    h = hashlib.new(fmt)
    h.update(kind + b" " + str(size).encode() + b"\0")
    for part in parts or []:
        h.update(part)
    return h


def _blob_id(store: Store, fmt: str, oid: str, size: int) -> bytes | None:
    """The git blob id of stored object ``oid`` if it holds ``size`` bytes; else None."""
    h, n = _git_id(fmt, b"blob", None, size), 0
    with store.objects.open(oid) as f:
        while chunk := f.read(CHUNK):
            h.update(chunk)
            n += len(chunk)
            if n > size:
                return None
    return h.digest() if n == size else None


def _tree_id(fmt: str, node: dict[str, Any]) -> bytes:
    """The git id of a nested ``{name: subtree | (mode, raw id)}``, entries in git's order
    (a subtree sorts as its name followed by '/')."""
    items = []
    for name, child in node.items():
        raw = name.encode()
        if isinstance(child, dict):
            items.append((raw + b"/", b"40000", raw, _tree_id(fmt, child)))
        else:
            items.append((raw, child[0], raw, child[1]))
    items.sort(key=lambda item: item[0])
    body = b"".join(mode + b" " + name + b"\0" + oid for _, mode, name, oid in items)
    return bytes(_git_id(fmt, b"tree", [body], len(body)).digest())


def _place(root: dict[str, Any], path: str, leaf: tuple[bytes, bytes]) -> str | None:
    """Put ``leaf`` at ``path`` in the nested tree; a problem if the path is taken."""
    *dirs, name = path.split("/")
    node = root
    for d in dirs:
        node = node.setdefault(d, {})
        if not isinstance(node, dict):
            return f"{path} lies under a file of the same commit"
    if name in node:
        return f"{path} appears twice"
    node[name] = leaf
    return None


def check_git_source(
    store: Store, src: GitSource, blob_ids: dict[str, bytes | None] | None = None
) -> list[str]:
    """What is wrong with the carried commit ``src`` (nothing: ``[]``), recomputing git's ids
    from the stored bytes: the raw commit must hash to ``src.commit`` and name ``src.git_tree``
    as its tree, and the stored entries and blobs must make that tree. ``blob_ids`` caches
    blob ids across calls (``verify`` checks many commits sharing files)."""
    fmt, hex_len = src.object_format, _HEX_LEN[src.object_format]
    for what, value in (("commit", src.commit), ("git_tree", src.git_tree)):
        if len(value) != hex_len or value.strip("0123456789abcdef"):
            return [f"its {what} {value!r} is not a {fmt} object id"]
    try:
        raw = store.objects.get_bytes(src.raw_commit)
        tree = load_tree(store, src.tree)
    except LedgerError as e:
        return [f"its raw commit or file tree cannot be read: {e.message}"]
    problems = []
    made = _git_id(fmt, b"commit", [raw], len(raw)).hexdigest()
    if made != src.commit:
        problems.append(f"its raw commit hashes to {made}, not {src.commit}")
    named = raw.split(b"\n", 1)[0]
    if named != b"tree " + src.git_tree.encode():
        shown = named[:80].decode("utf-8", "replace")
        problems.append(f"its raw commit names {shown!r}, but the record says tree {src.git_tree}")
    cache = {} if blob_ids is None else blob_ids
    root: dict[str, Any] = {}
    for entry in tree.entries:
        key = f"{entry.oid}:{entry.size}"
        if key not in cache:
            cache[key] = (
                _blob_id(store, fmt, entry.oid, entry.size)
                if store.objects.has(entry.oid)
                else None
            )
        blob = cache[key]
        if blob is None:
            problems.append(
                f"file {entry.path}: object {entry.oid} is missing or not {entry.size} bytes"
            )
            continue
        mode = (
            b"120000" if entry.type == "symlink" else b"100755" if entry.executable else b"100644"
        )
        if (clash := _place(root, entry.path, (mode, blob))) is not None:
            problems.append(f"file {clash}")
    for link in src.gitlinks:
        if len(link.commit) != hex_len or link.commit.strip("0123456789abcdef"):
            problems.append(f"submodule {link.path}: {link.commit!r} is not a commit id")
        elif (
            clash := _place(root, link.path, (b"160000", bytes.fromhex(link.commit)))
        ) is not None:
            problems.append(f"submodule {clash}")
    if not problems:
        files = _tree_id(fmt, root).hex()
        if files != src.git_tree:
            problems.append(
                f"its stored files make git tree {files}, not the commit's tree {src.git_tree}"
            )
    return problems


def check_git_sources(store: Store) -> list[Problem]:
    """``check_git_source`` for every ``sources/git/`` ref (``ledger verify``): one
    ``forged-source`` problem per carried commit that is not the commit it names."""
    out: list[Problem] = []
    cache: dict[str, bytes | None] = {}
    for name, _ in store.refs.iter("sources/git/"):
        try:
            oid = store.refs.get(name)
            if oid is None or not store.objects.has(oid):
                continue  # verify_store reports a ref to a missing object
            src = record_from_json(store.get_json(oid), GitSource)
        except (LedgerError, ValueError) as e:
            why = str(e).splitlines()[0] if str(e) else type(e).__name__
            out.append(Problem("forged-source", name, f"{name} is not a git-source record: {why}"))
            continue
        for p in check_git_source(store, src, cache):
            out.append(Problem("forged-source", name, f"{name}: {p}"))
    return out


def rebuild_from_source(src: GitSource, store: Store, dest: Path) -> None:
    """A repository in the empty directory ``dest`` whose detached HEAD is ``src.commit``
    and whose index and files are that commit's. The source is checked end to end first
    (``check_git_source``): nothing is written for a forged one."""
    problems = check_git_source(store, src)
    if problems:
        raise ReplayError(
            f"the carried source of commit {src.commit} is not that commit: {problems[0]}"
            + (f" (and {len(problems) - 1} more problem(s))" if len(problems) > 1 else ""),
            hint="the carried source is damaged or forged; import or pull it again from its "
            "author, or replay next to a clone of the repository",
        )
    tree = load_tree(store, src.tree)
    run_git(dest, "init", "--quiet", f"--object-format={src.object_format}", error=ReplayError)
    write_tree(tree, store, dest)
    run_git(dest, "add", "-A", "-f", error=ReplayError)
    for link in src.gitlinks:
        info = f"160000,{link.commit},{link.path}"
        run_git(dest, "update-index", "--add", "--cacheinfo", info, error=ReplayError)
    got_tree = run_git(dest, "write-tree", error=ReplayError).stdout.decode().strip()
    if got_tree != src.git_tree:
        raise ReplayError(
            f"the stored files of commit {src.commit} hash to git tree {got_tree}, "
            f"not {src.git_tree}",
            hint="the carried source is damaged; import or pull it again",
        )
    raw = store.objects.get_bytes(src.raw_commit)
    made = run_git(
        dest, "hash-object", "-t", "commit", "-w", "--stdin", input=raw, error=ReplayError
    )
    if made.stdout.decode().strip() != src.commit:
        raise ReplayError(
            f"the stored commit object hashes to {made.stdout.decode().strip()}, not {src.commit}",
            hint="the carried source is damaged; import or pull it again",
        )
    # Its parents are not here: mark the commit shallow, as `git clone --depth 1` does.
    git_dir = Path(run_git(dest, "rev-parse", "--absolute-git-dir").stdout.decode().strip())
    (git_dir / "shallow").write_text(src.commit + "\n")
    run_git(dest, "update-ref", "--no-deref", "HEAD", src.commit, error=ReplayError)
