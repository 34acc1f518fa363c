"""Read runs out of MLflow through its own client (the only module that imports ``mlflow``).

Why the client and not a parser of ``mlruns/``: one code path reads every tracking URI MLflow
reads (a file store, ``sqlite:///mlflow.db`` and other databases, an ``http(s)://`` tracking
server), in every layout version MLflow wrote. Two things the client does not do are done
here before it is called:

- it opens a store by *creating* it: a file store gains ``.trash/`` and ``0/``, a sqlite path
  becomes a fresh database. So a path or ``sqlite:`` URI is first checked to be an existing
  MLflow store, and nothing is written to it;
- a file store's client logs and skips an experiment or run whose ``meta.yaml`` is damaged. So
  each ``meta.yaml`` in scope is parsed first, and any warning the client logs while reading
  stops the import: nothing is imported from a store read only in part.

And one thing the client does that is not wanted: it reads artifacts from wherever a run's
``artifact_uri`` points, and a store is data that anyone can write (``file:///home/u/.ssh``).
A local store's artifacts are read here, only from inside the store's own folder (the mlruns
folder, or the folder that holds the database), resolved first (no symlink leads out), never
from a hidden folder, with symlinks inside kept as links and only regular files read; a
tracking server's through the server, never from a local path it names. A run whose artifacts
are elsewhere is imported without them, and its notes say why.
"""

from __future__ import annotations

import contextlib
import logging
import os
import re
import sqlite3
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any
from urllib.parse import unquote, urlsplit, urlunsplit

from .._parse import ParseError, load_yaml
from ..errors import UsageError

__all__ = ["MlflowMetric", "MlflowRun", "MlflowSource", "read_runs", "resolve_source"]

_INSTALL_HINT = "install the MLflow client: pip install 'ledger-repro[mlflow]'"
_SQLITE_MAGIC = b"SQLite format 3\x00"


@dataclass
class MlflowSource:
    uri: str  # what the client opens
    shown: str  # the same, credentials removed: what the records and messages say
    file_store: Path | None = None  # a local file store's root
    # The only folder a local store's artifacts are read from; None: a server's, read through it
    artifact_root: Path | None = None


@dataclass
class MlflowMetric:
    key: str
    points: list[tuple[int, int, float]]  # step, timestamp (ms), value, in MLflow's order


@dataclass
class MlflowRun:
    run_id: str
    experiment_id: str
    experiment: str
    name: str | None
    status: str
    start_ms: int | None
    end_ms: int | None
    artifact_uri: str
    params: dict[str, str]
    tags: dict[str, str]
    metrics: list[MlflowMetric] = field(default_factory=list)
    artifacts: Path | None = None  # a folder holding the downloaded artifacts, or None
    artifacts_note: str | None = None  # why the artifacts were not read


def _without_credentials(uri: str) -> str:
    parts = urlsplit(uri)
    if parts.username is None and parts.password is None:
        return uri
    host = parts.hostname or ""
    netloc = host + (f":{parts.port}" if parts.port else "")
    return urlunsplit((parts.scheme, netloc, parts.path, parts.query, parts.fragment))


def _not_a_store(what: str, why: str) -> UsageError:
    return UsageError(
        f"{what} is not an MLflow store: {why}; nothing was imported",
        hint="pass the folder that holds MLflow's experiments (mlruns/, with 0/meta.yaml), "
        "an MLflow sqlite database, or a tracking URI (file:, sqlite:, http(s):)",
    )


def _check_sqlite(path: Path, shown: str) -> None:
    if not path.is_file():
        raise _not_a_store(shown, "no such database file")
    with open(path, "rb") as f:
        if f.read(16) != _SQLITE_MAGIC:
            raise _not_a_store(shown, "the file is not an SQLite database")
    try:
        con = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            tables = {r[0] for r in con.execute("SELECT name FROM sqlite_master")}
        finally:
            con.close()
    except sqlite3.Error as e:
        raise _not_a_store(shown, f"SQLite cannot read it ({e})") from None
    if not {"experiments", "runs"} <= tables:
        raise _not_a_store(shown, "the database has no MLflow experiments and runs tables")


def _check_file_store(root: Path, shown: str) -> None:
    if not root.is_dir():
        raise _not_a_store(shown, "no such folder" if not root.exists() else "not a folder")
    if not any(p.is_file() for p in root.glob("*/meta.yaml")):
        raise _not_a_store(shown, "no experiment folder with a meta.yaml in it")


def resolve_source(text: str) -> MlflowSource:
    """The store ``text`` names (a path or a tracking URI), checked to exist as an MLflow store
    when it is local. Nothing is created."""
    parts = urlsplit(text)
    scheme = parts.scheme.lower() if len(parts.scheme) > 1 else ""  # C:\ is not a scheme
    shown = _without_credentials(text)
    if scheme == "file":
        root = Path(unquote(parts.path))
        _check_file_store(root, shown)
        root = root.absolute()
        return MlflowSource(root.as_uri(), root.as_uri(), root, root)
    if scheme == "sqlite":
        # sqlite:///relative.db, sqlite:////absolute.db
        path = Path(unquote(parts.path)[1:]) if parts.path.startswith("/") else Path(parts.path)
        _check_sqlite(path, shown)
        return MlflowSource(text, shown, artifact_root=path.absolute().parent)
    if scheme:
        return MlflowSource(text, shown)  # a server or database only the client can reach
    path = Path(text)
    if path.is_file():
        with open(path, "rb") as f:
            if f.read(16) == _SQLITE_MAGIC:
                _check_sqlite(path, text)
                uri = "sqlite:///" + str(path.absolute())
                return MlflowSource(uri, uri, artifact_root=path.absolute().parent)
        raise _not_a_store(text, "a file that is not an SQLite database")
    _check_file_store(path, text)
    root = path.absolute()
    return MlflowSource(root.as_uri(), root.as_uri(), root, root)


def _check_meta(path: Path, keys: tuple[str, ...]) -> dict[str, Any]:
    try:
        value = load_yaml(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, ParseError) as e:
        raise _damaged(path, f"it cannot be read as YAML ({type(e).__name__})") from None
    if not isinstance(value, dict):
        raise _damaged(path, "it is not a YAML mapping")
    missing = [k for k in keys if k not in value and not (k == "run_id" and "run_uuid" in value)]
    if missing:
        raise _damaged(path, f"it lacks {', '.join(missing)}")
    return value


def _damaged(path: Path, why: str) -> UsageError:
    return UsageError(
        f"the MLflow store is damaged: {path}: {why}; nothing was imported",
        hint="repair or remove that experiment or run in MLflow, or leave it out with "
        "--experiment / --run-id",
    )


def _prescan(root: Path, experiments: list[str], run_ids: list[str]) -> set[str]:
    """Parse each ``meta.yaml`` the import will read: experiments always (their names decide
    what is in scope), runs of the experiments in scope. Returns the names of the folders that
    are not experiments (no ``meta.yaml``: e.g. ``models/``, or a database's artifacts)."""
    others = {
        p.name
        for p in root.iterdir()
        if p.is_dir() and not p.name.startswith(".") and not (p / "meta.yaml").exists()
    }
    for meta in sorted(root.glob("*/meta.yaml")):
        exp = _check_meta(meta, ("experiment_id", "name"))
        if experiments and not {str(exp["name"]), str(exp["experiment_id"])} & set(experiments):
            continue
        if str(exp.get("lifecycle_stage", "active")) != "active":
            continue
        for run_meta in sorted(meta.parent.glob("*/meta.yaml")):
            if run_ids and run_meta.parent.name not in run_ids:
                continue
            _check_meta(run_meta, ("run_id", "experiment_id", "status"))
    return others


class _Warnings(logging.Handler):
    """Collects what MLflow logs at WARNING or above while it reads."""

    def __init__(self, not_experiments: set[str]) -> None:
        super().__init__(logging.WARNING)
        self.messages: list[str] = []
        # Folders without a meta.yaml: not experiments (the prescan noted them), though the
        # file store client calls each "Malformed experiment".
        self.skip = {f"Malformed experiment '{name}'" for name in not_experiments}

    def emit(self, record: logging.LogRecord) -> None:
        if record.name != "root" and not record.name.startswith("mlflow"):
            return
        line = _scrub((record.getMessage().splitlines() or [""])[0])
        if not any(line.startswith(s) for s in self.skip):
            self.messages.append(line[:300])


@contextlib.contextmanager
def _client_env(not_experiments: set[str]) -> Iterator[_Warnings]:
    # MLflow 3 refuses a file store unless told to allow it; reading one to move away from it
    # is exactly what the opt-out is for. A server that does not answer fails fast.
    wanted = {
        "MLFLOW_ALLOW_FILE_STORE": "true",
        "MLFLOW_HTTP_REQUEST_MAX_RETRIES": os.environ.get("MLFLOW_HTTP_REQUEST_MAX_RETRIES", "0"),
        "MLFLOW_HTTP_REQUEST_TIMEOUT": os.environ.get("MLFLOW_HTTP_REQUEST_TIMEOUT", "20"),
        "MLFLOW_ENABLE_ARTIFACTS_PROGRESS_BAR": "false",
    }
    saved = {k: os.environ.get(k) for k in wanted}
    os.environ.update(wanted)
    handler = _Warnings(not_experiments)
    # MLflow logs some problems on the root logger (``logging.warning``): listen there.
    logger = logging.getLogger()
    logger.addHandler(handler)
    try:
        yield handler
    finally:
        logger.removeHandler(handler)
        for k, v in saved.items():
            if v is None:
                os.environ.pop(k, None)
            else:
                os.environ[k] = v


_USERINFO = re.compile(r"(?<=://)[^/@\s]+@")


def _scrub(text: str) -> str:
    """MLflow's messages repeat the URI they were given, password included: drop it."""
    return _USERINFO.sub("", text)


def _client_error(source: MlflowSource, e: Exception) -> UsageError:
    first = _scrub((str(e).strip().splitlines() or [type(e).__name__])[0][:400])
    return UsageError(
        f"cannot read MLflow at {source.shown}: {first}; nothing was imported",
        hint="check the tracking URI (and that the server is up), or pass the path of an "
        "mlruns/ folder or sqlite database",
    )


def read_runs(
    source: MlflowSource,
    experiments: list[str],
    run_ids: list[str],
    artifacts_dir: Path | None,
    wanted: Callable[[str, int | None], bool] = lambda run_id, start_ms: True,
) -> list[MlflowRun]:
    """Every active run in scope, oldest first, with full metric histories; artifacts are
    downloaded under ``artifacts_dir/<run id>/`` (not at all when it is None) for the runs
    ``wanted(mlflow run id, start ms)`` (not for those imported before)."""
    try:
        from mlflow.entities import ViewType
        from mlflow.tracking import MlflowClient
    except ImportError:
        raise UsageError("MLflow is not installed", hint=_INSTALL_HINT) from None
    others = set()
    if source.file_store is not None:
        others = _prescan(source.file_store, experiments, run_ids)
    with _client_env(others) as warned:
        try:
            runs = _read(
                MlflowClient(tracking_uri=source.uri),
                ViewType,
                experiments,
                run_ids,
                artifacts_dir,
                wanted,
                source.artifact_root,
            )
        except UsageError:
            raise
        except Exception as e:  # MlflowException, OSError, connection errors, SQL errors
            raise _client_error(source, e) from None
    if warned.messages:
        raise UsageError(
            f"MLflow reported problems while reading {source.shown}: {warned.messages[0]}"
            + (f" (and {len(warned.messages) - 1} more)" if len(warned.messages) > 1 else "")
            + "; nothing was imported",
            hint="repair the store in MLflow, or leave the damaged part out with "
            "--experiment / --run-id",
        )
    return runs


def _read(
    client: Any,
    view_type: Any,
    experiments: list[str],
    run_ids: list[str],
    artifacts_dir: Path | None,
    wanted: Callable[[str, int | None], bool],
    artifact_root: Path | None = None,
) -> list[MlflowRun]:
    all_exps = []
    token = None
    while True:
        page = client.search_experiments(view_type=view_type.ACTIVE_ONLY, page_token=token)
        all_exps += list(page)
        token = page.token
        if not token:
            break
    names = {e.experiment_id: e.name for e in all_exps}
    if experiments:
        chosen = [e for e in all_exps if e.name in experiments or e.experiment_id in experiments]
        unknown = [x for x in experiments if x not in names and x not in names.values()]
        if unknown:
            raise UsageError(
                f"no MLflow experiment {', '.join(map(repr, unknown))} in this store",
                hint="experiments here: "
                + (", ".join(repr(n) for n in sorted(names.values())) or "none"),
            )
    else:
        chosen = all_exps
    found = []
    if run_ids:
        allowed = {e.experiment_id for e in chosen}
        for rid in dict.fromkeys(run_ids):
            try:
                run = client.get_run(rid)
            except Exception:
                raise UsageError(
                    f"no MLflow run {rid!r} in this store",
                    hint="`mlflow runs list --experiment-id ID` lists the run ids",
                ) from None
            if run.info.experiment_id not in allowed:
                raise UsageError(
                    f"MLflow run {rid!r} is in experiment "
                    f"{names.get(run.info.experiment_id, run.info.experiment_id)!r}, "
                    "not in those given with --experiment",
                    hint="drop --experiment, or add that experiment",
                )
            found.append(run)
    else:
        for exp in chosen:
            token = None
            while True:
                page = client.search_runs(
                    [exp.experiment_id],
                    run_view_type=view_type.ACTIVE_ONLY,
                    max_results=1000,
                    order_by=["attributes.start_time ASC"],
                    page_token=token,
                )
                found += list(page)
                token = page.token
                if not token:
                    break
    out = []
    for run in found:
        info, data = run.info, run.data
        metrics = []
        if not wanted(info.run_id, info.start_time):
            out.append(_bare(info, data, names))
            continue
        for key in sorted(data.metrics):
            history = client.get_metric_history(info.run_id, key)
            points = [(int(m.step), int(m.timestamp), float(m.value)) for m in history]
            metrics.append(MlflowMetric(key, points))
        artifacts, why = None, None
        if artifacts_dir is not None:
            dest = artifacts_dir / info.run_id
            uri = info.artifact_uri or ""
            if artifact_root is not None:
                artifacts, why = _copy_local_artifacts(uri, artifact_root, dest)
            elif _local_path(uri) is not None:
                why = _refused(uri, "a tracking server's runs are read through the server")
            elif client.list_artifacts(info.run_id):
                artifacts = dest
                artifacts.mkdir(parents=True)
                client.download_artifacts(info.run_id, "", str(artifacts))
        out.append(
            MlflowRun(
                run_id=info.run_id,
                experiment_id=info.experiment_id,
                experiment=names.get(info.experiment_id, info.experiment_id),
                name=data.tags.get("mlflow.runName") or info.run_name or None,
                status=str(info.status),
                start_ms=info.start_time,
                end_ms=info.end_time,
                artifact_uri=_without_credentials(info.artifact_uri or ""),
                params=dict(data.params),
                tags=dict(data.tags),
                metrics=metrics,
                artifacts=artifacts,
                artifacts_note=why,
            )
        )
    out.sort(key=lambda r: (r.start_ms or 0, r.run_id))
    return out


def _bare(info: Any, data: Any, names: dict[str, str]) -> MlflowRun:
    """A run that is not wanted (already imported): what the report names, nothing read."""
    return MlflowRun(
        run_id=info.run_id,
        experiment_id=info.experiment_id,
        experiment=names.get(info.experiment_id, info.experiment_id),
        name=data.tags.get("mlflow.runName") or info.run_name or None,
        status=str(info.status),
        start_ms=info.start_time,
        end_ms=info.end_time,
        artifact_uri="",
        params={},
        tags={},
    )


# --- artifacts ---------------------------------------------------------------------------------


def _local_path(uri: str) -> Path | None:
    """The local folder an artifact URI names (``file:`` or a bare path), else None."""
    parts = urlsplit(uri)
    scheme = parts.scheme.lower() if len(parts.scheme) > 1 else ""  # C:\ is not a scheme
    if scheme == "file":
        return Path(unquote(parts.path))
    return None if scheme else Path(uri)


def _refused(uri: str, why: str) -> str:
    return (
        f"artifacts not imported: the run's artifact_uri {_without_credentials(uri)!r} was not "
        f"read ({why}); a store names any folder it likes, ~/.ssh included"
    )


def _copy_local_artifacts(uri: str, root: Path, dest: Path) -> tuple[Path | None, str | None]:
    """Copy the artifacts of a local store's run into ``dest``: only from inside ``root`` once
    every symlink on the way is resolved, never from a hidden folder (``.ssh``, ``.trash``).
    Returns the copy (None when there are no artifacts) and why nothing was read, if so."""
    path = _local_path(uri)
    if path is None:
        return None, _refused(uri, "a local store's artifacts are read only from inside it")
    if not path.is_absolute():
        path = root / path
    real, real_root = Path(os.path.realpath(path)), Path(os.path.realpath(root))
    if real != real_root and real_root not in real.parents:
        return None, _refused(uri, f"it lies outside the store's folder {root}")
    hidden = [p for p in real.relative_to(real_root).parts if p.startswith(".")]
    if hidden:
        return None, _refused(uri, f"it lies in the hidden folder {hidden[0]}")
    if not real.is_dir():
        return None, None  # no artifacts logged: MLflow makes the folder on the first
    copied = _copy_tree(real, dest)
    return (dest if copied else None), None


_READ = os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK | os.O_CLOEXEC


def _copy_tree(src: Path, dest: Path) -> int:
    """Regular files and symlinks (as links, never followed) below ``src``; sockets, FIFOs
    and devices are left out. Returns how many entries were copied."""
    import shutil
    import stat

    count = 0
    for here, dirs, files in os.walk(src, followlinks=False):
        rel = Path(here).relative_to(src)
        for name in [*files, *(d for d in dirs if os.path.islink(os.path.join(here, d)))]:
            full = os.path.join(here, name)
            target = dest / rel / name
            target.parent.mkdir(parents=True, exist_ok=True)
            if os.path.islink(full):
                os.symlink(os.readlink(full), target)
                count += 1
                continue
            try:
                fd = os.open(full, _READ)
            except OSError:
                continue  # gone, or a symlink swapped in: not read
            with os.fdopen(fd, "rb") as f:
                if not stat.S_ISREG(os.fstat(f.fileno()).st_mode):
                    continue
                with open(target, "xb") as out:
                    shutil.copyfileobj(f, out)
            count += 1
    return count
