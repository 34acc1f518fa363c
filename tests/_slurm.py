"""A real one-node Slurm for the tests: munge, slurmctld and slurmd (Debian's ``slurm-wlm``
packages) with every socket, state and log file under a temp dir, on free loopback ports; with
``accounting``, a private MariaDB and slurmdbd as well. Nothing system-wide is used or left:
each daemon is stopped through its pid file when the block ends.

Two partitions: ``debug`` (the default, up) and ``held`` (down: a job submitted there stays
pending until cancelled). Time limits are enforced without grace (``OverTimeLimit=0``,
``KillWait=5``): slurmctld checks them every 30 s, so a 1-minute job ends 60-90 s after it
starts.
"""

from __future__ import annotations

import os
import shutil
import signal
import socket
import subprocess
import time
from collections.abc import Iterator
from contextlib import ExitStack, contextmanager, suppress
from dataclasses import dataclass
from pathlib import Path

from _support import ends_with_this_process

DAEMONS = ("munged", "slurmctld", "slurmd", "sbatch", "squeue", "scancel")
ACCOUNTING = ("slurmdbd", "mariadbd", "mariadb-install-db", "sacctmgr")
_START_S = 60.0


INSTALL = (
    "apt-get install slurmctld slurmd slurm-client munge (accounting: slurmdbd mariadb-server)"
)


def require_slurm(accounting: bool = False) -> None:
    """Skip without Slurm (or without root, which slurmd needs to run jobs as their user);
    on CI (``CI=true``) fail instead: ``.ci/run`` installs it."""
    from _support import require_component

    gone = missing(accounting)
    require_component(not gone, "Slurm (" + ", ".join(gone) + ")", INSTALL)
    if os.geteuid() != 0:
        require_component(None, "root, to run slurmd", "run the Slurm tests as root")


def missing(accounting: bool = False) -> list[str]:
    """The programs a cluster needs that are not installed."""
    found = {p: shutil.which(p) or shutil.which(p, path="/usr/sbin:/usr/bin") for p in DAEMONS}
    if accounting:
        found.update({p: shutil.which(p, path="/usr/sbin:/usr/bin") for p in ACCOUNTING})
    return [p for p, f in found.items() if not f]


def _bin(name: str) -> str:
    found = shutil.which(name) or shutil.which(name, path="/usr/sbin:/usr/bin")
    assert found, f"{name} is not installed"
    return found


def _free_ports(n: int) -> list[int]:
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


@dataclass
class SlurmCluster:
    root: Path
    conf: Path
    name: str
    accounting: bool

    def env(self) -> dict[str, str]:
        """What a client (sbatch, squeue, submitit, ledger) needs to reach this cluster."""
        return {"SLURM_CONF": str(self.conf)}

    def run(self, *argv: str, check: bool = True) -> subprocess.CompletedProcess[str]:
        env = {**os.environ, **self.env()}
        return subprocess.run(
            [_bin(argv[0]), *argv[1:]], env=env, capture_output=True, text=True, check=check,
            timeout=60,
        )  # fmt: skip

    def queue(self) -> dict[str, str]:
        """Job id -> state of every job slurmctld still holds."""
        out = self.run("squeue", "-h", "-t", "all", "-o", "%i|%T").stdout
        return dict(line.split("|", 1) for line in out.split() if "|" in line)


def _wait_for(what: str, ready: object, log: Path | None = None) -> None:
    deadline = time.monotonic() + _START_S
    while time.monotonic() < deadline:
        if ready():  # type: ignore[operator]
            return
        time.sleep(0.2)
    tail = log.read_text(errors="replace")[-2000:] if log is not None and log.exists() else ""
    raise RuntimeError(f"{what} did not start within {_START_S:.0f} s\n{tail}")


def _stop(pid_file: Path, proc: subprocess.Popen[bytes] | None = None) -> None:
    """Stop the daemon named by ``pid_file`` (``proc``, where we started it in the
    foreground, is reaped): SIGTERM, then SIGKILL after 20 s."""
    try:
        pid = int(pid_file.read_text().strip())
    except (OSError, ValueError):
        pid = proc.pid if proc is not None else 0
    if pid <= 1:
        return
    with suppress(ProcessLookupError):
        os.kill(pid, signal.SIGTERM)
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:
        if proc is not None and proc.poll() is not None:
            return
        if not _running(pid):
            break
        time.sleep(0.1)
    else:
        with suppress(ProcessLookupError):
            os.kill(pid, signal.SIGKILL)
    if proc is not None:
        # Reaped here even when it was seen as a zombie: one that exits between poll() and
        # _running() is our child, and a Popen dropped unreaped warns at teardown (CI, 5fbd321).
        proc.wait(timeout=20)


def _running(pid: int) -> bool:
    """Whether ``pid`` runs: a daemon that has exited is a zombie until its parent, init,
    reaps it, which took 1-2 s here (the sandbox's init): that wait held each cluster's
    teardown on munged (measured 2026-12-06)."""
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rpartition(") ")[2][:1] != "Z"
    except FileNotFoundError:
        return False
    except OSError:  # no /proc: ask the kernel
        try:
            os.kill(pid, 0)
        except ProcessLookupError:
            return False
        return True


def _daemon(
    argv: list[str], log: Path, env: dict[str, str] | None = None
) -> subprocess.Popen[bytes]:
    """``argv`` in the foreground of a session of its own, its output to ``log``; it gets
    SIGTERM if this process ends without stopping it (a pytest killed by SIGKILL)."""
    with open(log, "ab") as out:
        return subprocess.Popen(
            argv, stdin=subprocess.DEVNULL, stdout=out, stderr=subprocess.STDOUT, env=env,
            start_new_session=True, preexec_fn=ends_with_this_process(),
        )  # fmt: skip


@contextmanager
def _munge(root: Path) -> Iterator[Path]:
    """munged with its own key and socket; yields the socket path."""
    d = root / "munge"
    d.mkdir(mode=0o755)
    os.chmod(d, 0o755)  # munge refuses a socket directory others can write to, and clients
    key = d / "munge.key"
    key.write_bytes(os.urandom(1024))
    os.chmod(key, 0o400)
    sock, pid = d / "munge.socket", d / "munged.pid"
    # In the foreground: a munged that forks itself into the background is no longer tied to
    # this process, and outlived every pytest killed before its teardown.
    proc = _daemon(
        [
            _bin("munged"), "--foreground", "--force", f"--socket={sock}", f"--key-file={key}",
            f"--pid-file={pid}", f"--log-file={d / 'munged.log'}", f"--seed-file={d / 'seed'}",
        ],
        d / "munged.out",
    )  # fmt: skip
    try:
        _wait_for("munged", lambda: sock.exists() or proc.poll() is not None, d / "munged.log")
        if proc.poll() is not None:
            out = (d / "munged.out").read_text(errors="replace")[-2000:]
            raise RuntimeError(f"munged exited ({proc.returncode}):\n{out}")
        yield sock
    finally:
        _stop(pid, proc)


@contextmanager
def _mariadb(root: Path) -> Iterator[int]:
    """A private MariaDB on a free loopback port, no grant tables; yields the port."""
    d = root / "mariadb"
    data = d / "data"
    data.mkdir(parents=True)
    (port,) = _free_ports(1)
    subprocess.run(
        [
            _bin("mariadb-install-db"), "--no-defaults", f"--datadir={data}", "--user=root",
            "--auth-root-authentication-method=normal", "--skip-test-db",
        ],
        check=True, capture_output=True, timeout=120,
    )  # fmt: skip
    pid = d / "mariadbd.pid"
    log = d / "mariadbd.log"
    proc = _daemon(
        [
            _bin("mariadbd"), "--no-defaults", f"--datadir={data}", "--user=root",
            f"--port={port}", "--bind-address=127.0.0.1", f"--socket={d / 'mysql.sock'}",
            f"--pid-file={pid}", "--skip-grant-tables", "--skip-name-resolve",
            "--innodb-buffer-pool-size=32M", f"--log-error={log}",
        ],
        log,
    )  # fmt: skip
    try:
        _wait_for("mariadbd", lambda: _answers(port), log)
        yield port
    finally:
        _stop(pid, proc)


def _answers(port: int) -> bool:
    with socket.socket() as s:
        s.settimeout(0.5)
        return s.connect_ex(("127.0.0.1", port)) == 0


@contextmanager
def _slurmdbd(root: Path, munge: Path, db_port: int, name: str) -> Iterator[int]:
    d = root / "slurmdbd"
    d.mkdir()
    (port,) = _free_ports(1)
    conf = root / "slurmdbd.conf"  # found next to SLURM_CONF (-f is not read)
    conf.write_text(
        "\n".join(
            [
                f"AuthInfo=socket={munge}", "AuthType=auth/munge", "DbdHost=localhost",
                "DbdAddr=127.0.0.1", f"DbdPort={port}", "SlurmUser=root",
                f"PidFile={d / 'slurmdbd.pid'}", f"LogFile={d / 'slurmdbd.log'}",
                "StorageType=accounting_storage/mysql", "StorageHost=127.0.0.1",
                f"StoragePort={db_port}", "StorageUser=root", f"StorageLoc=acct_{name}",
                "DebugLevel=info",
            ]
        )
        + "\n"
    )  # fmt: skip
    os.chmod(conf, 0o600)
    env = {**os.environ, "SLURM_CONF": str(root / "slurm.conf")}
    log = d / "slurmdbd.log"
    proc = _daemon([_bin("slurmdbd"), "-D"], log, env)
    try:
        _wait_for("slurmdbd", lambda: _answers(port), log)
        yield port
    finally:
        _stop(d / "slurmdbd.pid", proc)


def _slurm_conf(root: Path, name: str, munge: Path, dbd_port: int | None) -> Path:
    ctld_port, d_port = _free_ports(2)
    state, spool = root / "state", root / "spool"
    state.mkdir()
    spool.mkdir()
    accounting = (
        [
            "AccountingStorageType=accounting_storage/slurmdbd",
            "AccountingStorageHost=localhost",
            f"AccountingStoragePort={dbd_port}",
            f"AccountingStoragePass={munge}",
        ]
        if dbd_port is not None
        else ["AccountingStorageType=accounting_storage/none"]
    )
    lines = [
        f"ClusterName={name}", "SlurmctldHost=localhost(127.0.0.1)",
        f"SlurmctldPort={ctld_port}", f"SlurmdPort={d_port}", "SlurmUser=root",
        "SlurmdUser=root", "AuthType=auth/munge", f"AuthInfo=socket={munge}",
        f"StateSaveLocation={state}", f"SlurmdSpoolDir={spool}",
        f"SlurmctldPidFile={root / 'slurmctld.pid'}", f"SlurmdPidFile={root / 'slurmd.pid'}",
        f"SlurmctldLogFile={root / 'slurmctld.log'}", f"SlurmdLogFile={root / 'slurmd.log'}",
        "ProctrackType=proctrack/linuxproc", "TaskPlugin=task/none",
        "JobAcctGatherType=jobacct_gather/none", "SelectType=select/cons_tres",
        "SelectTypeParameters=CR_Core", "SchedulerType=sched/backfill",
        "SlurmdParameters=config_overrides", "ReturnToService=2", "MpiDefault=none",
        "OverTimeLimit=0", "KillWait=5", "MinJobAge=300", "InactiveLimit=0",
        "SchedulerParameters=sched_interval=2", "MessageTimeout=30",
        *accounting,
        "NodeName=node1 NodeAddr=127.0.0.1 NodeHostname=localhost CPUs=8 RealMemory=4000 "
        "State=UNKNOWN",
        "PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP",
        "PartitionName=held Nodes=ALL MaxTime=INFINITE State=DOWN",
    ]  # fmt: skip
    conf = root / "slurm.conf"
    conf.write_text("\n".join(lines) + "\n")
    return conf


@contextmanager
def slurm_cluster(
    root: Path, name: str = "ledgertest", accounting: bool = False
) -> Iterator[SlurmCluster]:
    """Start a one-node cluster under ``root`` (with slurmdbd and MariaDB when
    ``accounting``); stop every daemon when the block ends."""
    root.mkdir(parents=True, exist_ok=True)
    os.chmod(root, 0o755)
    with ExitStack() as stack:
        munge = stack.enter_context(_munge(root))
        dbd_port = None
        if accounting:
            db_port = stack.enter_context(_mariadb(root))
            dbd_port = stack.enter_context(_slurmdbd(root, munge, db_port, name))
        conf = _slurm_conf(root, name, munge, dbd_port)
        cluster = SlurmCluster(root, conf, name, accounting)
        env = {**os.environ, **cluster.env()}
        if accounting:
            cluster.run("sacctmgr", "-i", "add", "cluster", name, check=False)
        for daemon, args in (("slurmctld", ["-i"]), ("slurmd", ["-N", "node1"])):
            argv = [_bin(daemon), "-D", "-f", str(conf), *args]
            proc = _daemon(argv, root / f"{daemon}.out", env)
            stack.callback(_stop, root / f"{daemon}.pid", proc)

        def idle() -> bool:
            r = cluster.run("sinfo", "-h", "-p", "debug", "-o", "%T", check=False)
            return r.returncode == 0 and r.stdout.strip() == "idle"

        _wait_for("the Slurm node", idle, root / "slurmctld.log")
        yield cluster
