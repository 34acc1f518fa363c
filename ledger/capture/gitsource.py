"""Carry a commit inside the ledger (``records/source.py``) and rebuild it without its repository.

``store_git_source`` reads a commit from a repository into the store and points
``sources/git/<commit>`` at it; ``rebuild_from_source`` makes a one-commit repository in an
empty directory whose HEAD is that exact commit (its parents are marked shallow).
"""

from __future__ import annotations

from pathlib import Path

from ..errors import LedgerError, ReplayError, UsageError
from ..records.base import record_from_json
from ..records.source import GitLink, GitSource
from ..records.tree import Tree, TreeEntry
from ..store import Store
from .gitsnap import run_git
from .trees import load_tree, put_tree, write_tree

__all__ = ["find_git_source", "rebuild_from_source", "source_ref", "store_git_source"]


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


def rebuild_from_source(src: GitSource, store: Store, dest: Path) -> None:
    """A repository in the empty directory ``dest`` whose detached HEAD is ``src.commit``
    and whose index and files are that commit's."""
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
