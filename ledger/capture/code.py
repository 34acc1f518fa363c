"""Freeze the code of a run: commit + binary-safe patch + untracked files, or a plain snapshot.

``snapshot_code`` runs before launch; ``materialize_code`` (in ``materialize.py``) rebuilds the
same files for ``ledger replay``. Everything left out is said in ``CodeSnapshot.notes``.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._canonical import canonical_json
from .._hashing import hash_bytes
from ..errors import UsageError
from ..records.plain import plain
from ..store import Store
from . import gitsnap
from .boundary import for_store, holds_secret
from .materialize import materialize_code
from .secrets import (
    HUNK_HEADER,
    MAX_DETECT_BYTES,
    SECRET_NAME,
    Finding,
    Scrubber,
    redact_lines,
    redact_patch,
    skipped_secret_file,
)
from .trees import build_tree_json, describe, put_tree

if TYPE_CHECKING:
    from ..records.code import CodeSnapshot

__all__ = [
    "code_digest",
    "materialize_code",
    "require_clean",
    "snapshot_code",
    "snapshot_code_json",
]

MAX_FILES = 2000
MAX_BYTES = 200 << 20
LEDGER_DIR = ".ledger"
# Never part of a plain snapshot: VCS metadata, caches, the ledger itself.
SKIP_DIRS = frozenset(
    {
        LEDGER_DIR,
        ".git",
        ".hg",
        ".svn",
        "__pycache__",
        ".mypy_cache",
        ".pytest_cache",
        ".ruff_cache",
        ".tox",
        ".nox",
    }
)


def snapshot_code(
    cwd: Path,
    store: Store,
    *,
    max_files: int = MAX_FILES,
    max_bytes: int = MAX_BYTES,
    scrubber: Scrubber | None = None,
) -> CodeSnapshot:
    """Record the code ``cwd`` runs: inside git, HEAD plus everything that differs from it;
    outside, the files under ``cwd`` within ``max_files`` / ``max_bytes``.

    With a ``scrubber``, secrets are redacted from the patch and the untracked files (known
    values, and lines the detector flags), and credential files (``.env``...) are left out;
    ``redacted`` and ``notes`` say where."""
    from ..records.code import CodeSnapshot

    snap = snapshot_code_json(
        cwd, store, max_files=max_files, max_bytes=max_bytes, scrubber=scrubber
    )
    return CodeSnapshot.model_validate(snap)


def snapshot_code_json(
    cwd: Path,
    store: Store,
    *,
    max_files: int = MAX_FILES,
    max_bytes: int = MAX_BYTES,
    scrubber: Scrubber | None = None,
) -> dict[str, Any]:
    """``snapshot_code``'s record as JSON, without pydantic (ledger/records/plain.py)."""
    cwd = Path(cwd).resolve()
    if not cwd.is_dir():
        raise UsageError(f"cannot capture code: {cwd} is not a directory")
    repo = gitsnap.open_repo(cwd)
    if repo is None:
        return _snapshot_plain(cwd, store, max_files, max_bytes, scrubber)
    try:
        root = Path(str(repo.working_tree_dir)).resolve()
        info = gitsnap.head_info(repo, root)
    finally:
        repo.close()
    notes: list[str] = []

    base = info.commit or gitsnap.empty_tree(root)
    patch_oid, stats = None, None
    store.tmp_dir.mkdir(parents=True, exist_ok=True)
    fd, name = tempfile.mkstemp(prefix="code-", suffix=".patch", dir=store.tmp_dir)
    os.close(fd)
    tmp = Path(name)
    findings: list[Finding] = []
    try:
        pf = gitsnap.write_patch(root, base, tmp)
        if pf.size:
            size = pf.size
            if scrubber is not None:
                data = scrubber.scrub(tmp.read_bytes(), "the code patch")
                data, findings = redact_patch(data, scrubber.memo)
                tmp.write_bytes(data)
                size = len(data)
            patch_oid = store.objects.put_file(tmp)
            stats = plain("patch_stats", files=pf.files, bytes=size)
    finally:
        tmp.unlink(missing_ok=True)

    made = made_inside(root, store)
    untracked = _untracked_outside_ledger(root, store, notes, [m for m, d in made if d])
    made += marked_folders(untracked)
    paths = _exclude_made(_exclude_ledger(root, untracked, store, notes), made, notes)
    if scrubber is not None:
        paths = _skip_secret_names(paths, scrubber, notes)
        paths = _skip_secret_files(paths, notes)
    nested = [p for p in paths if p.endswith("/")]
    if nested:
        notes.append(describe("nested git repositories, not captured", nested))
    paths = [p for p in paths if not p.endswith("/")]
    in_patch = len(findings)
    untracked_oid, truncated = _store_files(
        root, paths, store, max_files, max_bytes, notes, _redactor(scrubber, findings, notes)
    )
    _note_findings(findings, notes, in_patch)
    submodules = _submodules(root, notes)
    dirty = bool(patch_oid or paths or nested or any(s["dirty"] for s in submodules))
    return plain(
        "code",
        in_repo=True,
        root=str(root),
        cwd_relpath=cwd.relative_to(root).as_posix(),
        object_format="sha256" if info.object_format == "sha256" else "sha1",
        commit=info.commit,
        branch=info.branch,
        remotes=info.remotes if scrubber is None else for_store("json", info.remotes, scrubber),
        dirty=dirty,
        patch=patch_oid,
        patch_stats=stats,
        untracked=untracked_oid,
        submodules=submodules,
        truncated=truncated,
        redacted=[f"{f.where}:{f.line}" for f in findings if not f.kept],
        notes=notes if scrubber is None else [for_store("text", n, scrubber) for n in notes],
    )


def _note_findings(findings: list[Finding], notes: list[str], untracked_from: int) -> None:
    """Notes on what was redacted; ``findings[untracked_from:]`` are lines of files written
    whole at replay (untracked files, or the snapshot outside git), which replay refuses."""
    whole = [f.describe() for f in findings[untracked_from:]]
    findings = findings[:untracked_from]
    if whole:
        notes.append(
            describe(
                "secrets redacted in untracked files; replay cannot rebuild them and refuses "
                "to run (keep secrets out of the working tree)",
                whole,
            )
        )
    named = [f for f in findings if f.where == SECRET_NAME]
    if named:
        notes.append(
            f"tracked files whose names hold a secret: their changes were left out of the "
            f"stored patch ({len(named)}); replay runs them as committed"
        )
    headers = [f.describe() for f in findings if f.kind.endswith(HUNK_HEADER)]
    if headers:
        notes.append(
            describe(
                "secrets dropped from the stored patch's hunk headers (git ignores them)", headers
            )
        )
    lines = [
        f.describe()
        for f in findings
        if f.where != SECRET_NAME and not f.kind.endswith(HUNK_HEADER)
    ]
    if lines:
        notes.append(
            describe(
                "secrets redacted in the stored code; replay writes these lines differently",
                lines,
            )
        )


def _skip_secret_names(paths: list[str], scrubber: Scrubber, notes: list[str]) -> list[str]:
    """Leave out the files whose *name* holds a secret: stored under another name they would
    be another file, and the note does not name them (``ledger.capture.boundary``)."""
    kept = [p for p in paths if not holds_secret(p, scrubber)]
    if len(kept) < len(paths):
        notes.append(
            f"untracked files whose names hold a secret, never captured: {len(paths) - len(kept)}"
        )
    return kept


def _skip_secret_files(paths: list[str], notes: list[str]) -> list[str]:
    """Leave out credential files (``.env``...), naming them in the notes."""
    skipped = [p for p in paths if not p.endswith("/") and skipped_secret_file(p)]
    if skipped:
        what = "credential files, never captured (LEDGER_SECRET_FILES sets the patterns)"
        notes.append(describe(what, skipped))
    return [p for p in paths if p not in skipped]


def _redactor(
    scrubber: Scrubber | None, findings: list[Finding], notes: list[str]
) -> Callable[[str, bytes], bytes] | None:
    """What ``build_tree`` stores of each file: known values scrubbed, flagged lines replaced
    (files over ``MAX_DETECT_BYTES`` are only scrubbed, and named in the notes)."""
    if scrubber is None:
        return None
    unscanned: list[str] = []

    def redact(path: str, data: bytes) -> bytes:
        data = scrubber.scrub(data, path)
        if len(data) > MAX_DETECT_BYTES:
            unscanned.append(path)
            if len(unscanned) == 1:
                notes.append(
                    f"untracked files over {MAX_DETECT_BYTES:,} bytes were not scanned for "
                    "secrets line by line (the values known at launch were scrubbed)"
                )
            return data
        data, found = redact_lines(data, path)
        findings.extend(found)
        return data

    return redact


def made_inside(root: Path, store: Store | None) -> list[tuple[str, bool]]:
    """What ledger wrote inside ``root`` (``ledger.store.made``): (path relative to ``root``,
    is a folder)."""
    if store is None:
        return []
    from ..store.made import made_paths

    out = []
    real_root = os.path.realpath(root)
    for m in made_paths(store.root):
        full = os.path.realpath(m.path)
        if full != real_root and full.startswith(real_root.rstrip("/") + "/"):
            out.append((os.path.relpath(full, real_root).replace(os.sep, "/"), m.is_dir))
    return out


def marked_folders(paths: list[str]) -> list[tuple[str, bool]]:
    """Folders that hold a ledger writer's marker (a report site, a path remote) among the
    relative ``paths``: ledger's output wherever they are (``ledger.store.made``)."""
    from ..store.made import FOLDER_MARKERS

    out = []
    for p in paths:
        folder, _, name = p.rpartition("/")
        if folder and name in FOLDER_MARKERS:
            out.append((folder, True))
    return out


def _is_made(path: str, made: list[tuple[str, bool]]) -> bool:
    path = path.rstrip("/")
    return any(path == m or (is_dir and path.startswith(m + "/")) for m, is_dir in made)


def _exclude_made(paths: list[str], made: list[tuple[str, bool]], notes: list[str]) -> list[str]:
    """Leave out what ledger wrote (report sites, HTML reports, packages, path remotes): its
    output, not the project's code. The note names them once per folder or file."""
    if not made:
        return paths
    kept = [p for p in paths if not _is_made(p, made)]
    notes.append(
        describe(
            "written by ledger (reports, packages, path remotes), not captured as code",
            [m + ("/" if is_dir else "") for m, is_dir in sorted(made)],
        )
    )
    return kept


def _untracked_outside_ledger(
    root: Path, store: Store, notes: list[str], skip_dirs: Sequence[str] = ()
) -> list[str]:
    """Untracked paths, with git told not to walk the ledger's directory (nor ``skip_dirs``):
    a ledger inside the tree and not ignored would otherwise be listed file by file before
    every launch, and so would a path remote."""
    skip = [LEDGER_DIR, *skip_dirs]
    try:
        inside = store.root.resolve().relative_to(root)
    except ValueError:
        inside = None
    if inside is not None and inside.parts and LEDGER_DIR not in inside.parts:
        skip.append(inside.as_posix())
    paths = gitsnap.untracked_paths(root, skip_dirs=skip)
    if inside is not None and inside.parts and not gitsnap.is_ignored(root, inside.as_posix()):
        notes.append(LEDGER_NOT_IGNORED)
    return paths


LEDGER_NOT_IGNORED = "the ledger's own directory is never captured (add .ledger/ to .gitignore)"


def _exclude_ledger(root: Path, paths: list[str], store: Store, notes: list[str]) -> list[str]:
    """Drop the ledger's own files, wherever it lives inside the tree."""
    store_root = store.root.resolve()
    kept = []
    dropped = False
    for p in paths:
        # The name test first: resolving every path of a ledger that is not ignored (its
        # objects pile up run after run) cost a realpath walk each, before every launch.
        if LEDGER_DIR in p.rstrip("/").split("/"):
            dropped = True
            continue
        full = (root / p.rstrip("/")).resolve()
        if full == store_root or store_root in full.parents:
            dropped = True
            continue
        kept.append(p)
    if dropped and LEDGER_NOT_IGNORED not in notes:
        notes.append(LEDGER_NOT_IGNORED)
    return kept


def _store_files(
    base: Path,
    paths: list[str],
    store: Store,
    max_files: int,
    max_bytes: int,
    notes: list[str],
    transform: Callable[[str, bytes], bytes] | None = None,
) -> tuple[str | None, bool]:
    """Store ``paths`` as a Tree within the limits; returns (tree id or None, truncated)."""
    kept: list[str] = []
    too_big: list[str] = []
    too_many: list[str] = []
    total = 0
    for rel in sorted(paths):
        try:
            size = os.lstat(base / rel).st_size
        except OSError:
            size = 0  # build_tree notes it if it is really gone
        if len(kept) >= max_files:
            too_many.append(rel)
        elif total + size > max_bytes:
            too_big.append(f"{rel} ({size:,} bytes)")
        else:
            kept.append(rel)
            total += size
    limits: list[str] = []
    if too_big:
        limits.append(describe(f"skipped, over the {max_bytes:,}-byte limit", too_big))
    if too_many:
        limits.append(describe(f"skipped, over the {max_files:,}-file limit", too_many))
    notes.extend(limits)
    truncated = bool(limits)
    if not kept:
        return None, truncated
    tree = build_tree_json(base, kept, store, transform)
    if tree["note"]:
        notes.append(tree["note"])
    if truncated:
        tree["note"] = "; ".join([*limits, tree["note"]] if tree["note"] else limits)
        tree["truncated"] = True
    return (put_tree(store, tree) if tree["entries"] else None), truncated


def _submodules(root: Path, notes: list[str]) -> list[dict[str, Any]]:
    links = gitsnap.gitlinks(root)
    if not links:
        return []
    urls: dict[str, str] = {}
    if (root / ".gitmodules").is_file():
        out = gitsnap.run_git(
            root,
            "config",
            "-f",
            ".gitmodules",
            "--get-regexp",
            r"^submodule\..*\.(path|url)$",
            check=False,
        ).stdout.decode("utf-8", "replace")
        by_name: dict[str, dict[str, str]] = {}
        for line in out.splitlines():
            key, _, value = line.partition(" ")
            name, _, field = key[len("submodule.") :].rpartition(".")
            by_name.setdefault(name, {})[field] = value
        urls = {d["path"]: d["url"] for d in by_name.values() if "path" in d and "url" in d}
    subs: list[dict[str, Any]] = []
    for path, recorded in sorted(links.items()):
        url = gitsnap.redact_url(urls[path]) if path in urls else None
        sub_root = root / path
        if not (sub_root / ".git").exists():
            subs.append(plain("submodule", path=path, commit=None, url=url))
            notes.append(f"submodule {path} is not initialised; replay leaves it empty")
            continue
        head = gitsnap.run_git(sub_root, "rev-parse", "HEAD").stdout.decode().strip()
        changed = gitsnap.dirty_paths(sub_root)
        if changed:
            notes.append(
                f"submodule {path} has uncommitted changes that are not captured "
                f"({len(changed)} files); commit them inside the submodule to record them"
            )
        if head != recorded:
            notes.append(f"submodule {path} is checked out at {head}, not at {recorded}")
        dirty = bool(changed) or head != recorded
        subs.append(plain("submodule", path=path, commit=head, dirty=dirty, url=url))
    return subs


def _is_virtualenv(path: Path) -> bool:
    return (path / "pyvenv.cfg").is_file() or (path / "conda-meta").is_dir()


def _snapshot_plain(
    cwd: Path, store: Store, max_files: int, max_bytes: int, scrubber: Scrubber | None = None
) -> dict[str, Any]:
    """Outside git: a Tree of the files under ``cwd``; the walk stops once the limit is hit."""
    notes: list[str] = ["not inside a git repository: the files under the directory were copied"]
    store_root = store.root.resolve()
    made = made_inside(cwd, store)
    paths: list[str] = []
    venvs: list[str] = []
    unreadable: list[str] = []
    stopped = False

    def onerror(err: OSError) -> None:
        unreadable.append(str(err.filename))

    for dirpath, dirnames, filenames in os.walk(cwd, onerror=onerror):
        here = Path(dirpath)
        rel_here = here.relative_to(cwd)
        keep = []
        for d in sorted(dirnames):
            full = here / d
            if full.is_symlink():
                filenames.append(d)
            elif d in SKIP_DIRS or full == store_root or _is_made((rel_here / d).as_posix(), made):
                continue
            elif _is_virtualenv(full):
                venvs.append((rel_here / d).as_posix())
            else:
                keep.append(d)
        dirnames[:] = keep
        for name in sorted(filenames):
            paths.append((rel_here / name).as_posix())
        if len(paths) > max_files:
            stopped = True
            break
    if venvs:
        notes.append(describe("virtual environments, not captured", venvs))
    if unreadable:
        notes.append(describe("unreadable directories, not captured", unreadable))
    if stopped:
        notes.append(
            f"stopped walking {cwd} after {max_files:,} files; the rest was not captured "
            "(run inside a git repository, or from a smaller directory)"
        )
    paths = _exclude_made(paths, made + marked_folders(paths), notes)
    if scrubber is not None:
        paths = _skip_secret_names(paths, scrubber, notes)
        paths = _skip_secret_files(paths, notes)
    findings: list[Finding] = []
    tree_oid, truncated = _store_files(
        cwd, paths, store, max_files, max_bytes, notes, _redactor(scrubber, findings, notes)
    )
    _note_findings(findings, notes, 0)
    if scrubber is not None:
        notes = [for_store("text", n, scrubber, "the code record") for n in notes]
    return plain(
        "code",
        in_repo=False,
        root=str(cwd),
        cwd_relpath=".",
        snapshot=tree_oid,
        truncated=truncated or stopped,
        redacted=[f"{f.where}:{f.line}" for f in findings if not f.kept],
        notes=notes,
    )


def code_digest(snapshot: CodeSnapshot | dict[str, Any]) -> str:
    """An id of the exact code: equal digests mean byte-identical trees to run."""
    snap = snapshot if isinstance(snapshot, dict) else snapshot.to_json()
    ident = {
        "commit": snap["commit"],
        "patch": snap["patch"],
        "untracked": snap["untracked"],
        "snapshot": snap["snapshot"],
        "submodules": [[s["path"], s["commit"]] for s in snap["submodules"]],
    }
    return hash_bytes(canonical_json(ident))


def require_clean(cwd: Path, store: Store | None = None) -> None:
    """For ``--require-clean``: refuse to start unless the tree matches HEAD exactly (what
    the ledger in ``store`` wrote inside the tree, and the ledger itself, do not count)."""
    cwd = Path(cwd).resolve()
    repo = gitsnap.open_repo(cwd)
    if repo is None:
        raise UsageError(
            f"--require-clean needs a git repository, and {cwd} is not inside one",
            hint="run from a git checkout, or drop --require-clean",
        )
    try:
        root = Path(str(repo.working_tree_dir)).resolve()
    finally:
        repo.close()
    has_commit = gitsnap.run_git(root, "rev-parse", "--verify", "--quiet", "HEAD", check=False)
    if has_commit.returncode != 0:
        raise UsageError(
            f"--require-clean: the repository at {root} has no commits yet",
            hint="commit your code first, or drop --require-clean",
        )
    dirty = gitsnap.dirty_paths(root)
    untracked = [line.split(" ", 1)[1] for line in dirty if line.startswith("??")]
    made = made_inside(root, store) + marked_folders(untracked)
    changed = [
        line
        for line in dirty
        if LEDGER_DIR not in line.split(" ", 1)[1].split("/")
        and not (line.startswith("??") and _is_made(line.split(" ", 1)[1], made))
    ]
    if changed:
        raise UsageError(
            describe(f"--require-clean: the working tree at {root} is not clean", changed),
            hint="commit or stash these changes (or add untracked files to .gitignore), "
            "or drop --require-clean",
        )
