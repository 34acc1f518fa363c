"""Remotes: a folder (local or network path, or ``s3://bucket/prefix`` with ``s3fs``) that
ledgers push runs to and pull runs from, with no server of our own (docs/format.md, "Remotes").

Layout under the remote's root::

    ledgerremote.json             {"format": "ledger-remote", "version": 1}
    objects/b3/<2 hex>/<62 hex>   an object's content (its BLAKE3 is its name), written once
    origins/<ledger id>.json      one pushing ledger's refs and chain head; only it writes it
    tmp/                          uploads in progress

Objects are content-addressed and never change, so two ledgers pushing at once cannot lose
each other's objects; each ledger writes only its own ``origins/`` file, so they cannot lose
each other's refs. An object becomes visible only once complete and its hash checked
(``Remote.writing``): on a path it is written under ``tmp/`` and renamed into place; on S3,
which shows an object only once its upload completes, it is uploaded to its own key and the
upload completed only then (aborted otherwise: no copy out of ``tmp/`` on the server). The
``origins/`` file is written after every object it names is in place. A push killed at any
point leaves at most unnamed objects, temp files and unfinished uploads (which a later push
removes once a day old); run again, it completes.
Names are kept in the ledger's ``config.json`` (``remotes``, and ``default_remote``);
credentials never are: s3fs reads them from the standard AWS environment and config files.

Every command that takes a remote resolves it with ``remote_url``: a configured name, or a
location written as one (``./x``, ``../x``, ``/x``, ``~/x``, ``scheme://``); a bare word that
is neither is refused, never taken as a folder to create (``ledger push teem`` once made
``teem/`` here). No remote given means the default one, or the only one.
"""

from __future__ import annotations

import contextlib
import datetime
import errno
import os
import threading
import time
import uuid
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import TYPE_CHECKING, Any, BinaryIO, Protocol

from .._canonical import canonical_json, parse_json
from .._hashing import ALGO_PREFIX, OID_RE
from ..errors import FormatVersionError, LedgerAccessError, UsageError
from ..store import Store
from ..store.atomic import atomic_write_bytes
from ..store.repo import MAX_CONFIG
from ..store.safe_read import NotRegularError, read_regular
from .path_fs import PathFS

if TYPE_CHECKING:
    from .s3_get import DirectGets

__all__ = [
    "REMOTE_VERSION",
    "ObjectReader",
    "Remote",
    "add_remote",
    "default_remote",
    "is_explicit_location",
    "list_remotes",
    "open_remote",
    "remote_url",
    "remove_remote",
    "set_default_remote",
]

REMOTE_FORMAT = "ledger-remote"
REMOTE_VERSION = 1
# The remote's own small files: its marker, and one origin's refs table (a ref is ~100 bytes).
MAX_MARKER = 1 << 16
MAX_ORIGIN = 256 << 20
DEFAULT_KEY = "default_remote"  # in config.json: the remote push / pull use when given none
_NAME_OK = set("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789_-.")


# -- names in the ledger's config ----------------------------------------------------------------
def _backend_errors() -> tuple[type[BaseException], ...]:
    """What a remote's filesystem raises when it cannot be reached: ``OSError`` for paths and
    for most s3fs failures, and botocore's own errors (a refused connection, missing
    credentials, a bad endpoint) that s3fs lets through untranslated."""
    errors: list[type[BaseException]] = [OSError]
    try:
        from botocore.exceptions import BotoCoreError
    except ImportError:
        pass
    else:
        errors.append(BotoCoreError)
    return tuple(errors)


def _update_remotes(
    store: Store,
    change: Callable[[dict[str, str]], None],
    then: Callable[[dict[str, Any]], None] | None = None,
) -> None:
    """Re-read ``config.json`` under a lock, apply ``change`` to its remotes (and ``then`` to
    the whole config), write it back."""
    with store.lock("config"):
        config = parse_json(read_regular(store.root / "config.json", MAX_CONFIG))
        remotes = config.get("remotes")
        remotes = dict(remotes) if isinstance(remotes, dict) else {}
        change(remotes)
        config["remotes"] = remotes
        if then is not None:
            then(config)
        data = canonical_json(config) + b"\n"
        atomic_write_bytes(store.root / "config.json", data, store.tmp_dir)
        store.config = config


def list_remotes(store: Store) -> dict[str, str]:
    found = store.config.get("remotes")
    return dict(found) if isinstance(found, dict) else {}


def add_remote(store: Store, name: str, url: str) -> None:
    if not name or not set(name) <= _NAME_OK or name.startswith("."):
        raise UsageError(f"invalid remote name {name!r}", hint="use letters, digits, '_', '-', '.'")
    if "@" in url.split("://", 1)[-1].split("/", 1)[0]:
        raise UsageError(
            "the remote URL holds credentials; they are never stored in the ledger",
            hint="use the standard AWS environment variables or ~/.aws/credentials",
        )
    if "://" not in url:
        url = str(Path(url).expanduser().absolute())

    def change(remotes: dict[str, str]) -> None:
        if name in remotes:
            raise UsageError(
                f"remote {name} already exists ({remotes[name]})",
                hint=f"`ledger remote remove {name}` first",
            )
        remotes[name] = url

    _update_remotes(store, change)


def remove_remote(store: Store, name: str) -> None:
    """Forget ``name``; if it was the default remote, there is no default afterwards."""

    def change(remotes: dict[str, str]) -> None:
        if name not in remotes:
            raise UsageError(f"no remote {name}", hint="`ledger remote list` lists them")
        del remotes[name]

    def unset(config: dict[str, Any]) -> None:
        if config.get(DEFAULT_KEY) == name:
            del config[DEFAULT_KEY]

    _update_remotes(store, change, unset)


def default_remote(store: Store) -> str | None:
    """The name set by ``ledger remote default NAME``, if any."""
    found = store.config.get(DEFAULT_KEY)
    return found if isinstance(found, str) else None


def set_default_remote(store: Store, name: str | None) -> None:
    """Make ``name`` (a configured remote) the one ``push`` / ``pull`` use when given none;
    ``None`` unsets it."""

    def check(remotes: dict[str, str]) -> None:
        if name is not None and name not in remotes:
            raise UsageError(f"no remote {name}", hint=_listing(remotes, name))

    def put(config: dict[str, Any]) -> None:
        if name is None:
            config.pop(DEFAULT_KEY, None)
        else:
            config[DEFAULT_KEY] = name

    _update_remotes(store, check, put)


# -- which remote a command means -----------------------------------------------------------------
def is_explicit_location(text: str) -> bool:
    """Whether ``text`` is written as a location, not a name: a URL (``file://``, ``s3://``,
    any ``scheme://``) or a path that starts at a root, home or the current folder
    (``/x``, ``~/x``, ``./x``, ``../x``, ``.``, ``..``)."""
    if "://" in text:
        return True
    if text in (".", ".."):
        return True
    return text.startswith(("/", "~", "./", "../"))


def _listing(remotes: dict[str, str], word: str | None = None) -> str:
    """What to do instead: a close name (did you mean), the configured remotes, or how to add
    one."""
    import difflib

    if not remotes:
        return "no remote is configured: `ledger remote add NAME URL` adds one"
    parts = []
    close = difflib.get_close_matches(word, sorted(remotes), n=1, cutoff=0.6) if word else []
    if close:
        parts.append(f"did you mean {close[0]!r}?")
    parts.append("configured remotes: " + ", ".join(f"{n} ({remotes[n]})" for n in sorted(remotes)))
    return " ".join(parts)


def remote_url(remotes: dict[str, str], default: str | None, given: str | None) -> str:
    """The URL a command means by ``given``: a configured name's URL, a location written as
    one (``is_explicit_location``) as it stands, or, with ``given`` None, the default remote
    or the only one. Anything else is a UsageError (exit 2) naming the configured remotes,
    raised before anything is read or written."""
    if given is None:
        if default is not None:
            if default not in remotes:
                raise UsageError(
                    f"the default remote {default!r} is not configured",
                    hint="`ledger remote default NAME` sets another; " + _listing(remotes),
                )
            return remotes[default]
        if len(remotes) == 1:
            return next(iter(remotes.values()))
        if not remotes:
            raise UsageError("no remote given and none is configured", hint=_listing(remotes))
        raise UsageError(
            f"no remote given and {len(remotes)} are configured with no default",
            hint="name one, or set one with `ledger remote default NAME`; " + _listing(remotes),
        )
    if given in remotes:
        return remotes[given]
    if is_explicit_location(given):
        return given
    raise UsageError(
        f"{given!r} is not a configured remote, nor a path or URL; nothing was read or written",
        hint=_listing(remotes, given)
        + f"; a folder is written as a path (./{given}), a bucket as s3://bucket/prefix",
    )


def _modified(entry: dict[str, Any]) -> float | None:
    """An fsspec listing entry's modification time in epoch seconds: ``mtime`` on local paths,
    ``LastModified`` (a datetime) on S3."""
    for key in ("mtime", "LastModified", "last_modified", "created"):
        value = entry.get(key)
        if isinstance(value, int | float):
            return float(value)
        if isinstance(value, datetime.datetime):
            return value.timestamp()
    return None


def _bad_settings(url: str, e: TypeError) -> UsageError:
    return UsageError(
        f"cannot use remote {url}: the filesystem refused an option it was given ({e}); "
        "nothing was read or written",
        hint="check the FSSPEC_<PROTOCOL> variables and the JSON files in "
        "~/.config/fsspec (or $FSSPEC_CONFIG_DIR): fsspec passes their options to the filesystem",
    )


# -- the remote itself ----------------------------------------------------------------------------
class Remote:
    """A remote's root on some fsspec filesystem."""

    def __init__(self, url: str) -> None:
        import fsspec

        self.url = url
        try:
            fs, root = fsspec.core.url_to_fs(url)
        except (ImportError, ValueError) as e:
            raise UsageError(
                f"cannot use remote {url}: {e}",
                hint="for s3:// remotes install the extra: pip install 'ledger-repro[remote]'",
            ) from None
        except TypeError as e:  # an option fsspec's configuration gave that it does not take
            raise _bad_settings(url, e) from None
        if type(fs).__name__ == "S3FileSystem":
            # s3fs passes its options on when it first connects: an unknown one (FSSPEC_S3=
            # '{"retries": 1}') would surface as a TypeError mid-transfer. Connecting makes
            # the client (no request yet): the error comes now, before anything is read.
            try:
                fs.connect()
            except TypeError as e:
                raise _bad_settings(url, e) from None
            except _backend_errors():
                pass  # an unknown profile, no credentials: the first request meets it again
                # inside ``reaching`` and says the remote cannot be reached (exit 3)
        self.root = root.rstrip("/")
        from fsspec.implementations.local import LocalFileSystem

        # A path remote is walked without following links (``path_fs``); S3 has none.
        self.fs = PathFS(self.root) if isinstance(fs, LocalFileSystem) else fs
        self.errors = _backend_errors()
        # S3 (s3fs) shows an object only once its upload completes: ``writing`` uploads to
        # the object's own key. Any other filesystem may show a file as it is written.
        self.uploads_commit = type(fs).__name__ == "S3FileSystem"
        # How objects are read from S3 (``reading``): chosen at the first read, once.
        self._gets: DirectGets | None = None
        self._gets_chosen = False
        self._gets_lock = threading.Lock()

    def _p(self, *parts: str) -> str:
        return "/".join([self.root, *parts])

    def object_path(self, oid: str) -> str:
        digest = oid[len(ALGO_PREFIX) :]
        return self._p("objects", "b3", digest[:2], digest[2:])

    def _unreachable(self, e: BaseException) -> LedgerAccessError:
        return LedgerAccessError(
            f"remote {self.url} cannot be reached: {e}; nothing was changed here",
            hint="check the path or endpoint, the network, and your credentials",
        )

    @contextmanager
    def reaching(self) -> Iterator[None]:
        """Turn the backend's failures inside the block into one clear error (exit code 3)."""
        try:
            yield
        except self.errors as e:
            raise self._unreachable(e) from None

    def check(self, *, create: bool) -> None:
        """Refuse a remote that is unreachable, not a ledger remote, or of a newer version;
        with ``create``, lay out an empty one."""
        marker = self._p("ledgerremote.json")
        try:
            exists = self.fs.exists(marker)
            if not exists:
                if not create:
                    raise LedgerAccessError(
                        f"{self.url} is not a ledger remote (no ledgerremote.json); nothing was "
                        "changed here",
                        hint="check the URL, or push to it first",
                    )
                self.fs.makedirs(self._p("objects", "b3"), exist_ok=True)
                self.fs.makedirs(self._p("origins"), exist_ok=True)
                self.fs.makedirs(self._p("tmp"), exist_ok=True)
                self.fs.pipe_file(
                    marker, canonical_json({"format": REMOTE_FORMAT, "version": REMOTE_VERSION})
                )
                return
            info = parse_json(self.read_small(marker, MAX_MARKER))
        except ValueError as e:  # not JSON, or nested past ledger._parse's cap
            raise LedgerAccessError(f"{self.url}: ledgerremote.json is not valid ({e})") from None
        except self.errors as e:
            raise self._unreachable(e) from None
        if not isinstance(info, dict) or info.get("format") != REMOTE_FORMAT:
            raise LedgerAccessError(f"{self.url} is not a ledger remote")
        version = info.get("version")
        if not isinstance(version, int) or version > REMOTE_VERSION:
            raise FormatVersionError(
                f"remote {self.url} has format version {version}; this ledger reads up to "
                f"{REMOTE_VERSION}",
                hint="upgrade ledger (pip install -U ledger-repro)",
            )

    def read_small(self, path: str, max_bytes: int) -> bytes:
        """A small file of the remote, refused (NotRegularError) if it holds more than
        ``max_bytes``: never more than that is read, whatever stands there."""
        with self.fs.open(path, "rb") as f:
            data = f.read(max_bytes + 1)
        if len(data) > max_bytes:
            raise NotRegularError(
                f"remote {self.url}: {path} holds more than the {max_bytes} bytes such a file "
                "may hold; it was not read",
                hint="the ledger that wrote it can push again to rewrite it",
            )
        return bytes(data)

    def objects(self) -> dict[str, int]:
        """Every object id on the remote and its size as listed (one listing: what to send is
        a set difference; the sizes are checked before an object is skipped or fetched)."""
        try:
            found = self.fs.find(self._p("objects", "b3"), detail=True)
        except FileNotFoundError:
            return {}
        except self.errors as e:
            raise self._unreachable(e) from None
        out = {}
        for p, entry in found.items():
            parts = str(p).rsplit("/", 2)
            oid = ALGO_PREFIX + parts[-2] + parts[-1]
            if len(parts) == 3 and OID_RE.match(oid) and isinstance(entry.get("size"), int):
                out[oid] = entry["size"]
        return out

    def tmp_path(self) -> str:
        return self._p("tmp", uuid.uuid4().hex)

    @contextmanager
    def writing(self, oid: str) -> Iterator[BinaryIO]:
        """A file to write ``oid``'s content into, which becomes the remote's object only if
        the block ends without an exception (a hash that does not match raises one): on S3
        the object's own key, whose upload (one PUT, or a multipart upload for large objects)
        is completed then, or aborted; elsewhere a file under ``tmp/``, renamed into place."""
        final = self.object_path(oid)
        if not self.uploads_commit:
            tmp = self.tmp_path()
            with self.reaching():
                dst = self.fs.open(tmp, "wb")
            try:
                yield dst
                with self.reaching():
                    dst.close()
            except BaseException:
                with contextlib.suppress(Exception):
                    dst.close()
                with contextlib.suppress(Exception):
                    self.fs.rm(tmp)
                raise
            with self.reaching():
                self.fs.makedirs(final.rsplit("/", 1)[0], exist_ok=True)
                self.fs.mv(tmp, final)
            return
        with self.reaching():
            upload: Any = self.fs.open(final, "wb")  # an s3fs S3File
        try:
            yield upload
        except BaseException:
            with contextlib.suppress(Exception):
                upload.discard()  # aborts a multipart upload begun; a small one never left here
            upload.closed = True  # neither close() nor the file's __del__ may complete it now
            raise
        with self.reaching():
            upload.close()  # the upload completes here, and the object appears whole

    @contextmanager
    def reading(self, oid: str) -> Iterator[ObjectReader]:
        """``oid``'s content on the remote, read into the caller's buffers (``readinto``).
        On S3 one GET, its body read as it arrives (no HEAD first, no read-ahead cache
        copying it piece by piece; a read that breaks off is resumed from where it stopped,
        as often as s3fs retries a call): in the calling thread, straight from the socket,
        where that means what s3fs's GET would (``s3_get``), else through s3fs; elsewhere
        the file, regular files only. Failures to reach the remote are the caller's to turn
        into one error (``reaching``)."""
        path = self.object_path(oid)
        reader: ObjectReader
        if self.uploads_commit:
            gets = self._direct()
            reader = gets.open(path) if gets is not None else _S3Reader(self.fs, path)
        else:
            reader = _FileReader(self.fs.open(path))
        try:
            yield reader
        finally:
            reader.close()

    def _direct(self) -> DirectGets | None:
        from .s3_get import direct_gets  # http.client and urllib: for S3 reads only

        with self._gets_lock:
            if not self._gets_chosen:
                self._gets, self._gets_chosen = direct_gets(self.fs), True
            return self._gets

    def close(self) -> None:
        """Close the connections kept for reading objects (``reading``); a later read opens
        new ones."""
        with self._gets_lock:
            gets = self._gets
        if gets is not None:
            gets.close()

    def put_whole(self, oid: str, data: bytes) -> None:
        """Store ``data``, checked to be ``oid``'s content, as the object ``oid`` in one
        write: on S3 one PUT to its key (an object appears whole or not at all), elsewhere
        through ``writing``."""
        if not self.uploads_commit:
            with self.writing(oid) as dst, self.reaching():
                dst.write(data)
            return
        with self.reaching():
            self.fs.pipe_file(self.object_path(oid), data)

    def sweep_tmp(self, older_than_s: float) -> int:
        """Remove uploads left in ``tmp/`` by killed pushes once older than ``older_than_s``
        (younger ones may be a teammate's push in progress); returns how many went. Best
        effort: an upload that cannot be listed or removed is left for a later push."""
        now = time.time()
        gone = self._sweep_uploads(now - older_than_s) if self.uploads_commit else 0
        try:
            entries = self.fs.ls(self._p("tmp"), detail=True)
        except FileNotFoundError:
            return gone
        except self.errors as e:
            raise self._unreachable(e) from None
        for entry in entries:
            if entry.get("type") != "file":
                continue
            stamp = _modified(entry)
            if stamp is None or now - stamp < older_than_s:
                continue
            with contextlib.suppress(*self.errors):
                self.fs.rm_file(str(entry["name"]))
                gone += 1
        return gone

    def _sweep_uploads(self, before: float) -> int:
        """Abort the unfinished S3 uploads of objects begun before ``before`` (epoch seconds):
        what a killed push of a large object leaves, invisible but stored. Best effort."""
        bucket, _, key = self.root.partition("/")
        prefix = (key + "/" if key else "") + "objects/"
        fs: Any = self.fs  # s3fs
        gone = 0
        with contextlib.suppress(*self.errors):
            for up in fs.list_multipart_uploads(bucket):
                begun = _modified({"created": up.get("Initiated")})
                name, upload = up.get("Key"), up.get("UploadId")
                if not (isinstance(name, str) and name.startswith(prefix) and upload):
                    continue
                if begun is not None and begun < before:
                    with contextlib.suppress(*self.errors):
                        fs.abort_mpu(bucket, name, upload)
                        gone += 1
        return gone

    def origins(self) -> dict[str, dict[str, Any]]:
        """Ledger id -> ``{"refs": {...}, "head": ...}`` of every ledger that pushed here."""
        out: dict[str, dict[str, Any]] = {}
        try:
            names = self.fs.ls(self._p("origins"), detail=False)
        except FileNotFoundError:
            return out
        except self.errors as e:
            raise self._unreachable(e) from None
        for name in names:
            base = str(name).rsplit("/", 1)[-1]
            if not base.endswith(".json"):
                continue
            try:
                data = parse_json(self.read_small(str(name), MAX_ORIGIN))
            except ValueError as e:
                raise LedgerAccessError(
                    f"remote {self.url}: origins/{base} is not valid JSON ({e}); nothing was "
                    "changed here",
                    hint="the ledger that wrote it can push again to rewrite it",
                ) from None
            except self.errors as e:
                raise self._unreachable(e) from None
            refs = data.get("refs") if isinstance(data, dict) else None
            if not isinstance(refs, dict) or not all(
                isinstance(k, str) and isinstance(v, str) and OID_RE.match(v)
                for k, v in refs.items()
            ):
                raise LedgerAccessError(
                    f"remote {self.url}: origins/{base} does not hold a refs table; nothing "
                    "was changed here",
                    hint="the ledger that wrote it can push again to rewrite it",
                )
            out[base[: -len(".json")]] = data
        return out

    def write_origin(self, ledger_id: str, data: dict[str, Any]) -> None:
        """Replace this ledger's ``origins/`` file whole: on S3 one PUT (it replaces an object
        at once), elsewhere a new name renamed over it."""
        final = self._p("origins", f"{ledger_id}.json")
        with self.reaching():
            if self.uploads_commit:
                self.fs.pipe_file(final, canonical_json(data))
                return
            tmp = self.tmp_path()
            self.fs.pipe_file(tmp, canonical_json(data))
            self.fs.mv(tmp, final)


class ObjectReader(Protocol):
    """An object's content on a remote, read in order (``Remote.reading``)."""

    size: int | None  # as the server states it before the first byte (None: not stated)

    def readinto(self, view: memoryview) -> int:
        """Fill ``view`` from the content (fewer bytes only at its end): how many."""
        ...

    def close(self) -> None: ...


class _FileReader:
    def __init__(self, f: BinaryIO) -> None:
        self._f = f
        self.size: int | None = os.fstat(f.fileno()).st_size

    def readinto(self, view: memoryview) -> int:
        n = 0
        while n < len(view) and (got := int(self._f.readinto(view[n:]))):  # type: ignore[attr-defined]
            n += got
        return n

    def close(self) -> None:
        self._f.close()


class _S3Reader:
    """One object of an s3fs filesystem, read from its GET's body on s3fs's event loop: each
    ``readinto`` copies what arrives into the caller's buffer until it is full (one hand-over
    between threads per buffer, not per network read)."""

    def __init__(self, fs: Any, path: str) -> None:
        self._fs = fs
        self._bucket, self._key, _ = fs.split_path(path)
        self._at = 0  # bytes of the content read so far
        self._failures = 0
        self._body: Any = None
        self.size: int | None = None
        self._open()
        self.size = self._stated

    def _open(self) -> None:
        ranged = {"Range": f"bytes={self._at}-"} if self._at else {}
        resp = self._fs.call_s3("get_object", Bucket=self._bucket, Key=self._key, **ranged)
        self._body = resp["Body"]
        length = resp.get("ContentLength")
        self._stated = self._at + length if isinstance(length, int) else None

    def readinto(self, view: memoryview) -> int:
        from fsspec.asyn import sync

        n = 0
        while True:
            got: int
            error: BaseException | None
            got, error = sync(self._fs.loop, _fill, self._body, view[n:])
            n += got
            self._at += got
            if error is None:
                return n
            # A body that broke off: read on from where it stopped, with s3fs's back-off.
            self._failures += 1
            if self._failures >= max(1, int(getattr(self._fs, "retries", 5))):
                raise OSError(errno.EIO, f"reading s3://{self._bucket}/{self._key}: {error}")
            time.sleep(min(1.7**self._failures * 0.1, 15))
            self.close()
            self._open()

    def close(self) -> None:
        if self._body is not None:
            with contextlib.suppress(Exception):
                self._body.close()
            self._body = None


async def _fill(body: Any, view: memoryview) -> tuple[int, BaseException | None]:
    """Copy ``body``'s next bytes into ``view`` until it is full or the body ends: (bytes
    copied, the error that broke the read off, if one that a new request may get past)."""
    from s3fs.core import S3_RETRYABLE_ERRORS

    n = 0
    try:
        while n < len(view):
            chunk = await body.read(len(view) - n)
            if not chunk:
                break
            view[n : n + len(chunk)] = chunk
            n += len(chunk)
    except S3_RETRYABLE_ERRORS as e:
        return n, e
    return n, None


def open_remote(store: Store, name_or_url: str | None) -> Remote:
    """The remote a command means (``remote_url``): a configured name, an explicit path or
    URL, or with None the default or only remote."""
    return Remote(remote_url(list_remotes(store), default_remote(store), name_or_url))
