"""push / pull / clone through a path remote and, where marked ``remote``, a real S3 server
(SeaweedFS on loopback, tests/share/_s3_server.py) too: set-difference transfers, concurrent
pushers, kills at any point, a corrupt remote object, an unreachable remote."""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest
from _s3_server import RemoteUnderTest, S3Server
from _share_lab import SCRIPT, git_env, make_repo, record
from _support import init_ledger, run_ledger, subprocess_env

from ledger.store import Store


def _json(r: subprocess.CompletedProcess[str]) -> dict[str, object]:
    assert r.returncode == 0, r.stdout + r.stderr
    return json.loads(r.stdout)  # type: ignore[no-any-return]


def test_remote_names(packaged: tuple[Path, str, Path], tmp_path: Path) -> None:
    repo, _, _ = packaged
    r = run_ledger("remote", "add", "team", str(tmp_path / "r"), cwd=repo)
    assert r.returncode == 0, r.stderr
    assert _json(run_ledger("remote", "list", "--json", cwd=repo)) == {"team": str(tmp_path / "r")}
    r = run_ledger("remote", "add", "team", "/elsewhere", cwd=repo)
    assert r.returncode == 2 and "already exists" in r.stderr
    r = run_ledger("remote", "add", "s3", "s3://key:secret@bucket/x", cwd=repo)
    assert r.returncode == 2 and "credentials" in r.stderr
    assert run_ledger("remote", "remove", "team", cwd=repo).returncode == 0
    assert _json(run_ledger("remote", "list", "--json", cwd=repo)) == {}
    assert run_ledger("remote", "remove", "team", cwd=repo).returncode == 2


def test_push_then_clone_replays_and_a_second_push_sends_nothing(
    packaged: tuple[Path, str, Path], tmp_path: Path, remote: RemoteUnderTest
) -> None:
    repo, run_id, _ = packaged
    first = _json(run_ledger("push", remote.url, "--json", cwd=repo))
    assert first["sent"] == first["objects"] and first["sent"] > 0
    again = _json(run_ledger("push", remote.url, "--json", cwd=repo))
    assert again["sent"] == 0 and again["bytes_sent"] == 0
    remote.sound()

    # A copy of the repository elsewhere can't be reached by the clone: move repo A away.
    hidden = tmp_path / "hidden"
    shutil.move(repo, hidden)
    try:
        clone = tmp_path / "clone"
        got = _json(run_ledger("clone", remote.url, str(clone), "--json", cwd=tmp_path))
        assert f"runs/{run_id}" in got["refs_added"]  # type: ignore[operator]
        assert run_ledger("verify", cwd=clone).returncode == 0
        r = run_ledger("replay", run_id, "--json", cwd=clone)
        assert r.returncode == 0, r.stdout + r.stderr
        again = _json(run_ledger("pull", "origin", "--json", cwd=clone))
        assert again["fetched"] == 0 and again["refs_added"] == []
    finally:
        shutil.move(hidden, repo)


def test_two_teammates_push_at_once_and_lose_nothing(
    tmp_path: Path, remote: RemoteUnderTest
) -> None:
    teams = [make_repo(tmp_path / name) for name in ("alice", "bob")]
    runs = [record(repo) for repo in teams for _ in range(2)]
    procs = [
        subprocess.Popen(
            [sys.executable, "-m", "ledger", "push", remote.url],
            cwd=repo,
            env=subprocess_env(),
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
        )
        for repo in teams
    ]
    outs = [p.communicate(timeout=120) for p in procs]
    assert [p.returncode for p in procs] == [0, 0], outs
    remote.sound()
    assert len(remote.files("origins")) == 2
    for repo in teams:
        got = _json(run_ledger("pull", remote.url, "--json", cwd=repo))
        assert got["collisions"] == []
        listed = {
            name.split("/", 1)[1] for name, _ in Store.open(repo / ".ledger").refs.iter("runs/")
        }
        assert set(runs) <= listed
        r = run_ledger("verify", cwd=repo)
        assert r.returncode == 0, r.stdout
    # Each origin's chain head is what that ledger had when it pushed, and its log extends it.
    for repo in teams:
        store = Store.open(repo / ".ledger")
        pushed = json.loads(remote.fs.cat_file(f"{remote.root}/origins/{store.id}.json"))
        r = run_ledger("verify", "--head", pushed["head"], cwd=repo)
        assert r.returncode == 0, r.stdout


def _commit(repo: Path, message: str) -> str:
    subprocess.run(["git", "commit", "-qam", message], cwd=repo, check=True, env=git_env())
    out = subprocess.run(["git", "rev-parse", "HEAD"], cwd=repo, check=True, capture_output=True)
    return out.stdout.decode().strip()


def test_pulling_chosen_runs_takes_only_their_code_and_replays(tmp_path: Path) -> None:
    repo = make_repo(tmp_path / "repo")
    first = record(repo)
    (repo / "train.py").write_text(SCRIPT + "print('v2')\n")
    second_commit = _commit(repo, "v2")
    second = record(repo)
    assert run_ledger("replay", second, cwd=repo).returncode == 0
    remote = tmp_path / "remote"
    _json(run_ledger("push", str(remote), "--json", cwd=repo))

    clone = tmp_path / "clone"
    clone.mkdir()
    init_ledger(clone)
    got = _json(run_ledger("pull", str(remote), second[:-2], "--json", cwd=clone))
    added = set(got["refs_added"])  # type: ignore[arg-type]
    assert f"runs/{second}" in added and f"runs/{first}" not in added
    assert f"sources/git/{second_commit}" in added
    assert [n for n in added if n.startswith("sources/")] == [f"sources/git/{second_commit}"]
    assert any(n.startswith(f"verdicts/{second}/") for n in added)
    replays = [n.split("/")[2] for n in added if n.startswith(f"verdicts/{second}/")]
    assert all(f"runs/{r}" in added for r in replays)
    assert run_ledger("verify", cwd=clone).returncode == 0
    r = run_ledger("replay", second, "--json", cwd=clone)
    assert r.returncode == 0, r.stdout + r.stderr


def test_pulling_an_unknown_or_ambiguous_run_is_refused_and_fetches_nothing(
    tmp_path: Path,
) -> None:
    repo = make_repo(tmp_path / "repo")
    run_id = record(repo)
    record(repo)
    remote = tmp_path / "remote"
    _json(run_ledger("push", str(remote), "--json", cwd=repo))
    clone = tmp_path / "clone"
    clone.mkdir()
    init_ledger(clone)
    before = sorted(p for p in (clone / ".ledger").rglob("*") if p.is_file())
    r = run_ledger("pull", str(remote), "nosuchrun", cwd=clone)
    assert r.returncode == 2 and "no run nosuchrun on the remote" in r.stderr, r.stderr
    r = run_ledger("pull", str(remote), "", cwd=clone)
    assert r.returncode == 2, r.stderr
    # Every run id shares the year-month prefix: ambiguous.
    r = run_ledger("pull", str(remote), run_id[:4], cwd=clone)
    assert r.returncode == 2 and "ambiguous" in r.stderr, r.stderr
    assert sorted(p for p in (clone / ".ledger").rglob("*") if p.is_file()) == before


def test_pull_takes_a_run_by_short_id_or_by_name_as_every_command_does(tmp_path: Path) -> None:
    """`pull REMOTE RUN` read RUN as a full id or id prefix only: the short id `ledger ls`
    prints and a run name (its latest original run) were "no run on the remote"."""
    repo = make_repo(tmp_path / "repo")
    older = record(repo, "--name", "alpha")
    newer = record(repo, "--name", "alpha")
    other = record(repo, "--name", "beta")
    assert run_ledger("replay", newer, cwd=repo).returncode == 0  # a replay named alpha too
    remote = tmp_path / "remote"
    _json(run_ledger("push", str(remote), "--json", cwd=repo))
    clone = tmp_path / "clone"
    clone.mkdir()
    init_ledger(clone)
    before = sorted(p for p in (clone / ".ledger").rglob("*") if p.is_file())
    r = run_ledger("pull", str(remote), "gamma", cwd=clone)
    assert r.returncode == 2 and "no run gamma on the remote" in r.stderr, r.stderr
    assert sorted(p for p in (clone / ".ledger").rglob("*") if p.is_file()) == before
    added = set(_json(run_ledger("pull", str(remote), "alpha", "--json", cwd=clone))["refs_added"])  # type: ignore[arg-type]
    assert f"runs/{newer}" in added and f"runs/{older}" not in added
    tail = other.rsplit("-", 1)[1][:6]
    added = set(_json(run_ledger("pull", str(remote), tail, "--json", cwd=clone))["refs_added"])  # type: ignore[arg-type]
    assert f"runs/{other}" in added
    assert run_ledger("verify", cwd=clone).returncode == 0


def test_a_push_sweeps_uploads_killed_pushes_left_and_keeps_recent_ones(
    packaged: tuple[Path, str, Path], tmp_path: Path
) -> None:
    repo, _, _ = packaged
    remote = tmp_path / "remote"
    _json(run_ledger("push", str(remote), "--json", cwd=repo))
    stale, recent = remote / "tmp" / "stale-upload", remote / "tmp" / "recent-upload"
    stale.write_bytes(b"half an object")
    recent.write_bytes(b"a teammate's upload in flight")
    two_days_ago = time.time() - 2 * 86400
    os.utime(stale, (two_days_ago, two_days_ago))
    _json(run_ledger("push", str(remote), "--json", cwd=repo))
    assert not stale.exists()
    assert recent.exists()


def test_a_colliding_ref_is_reported_and_kept(
    packaged: tuple[Path, str, Path], tmp_path: Path
) -> None:
    repo, run_id, _ = packaged
    remote = tmp_path / "remote"
    _json(run_ledger("push", str(remote), "--json", cwd=repo))
    origin = next((remote / "origins").glob("*.json"))
    data = json.loads(origin.read_text())
    other = next(o for o in data["refs"].values() if o != data["refs"][f"runs/{run_id}"])
    data["refs"][f"notes/{run_id}"] = other
    origin.write_text(json.dumps(data))
    clone = tmp_path / "clone"
    clone.mkdir()
    init_ledger(clone)
    store = Store.open(clone / ".ledger")
    mine = store.put_json({"kind": "note", "schema": 1})
    store.set_ref(f"notes/{run_id}", mine)
    r = run_ledger("pull", str(remote), cwd=clone)
    assert r.returncode == 1 and f"collision: notes/{run_id}" in r.stdout
    assert store.refs.get(f"notes/{run_id}") == mine


def test_a_corrupt_remote_object_is_refused_and_named(
    packaged: tuple[Path, str, Path], tmp_path: Path, remote: RemoteUnderTest
) -> None:
    repo, _, _ = packaged
    _json(run_ledger("push", remote.url, "--json", cwd=repo))
    oid, victim = next(iter(sorted(remote.objects().items())))
    if remote.url.startswith("/"):
        Path(victim).chmod(0o644)
    remote.fs.pipe_file(victim, remote.fs.cat_file(victim) + b"x")
    clone = tmp_path / "clone"
    r = run_ledger("clone", remote.url, str(clone))
    assert r.returncode == 5, r.stderr
    assert f"object {oid} on remote" in r.stderr and "is corrupt" in r.stderr
    assert not clone.exists()  # a failed clone leaves no ledger (nor the folder it made)
    here = tmp_path / "here"
    here.mkdir()
    init_ledger(here)
    r = run_ledger("pull", remote.url, cwd=here)
    assert r.returncode == 5 and f"object {oid} on remote" in r.stderr
    store = Store.open(here / ".ledger")
    assert not store.objects.has(oid)
    assert list(store.refs.iter("runs/")) == []
    assert run_ledger("verify", cwd=here).returncode == 0


def test_an_unreachable_remote_changes_nothing(
    packaged: tuple[Path, str, Path], tmp_path: Path
) -> None:
    repo, _, _ = packaged
    before = (repo / ".ledger" / "log" / "chain.jsonl").read_bytes()
    r = run_ledger("pull", str(tmp_path / "nowhere"), cwd=repo)
    assert r.returncode == 3 and "not a ledger remote" in r.stderr
    r = run_ledger("clone", str(tmp_path / "nowhere"), str(tmp_path / "c"))
    assert r.returncode == 3 and not (tmp_path / "c").exists()
    assert (repo / ".ledger" / "log" / "chain.jsonl").read_bytes() == before


def _closed_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


@pytest.mark.parametrize("command", ["push", "pull", "clone"])
def test_an_unreachable_s3_endpoint_is_a_clear_error_that_changes_nothing(
    packaged: tuple[Path, str, Path],
    tmp_path: Path,
    s3_server: object,
    monkeypatch: pytest.MonkeyPatch,
    command: str,
) -> None:
    """No S3 server answers at the endpoint: exit 3, the endpoint named, no traceback."""
    repo, _, _ = packaged
    endpoint = f"http://127.0.0.1:{_closed_port()}"
    monkeypatch.setenv("AWS_ENDPOINT_URL", endpoint)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "k")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "s")
    # One attempt: botocore's retries of a refused connection (5 attempts, with back-off) end
    # in the same error after seconds of sleeping, and the retries are not what is tested.
    monkeypatch.setenv("AWS_MAX_ATTEMPTS", "1")
    before = sorted(p.relative_to(repo) for p in (repo / ".ledger").rglob("*") if p.is_file())
    chain = (repo / ".ledger" / "log" / "chain.jsonl").read_bytes()
    url = "s3://ledger-test/team"
    if command == "clone":
        r = run_ledger("clone", url, str(tmp_path / "c"), cwd=tmp_path)
        assert not (tmp_path / "c").exists()
    else:
        r = run_ledger(command, url, cwd=repo)
    assert r.returncode == 3, r.stderr
    assert "cannot be reached" in r.stderr and endpoint in r.stderr, r.stderr
    assert "Traceback" not in r.stderr
    assert (repo / ".ledger" / "log" / "chain.jsonl").read_bytes() == chain
    after = sorted(p.relative_to(repo) for p in (repo / ".ledger").rglob("*") if p.is_file())
    assert after == before


@pytest.mark.parametrize("command", ["push", "pull", "clone"])
def test_an_option_the_s3_filesystem_refuses_is_a_clear_error_that_changes_nothing(
    packaged: tuple[Path, str, Path], tmp_path: Path, command: str
) -> None:
    """fsspec passes FSSPEC_S3's options to s3fs, which passes them on when it first connects:
    an unknown one surfaced as a TypeError traceback in the middle of the command."""
    repo, _, _ = packaged
    chain = (repo / ".ledger" / "log" / "chain.jsonl").read_bytes()
    env = {"FSSPEC_S3": '{"retries": 1}'}
    if command == "clone":
        r = run_ledger("clone", "s3://ledger-test/team", str(tmp_path / "c"), cwd=tmp_path, **env)
        assert not (tmp_path / "c").exists()
    else:
        r = run_ledger(command, "s3://ledger-test/team", cwd=repo, **env)
    assert r.returncode == 2 and "Traceback" not in r.stderr, r.stderr
    assert "refused an option it was given" in r.stderr and "'retries'" in r.stderr, r.stderr
    assert "ledger: hint: check the FSSPEC_<PROTOCOL> variables" in r.stderr
    assert (repo / ".ledger" / "log" / "chain.jsonl").read_bytes() == chain


@pytest.fixture
def heavy(tmp_path: Path) -> Path:
    """A run with 60 MiB of incompressible inputs: long enough a transfer to be killed."""
    repo = make_repo(tmp_path / "heavy")
    big = repo / "big"
    big.mkdir()
    for i in range(60):
        (big / f"{i:02d}.bin").write_bytes(os.urandom(1 << 20))
    r = run_ledger("record", "--input", "big", "--", sys.executable, "-c", "print(1)", cwd=repo)
    assert r.returncode == 0, r.stderr
    return repo


def _kill_midway(args: list[str], cwd: Path, count: Callable[[], int], at: int) -> None:
    """Start ``ledger ARGS`` and SIGKILL it once ``count()`` reaches ``at``: mid-transfer."""
    p = subprocess.Popen(
        [sys.executable, "-m", "ledger", *args],
        cwd=cwd,
        env=subprocess_env(),
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    deadline = time.monotonic() + 60
    while count() < at and p.poll() is None and time.monotonic() < deadline:
        time.sleep(0.005)
    assert p.poll() is None, "the transfer ended before it could be killed"
    p.send_signal(signal.SIGKILL)
    p.wait()


@pytest.mark.slow
@pytest.mark.parametrize("at", [3, 30])
def test_push_and_pull_killed_midway_then_rerun_complete(
    heavy: Path, tmp_path: Path, at: int, remote: RemoteUnderTest
) -> None:
    _kill_midway(["push", remote.url], heavy, lambda: len(remote.files("objects")), at)
    assert remote.files("origins") == []  # no refs before every object is there
    remote.sound()
    _json(run_ledger("push", remote.url, "--json", cwd=heavy))
    remote.sound()

    clone = tmp_path / "clone"
    clone.mkdir()
    init_ledger(clone)
    objects = clone / ".ledger" / "objects"
    _kill_midway(
        ["pull", remote.url], clone, lambda: sum(1 for p in objects.rglob("*") if p.is_file()), at
    )
    assert list(Store.open(clone / ".ledger").refs.iter()) == []
    r = run_ledger("verify", "--json", cwd=clone)
    # No ref to a missing object, no partial object: only the killed pull's (empty) lease,
    # which the next pull removes.
    problems = [(p["kind"], p["subject"][:13]) for p in json.loads(r.stdout)["problems"]]
    assert problems == [("abandoned-staging", "staging/pull-")], r.stdout
    got = _json(run_ledger("pull", remote.url, "--json", cwd=clone))
    assert got["collisions"] == []
    r = run_ledger("verify", cwd=clone)
    assert r.returncode == 0, r.stdout
    assert len(list(Store.open(clone / ".ledger").refs.iter("runs/"))) == 1


def test_a_damaged_origins_file_is_refused(
    packaged: tuple[Path, str, Path], tmp_path: Path
) -> None:
    repo, _, _ = packaged
    remote = tmp_path / "remote"
    _json(run_ledger("push", str(remote), "--json", cwd=repo))
    next((remote / "origins").glob("*.json")).write_text("{not json")
    clone = tmp_path / "clone"
    clone.mkdir()
    init_ledger(clone)
    r = run_ledger("pull", str(remote), cwd=clone)
    assert r.returncode == 3 and "is not valid JSON" in r.stderr and "Traceback" not in r.stderr
    assert list(Store.open(clone / ".ledger").objects) == []


def test_an_s3_remote_reads_endpoint_and_credentials_from_an_aws_profile(
    packaged: tuple[Path, str, Path],
    tmp_path: Path,
    s3_server: S3Server,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    """No AWS variables but AWS_PROFILE and the config files: the standard AWS resolution
    finds the endpoint, region and credentials; none of them lands in the ledger."""
    repo, run_id, _ = packaged
    env = s3_server.env()
    for key in env:
        monkeypatch.delenv(key, raising=False)
    config, creds = tmp_path / "aws-config", tmp_path / "aws-credentials"
    config.write_text(
        f"[profile team]\nregion = {env['AWS_DEFAULT_REGION']}\n"
        f"endpoint_url = {env['AWS_ENDPOINT_URL']}\n"
    )
    creds.write_text(
        f"[team]\naws_access_key_id = {env['AWS_ACCESS_KEY_ID']}\n"
        f"aws_secret_access_key = {env['AWS_SECRET_ACCESS_KEY']}\n"
    )
    monkeypatch.setenv("AWS_CONFIG_FILE", str(config))
    monkeypatch.setenv("AWS_SHARED_CREDENTIALS_FILE", str(creds))
    monkeypatch.setenv("AWS_PROFILE", "team")
    url = f"s3://{s3_server.bucket}/profile-{tmp_path.name}"
    clone = tmp_path / "clone"
    clone.mkdir()
    init_ledger(clone)
    assert run_ledger("remote", "add", "team", url, cwd=clone).returncode == 0
    _json(run_ledger("push", url, "--json", cwd=repo))
    got = _json(run_ledger("pull", "team", "--json", cwd=clone))
    assert f"runs/{run_id}" in got["refs_added"]  # type: ignore[operator]
    stored = (clone / ".ledger" / "config.json").read_text()
    assert env["AWS_SECRET_ACCESS_KEY"] not in stored and env["AWS_ACCESS_KEY_ID"] not in stored
    monkeypatch.setenv("AWS_PROFILE", "nobody")
    r = run_ledger("pull", "team", cwd=clone)
    assert r.returncode == 3 and "nobody" in r.stderr and "Traceback" not in r.stderr, r.stderr
