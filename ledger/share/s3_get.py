"""An S3 object's body read in the calling thread, straight into the caller's buffer: a GET
that s3fs's own client signs (a presigned URL: its credentials, endpoint, region and
addressing), sent over a plain ``http.client`` connection, one kept per worker and reused.

Why not through s3fs: it reads every body on its one event-loop thread, in pieces of at most
256 KiB, each a new bytes object that is copied again into the caller's buffer (joined first
when several wait), and botocore computes a CRC32 of each byte on the way. On a 1 GiB clone
that thread did over half of the process's work and held the GIL while it did. Here each
worker's socket fills its buffer (``readinto``: one copy, out of the kernel, with the GIL
released), all workers at once. The CRC is not computed: the caller hashes every byte with
BLAKE3 and keeps an object only if the hash is its name, which the CRC would only repeat.

Used only where such a GET means what s3fs's would (``direct_gets``): a plain ``http://``
endpoint (a server on the machine or the network, as SeaweedFS or MinIO are run), no proxy
for it, no extra request arguments (SSE-C keys, requester pays) and no client or connection
option beyond the endpoint and region. Anything else (``https`` included: its trust store and
TLS options are botocore's to choose) is read through s3fs (``remote._S3Reader``).
"""

from __future__ import annotations

import contextlib
import errno
import http.client
import threading
import time
import urllib.parse
import urllib.request
from typing import Any

__all__ = ["DirectGets", "direct_gets"]

# A presigned URL's lifetime: it is made for each request (a resumed read gets a new one).
_EXPIRES_S = 3600
# Of an error answer's body (S3's XML naming the error), read to say what was refused.
_MAX_ERROR = 4096
# Answers worth asking again for, after a pause (S3's "slow down", a server busy or restarting).
_RETRY_STATUS = frozenset({429, 500, 502, 503, 504})
_CLIENT_OPTIONS = frozenset({"endpoint_url", "region_name"})


def direct_gets(fs: Any) -> DirectGets | None:
    """A ``DirectGets`` for this s3fs filesystem, or None where s3fs must read (module
    docstring): an endpoint other than plain http, a proxy for it, extra request arguments,
    or client options this reader would not apply."""
    if getattr(fs, "requester_pays", False) or getattr(fs, "s3_additional_kwargs", None):
        return None
    if set(getattr(fs, "client_kwargs", None) or {}) - _CLIENT_OPTIONS:
        return None
    if "proxies" in (getattr(fs, "config_kwargs", None) or {}):
        return None
    try:
        endpoint = fs.s3.meta.endpoint_url
    except Exception:  # no client yet (s3fs could not make one): s3fs says why when it reads
        return None
    url = urllib.parse.urlsplit(str(endpoint))
    if url.scheme != "http" or not url.hostname:
        return None
    if "http" in urllib.request.getproxies() and not urllib.request.proxy_bypass(url.hostname):
        return None
    return DirectGets(fs)


class DirectGets:
    """The connections of one remote's direct GETs: idle ones are kept for the next GET to
    the same host (a pull's workers each hold one at a time); ``close`` drops them."""

    def __init__(self, fs: Any) -> None:
        self.fs = fs
        self.retries = max(1, int(getattr(fs, "retries", 5)))
        self._timeout = float(getattr(fs, "read_timeout", 15) or 15)
        self._idle: dict[str, list[http.client.HTTPConnection]] = {}
        self._lock = threading.Lock()

    def open(self, path: str) -> DirectReader:
        return DirectReader(self, path)

    def take(self, host: str) -> tuple[http.client.HTTPConnection, bool]:
        """A connection to ``host``: an idle one (True) or a new one (False)."""
        with self._lock:
            idle = self._idle.get(host)
            if idle:
                return idle.pop(), True
        return http.client.HTTPConnection(host, timeout=self._timeout), False

    def give(self, host: str, conn: http.client.HTTPConnection) -> None:
        with self._lock:
            self._idle.setdefault(host, []).append(conn)

    def close(self) -> None:
        with self._lock:
            idle, self._idle = self._idle, {}
        for conns in idle.values():
            for conn in conns:
                conn.close()


class DirectReader:
    """One object's body (``remote.ObjectReader``): ``size`` as its answer states it,
    ``readinto`` fills the caller's buffer from the socket. A body that breaks off (a dropped
    connection, or one that ends before its stated length) is read on with a ranged GET from
    the byte it stopped at, as often as s3fs retries a call; after that the error is raised
    (an ``OSError``: the remote cannot be reached)."""

    def __init__(self, gets: DirectGets, path: str) -> None:
        self._gets, self._path = gets, path
        self._at = 0  # bytes of the content read so far
        self._failures = 0
        self._host = ""
        self._conn: http.client.HTTPConnection | None = None
        self._resp: http.client.HTTPResponse | None = None
        self._stated: int | None = None
        self._open()
        self.size: int | None = self._stated

    def _open(self) -> None:
        """Send the GET (from ``_at`` on) and take its answer's head; retried on a broken
        connection or a busy server, raised on a refusal (missing object, no access)."""
        while True:
            url = urllib.parse.urlsplit(self._gets.fs.url(self._path, expires=_EXPIRES_S))
            self._host = url.netloc
            conn, reused = self._gets.take(url.netloc)
            headers = {"Range": f"bytes={self._at}-"} if self._at else {}
            try:
                conn.request("GET", f"{url.path}?{url.query}", headers=headers)
                resp = conn.getresponse()
            except (OSError, http.client.HTTPException) as e:
                conn.close()
                if reused:  # an idle connection the server had closed meanwhile
                    continue
                self._failed(e)
                continue
            if resp.status == (206 if self._at else 200):
                self._conn, self._resp = conn, resp
                length = resp.getheader("Content-Length")
                stated = int(length) if length is not None and length.isdigit() else None
                self._stated = None if stated is None else self._at + stated
                return
            said = resp.read(_MAX_ERROR).decode("utf-8", "replace")
            conn.close()
            error = _refusal(resp.status, self._path, said)
            if resp.status not in _RETRY_STATUS:
                raise error
            self._failed(error)

    def _failed(self, error: BaseException) -> None:
        """Count a failure; pause as s3fs does before its next try, or raise the error once
        there have been as many as s3fs would try."""
        self._failures += 1
        if self._failures >= self._gets.retries:
            if isinstance(error, OSError):
                raise error
            raise OSError(errno.EIO, f"reading {self._path}: {error}")
        time.sleep(min(1.7**self._failures * 0.1, 15))

    def readinto(self, view: memoryview) -> int:
        n = 0
        while n < len(view):
            resp = self._resp
            if resp is None:
                return n
            error: BaseException
            try:
                got = resp.readinto(view[n:])
            except (OSError, http.client.HTTPException) as e:
                error = e
            else:
                if got:
                    n += got
                    self._at += got
                    continue
                if self._stated is None or self._at >= self._stated:
                    self._done()
                    return n
                error = OSError(
                    errno.EIO, f"{self._path}: the body ended at byte {self._at} of {self._stated}"
                )
            self._drop()
            self._failed(error)
            self._open()
        return n

    def _done(self) -> None:
        """The body was read to its end: its connection serves the next GET."""
        conn, resp = self._conn, self._resp
        self._conn = self._resp = None
        if conn is not None and resp is not None:
            if resp.isclosed() and not resp.will_close:
                self._gets.give(self._host, conn)
            else:
                conn.close()

    def _drop(self) -> None:
        conn, self._conn, self._resp = self._conn, None, None
        if conn is not None:
            with contextlib.suppress(Exception):
                conn.close()

    def close(self) -> None:
        """Give the connection back if its body was read to the end; else close it (what is
        left of the body is not read)."""
        resp = self._resp
        if resp is not None and resp.isclosed():
            self._done()
        else:
            self._drop()


def _refusal(status: int, path: str, said: str) -> OSError:
    code = _tag(said, "Code") or http.client.responses.get(status, "")
    message = f"GET {path}: {status} {code}".rstrip()
    if status == 404:
        return FileNotFoundError(errno.ENOENT, message)
    if status in (401, 403):
        return PermissionError(errno.EACCES, message)
    return OSError(errno.EIO, message)


def _tag(xml: str, name: str) -> str:
    """The text of the first ``<name>`` element of an S3 error answer, or ''."""
    start = xml.find(f"<{name}>")
    end = xml.find(f"</{name}>", start)
    return xml[start + len(name) + 2 : end].strip() if start >= 0 and end > start else ""
