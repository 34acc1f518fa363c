"""Compare what an original run and its replay produced: ``--output`` trees file by file,
captured logs (when asked), and the checkpoints each saved, paired by step."""

from __future__ import annotations

import os
import shutil
import tempfile
from pathlib import Path, PurePosixPath
from typing import TYPE_CHECKING, Any

from ..records.run import Run
from ..store import Store

if TYPE_CHECKING:
    from ..records.verdict_parts import FileComparison
    from .options import ReplayOptions

__all__ = ["compare_run_outputs", "compare_stdout", "path_roots"]


def _spellings(path: str) -> list[str]:
    """A path as written and as the file system resolves it (``/tmp`` may be a link)."""
    return list(dict.fromkeys((path, os.path.realpath(path))))


def path_roots(store: Store, original: Run, replay: Run) -> list[tuple[list[str], list[str]]]:
    """The original's working tree and the replay's workspace copy of it, as the pair that
    ``CompareSettings.path_roots`` takes: the repository root of each (the recorded working
    directory less the code's ``cwd_relpath``), each as written and resolved. Empty when a
    run has no readable contract (an imported run) or the two ran from the same place."""
    from ..errors import LedgerError
    from ..records.base import record_from_json
    from ..records.code import CodeSnapshot
    from ..records.contract import Contract

    roots: list[str] = []
    for run in (original, replay):
        if run.contract is None:
            return []
        try:
            contract = record_from_json(store.get_json(run.contract), Contract)
            code = record_from_json(store.get_json(contract.code), CodeSnapshot)
        except (LedgerError, ValueError):  # unreadable: compared as written, never guessed
            return []
        cwd = PurePosixPath(contract.cwd)
        depth = len(PurePosixPath(code.cwd_relpath).parts) if code.cwd_relpath != "." else 0
        if depth > len(cwd.parents):
            return []  # a cwd_relpath deeper than the cwd: nothing to map it by
        root = cwd.parents[depth - 1] if depth else cwd
        roots.append(str(root))
    if roots[0] == roots[1]:
        return []
    return [(_spellings(roots[0]), _spellings(roots[1]))]


def compare_run_outputs(
    store: Store,
    original: Run,
    replay: Run,
    opts: ReplayOptions,
    workdir: Path,
    resumed_at: int | None = None,
) -> list[dict[str, Any]]:
    """``resumed_at``: the step of the checkpoint a ``--from-checkpoint`` replay resumed from."""
    from ..records.verdict_parts import CompareSettings, ToleranceSpec
    from .compare import compare_checkpoint_steps, compare_objects, compare_trees

    settings = CompareSettings(
        mode="bitwise" if opts.mode == "bitwise" else "tolerance",
        rtol=opts.rtol,
        atol=opts.atol,
        overrides={k: ToleranceSpec(rtol=r, atol=a) for k, (r, a) in opts.per_metric.items()},
        include_logs=opts.include_logs,
        path_roots=path_roots(store, original, replay),
        shared_paths=_spellings(str(store.root)),
        skip_volatile=True,
        timing=list(opts.timing_metrics),
    )
    replayed = {o.path: o for o in replay.outputs}
    results: list[dict[str, Any]] = []
    for out in original.outputs:
        other = replayed.get(out.path)
        cmp = compare_trees(store, out.tree, other.tree if other else None, settings, workdir)
        # A file output's tree holds just that file, named as the output; a directory's files
        # are labelled below it (never by a substring test: `out` holds `layout.txt`).
        name = PurePosixPath(out.path).name
        single = len(cmp.files) == 1 and cmp.files[0].path == name
        for f in cmp.files:
            path = out.path if single else f"{out.path.rstrip('/')}/{f.path}"
            results.append(_row(f, path))
        results += _left_out(store, out.path, out.tree, other.tree if other else None)
    if opts.include_logs:
        for stream in ("stdout", "stderr"):
            a, b = getattr(original, stream), getattr(replay, stream)
            f = compare_objects(store, stream, a, b, settings, workdir)
            results.append(_row(f, f"<{stream}>"))
    saved = _saves(store, original)
    if resumed_at is not None:
        # A replay resumed at step k owes only the checkpoints after k; any it saved at or
        # before k stay in and show up as missing in the original (it did not resume).
        saved = {step: oid for step, oid in saved.items() if step > resumed_at}
    # Steps whose original checkpoint retention dropped and gc collected cannot be compared:
    # the replay's checkpoints of those steps are left out, not reported as extra.
    dropped = {e.step for e in original.checkpoints if e.event == "save"} - _saves(
        store, original
    ).keys()
    kept = {step: oid for step, oid in _saves(store, replay).items() if step not in dropped}
    for f in compare_checkpoint_steps(store, saved, kept, settings):
        results.append(_row(f, f.path))
    return results


def _left_out(
    store: Store, path: str, original: str | None, replay: str | None
) -> list[dict[str, Any]]:
    """A row per side whose capture of ``path`` left files out (a name that is not UTF-8, a
    file that could not be read, a FIFO, a link out of the folder: the tree's note names them):
    nothing vouches for those files, so the output is not comparable, never identical."""
    from ..records.verdict_parts import FileComparison

    rows = []
    for side, oid in (("original", original), ("replay", replay)):
        note = store.get_json(oid).get("note") if oid is not None else ""
        if note:
            reason = f"the {side}'s capture {note}: they were not compared"
            row = FileComparison(
                path=path, comparator="tree", status="not-comparable", reason=reason
            )
            rows.append(_row(row, f"{path} (files left out of the {side})"))
    return rows


# A captured stdout larger than this is compared as stored, without mapping the workspace path.
_MAPPED_MAX = 64 << 20


def compare_stdout(
    store: Store,
    original: Run,
    replay: Run,
    workdir: Path,
    paths: tuple[str, str] | None = None,
) -> dict[str, Any]:
    """The ``<stdout>`` row: the two captured stdouts line by line, exactly, in any mode
    (printed text has no tolerance). ``paths`` is (the replay's working directory, the
    original's): a replay runs in a workspace, so a path the program prints under its working
    directory is read as the original's before the lines are compared."""
    from ..records.verdict_parts import CompareSettings
    from .compare import compare_objects
    from .compare.logs import compare_log_files

    settings = CompareSettings(mode="bitwise", include_logs=True)
    f = compare_objects(store, "stdout", original.stdout, replay.stdout, settings, workdir)
    if f.status == "identical" or paths is None or original.stdout is None:
        return _row(f, "<stdout>")
    if replay.stdout is None:
        return _row(f, "<stdout>")
    a, b = _read_capped(store, original.stdout), _read_capped(store, replay.stdout)
    if a is None or b is None:
        return _row(f, "<stdout>")
    for ws in dict.fromkeys((paths[0], os.path.realpath(paths[0]))):
        b = b.replace(ws.encode(), paths[1].encode())
    scratch = Path(tempfile.mkdtemp(prefix="compare-", dir=workdir))
    try:
        (scratch / "a").mkdir()
        (scratch / "b").mkdir()
        (scratch / "a" / "stdout").write_bytes(a)
        (scratch / "b" / "stdout").write_bytes(b)
        mapped = compare_log_files(scratch / "a" / "stdout", scratch / "b" / "stdout", settings)
    finally:
        shutil.rmtree(scratch, ignore_errors=True)
    row = _row(mapped, "<stdout>")
    row["notes"] = [
        *row.get("notes", []),
        f"the replay's working directory {paths[0]} read as the original's {paths[1]}",
    ]
    return row


def _read_capped(store: Store, oid: str) -> bytes | None:
    with store.objects.open(oid) as f:
        data = f.read(_MAPPED_MAX + 1)
    return None if len(data) > _MAPPED_MAX else data


def _saves(store: Store, run: Run) -> dict[int, str]:
    """Step -> checkpoint id of every save the run recorded that is still stored (retention and
    gc may have removed older ones); a step saved twice: the last."""
    return {
        e.step: e.checkpoint_digest
        for e in run.checkpoints
        if e.event == "save" and e.step is not None and store.objects.has(e.checkpoint_digest)
    }


def _row(f: FileComparison, path: str) -> dict[str, Any]:
    row = f.model_dump(mode="json")
    row["path"] = path
    fd = f.first_difference
    row["detail"] = fd.model_dump(mode="json") if fd is not None else f.reason
    return row
