"""Which remote a command means (issue 32, point 10): ``ledger push teem``, a typo of the
configured ``team``, once created a path remote ``teem/`` in the working directory and pushed
everything there. A word that is neither a configured remote nor written as a path or URL is
refused (exit 2, the remotes listed, a close name offered, nothing written); with one remote,
or a default one, ``push`` and ``pull`` need no name."""

from __future__ import annotations

import json
import subprocess
from pathlib import Path

import pytest
from _share_lab import git_env, make_repo, record
from _support import init_ledger, run_ledger

from ledger.errors import UsageError
from ledger.share.remote import is_explicit_location, remote_url


def _files(root: Path) -> list[str]:
    return sorted(str(p.relative_to(root)) for p in root.rglob("*"))


def _porcelain(repo: Path) -> str:
    return subprocess.run(
        ["git", "status", "--porcelain", "--ignored"],
        cwd=repo,
        env=git_env(),
        capture_output=True,
        text=True,
        check=True,
    ).stdout


@pytest.fixture
def repo(tmp_path: Path) -> Path:
    return make_repo(tmp_path / "repo")


@pytest.mark.parametrize("command", ["push", "pull"])
def test_a_typo_of_a_remote_name_is_refused_and_nothing_is_written(
    repo: Path, tmp_path: Path, command: str
) -> None:
    record(repo)
    team = tmp_path / "shared" / "team"
    assert run_ledger("remote", "add", "team", str(team), cwd=repo).returncode == 0
    assert run_ledger("remote", "add", "origin", "s3://bucket/runs", cwd=repo).returncode == 0
    before, status = _files(tmp_path), _porcelain(repo)
    r = run_ledger(command, "teem", cwd=repo)
    assert r.returncode == 2, r.stdout + r.stderr
    assert "'teem' is not a configured remote" in r.stderr, r.stderr
    assert "did you mean 'team'?" in r.stderr, r.stderr
    assert f"team ({team})" in r.stderr and "origin (s3://bucket/runs)" in r.stderr, r.stderr
    assert "./teem" in r.stderr and "Traceback" not in r.stderr
    assert not (repo / "teem").exists()
    assert _files(tmp_path) == before and _porcelain(repo) == status
    # From a subfolder too: the word is never a folder to create.
    (repo / "sub").mkdir()
    r = run_ledger(command, "teem", cwd=repo / "sub")
    assert r.returncode == 2 and not (repo / "sub" / "teem").exists(), r.stderr


def test_a_word_far_from_every_name_lists_them_without_a_guess(repo: Path) -> None:
    assert run_ledger("remote", "add", "team", "/srv/runs", cwd=repo).returncode == 0
    r = run_ledger("push", "zzz", cwd=repo)
    assert r.returncode == 2 and "did you mean" not in r.stderr, r.stderr
    assert "configured remotes: team (/srv/runs)" in r.stderr, r.stderr
    assert not (repo / "zzz").exists()


def test_with_no_remote_a_bare_word_says_how_to_add_one(repo: Path) -> None:
    for args in (("push", "team"), ("push",), ("pull",)):
        r = run_ledger(*args, cwd=repo)
        assert r.returncode == 2, r.stderr
        assert "ledger remote add NAME URL" in r.stderr, r.stderr
    assert not (repo / "team").exists()


def test_one_remote_needs_no_name_for_push_and_pull(repo: Path, tmp_path: Path) -> None:
    run_id = record(repo)
    team = tmp_path / "team"
    assert run_ledger("remote", "add", "team", str(team), cwd=repo).returncode == 0
    r = run_ledger("push", "--json", cwd=repo)
    assert r.returncode == 0, r.stderr
    assert json.loads(r.stdout)["runs"] == [run_id]
    assert (team / "ledgerremote.json").is_file()

    review = tmp_path / "review"
    review.mkdir()
    init_ledger(review)
    assert run_ledger("remote", "add", "team", str(team), cwd=review).returncode == 0
    r = run_ledger("pull", "--json", cwd=review)
    assert r.returncode == 0, r.stderr
    assert f"runs/{run_id}" in json.loads(r.stdout)["refs_added"]


def test_several_remotes_need_a_name_or_a_default(repo: Path, tmp_path: Path) -> None:
    record(repo)
    a, b = tmp_path / "a", tmp_path / "b"
    assert run_ledger("remote", "add", "a", str(a), cwd=repo).returncode == 0
    assert run_ledger("remote", "add", "b", str(b), cwd=repo).returncode == 0
    r = run_ledger("push", cwd=repo)
    assert r.returncode == 2, r.stderr
    assert "2 are configured with no default" in r.stderr, r.stderr
    assert f"a ({a})" in r.stderr and f"b ({b})" in r.stderr and "remote default" in r.stderr
    assert not a.exists() and not b.exists()

    r = run_ledger("remote", "default", cwd=repo)
    assert r.returncode == 1 and r.stdout == "" and "no default remote" in r.stderr
    r = run_ledger("remote", "default", "c", cwd=repo)
    assert r.returncode == 2 and "no remote c" in r.stderr, r.stderr
    assert run_ledger("remote", "default", "b", cwd=repo).returncode == 0
    assert run_ledger("remote", "default", cwd=repo).stdout == "b\n"
    shown = run_ledger("remote", "default", "--json", cwd=repo)
    assert shown.returncode == 0 and json.loads(shown.stdout) == {"default": "b"}
    listed = run_ledger("remote", "list", cwd=repo).stdout.splitlines()
    assert [line.split() for line in listed] == [["a", str(a)], ["b", str(b), "(default)"]]
    assert json.loads(run_ledger("remote", "list", "--json", cwd=repo).stdout) == {
        "a": str(a),
        "b": str(b),
    }
    assert run_ledger("push", cwd=repo).returncode == 0
    assert (b / "ledgerremote.json").is_file() and not a.exists()

    r = run_ledger("remote", "default", "a", "--unset", cwd=repo)
    assert r.returncode == 2 and "not both" in r.stderr
    assert run_ledger("remote", "default", "--unset", cwd=repo).returncode == 0
    assert run_ledger("remote", "default", cwd=repo).returncode == 1
    shown = run_ledger("remote", "default", "--json", cwd=repo)
    assert shown.returncode == 0 and json.loads(shown.stdout) == {"default": None}
    assert run_ledger("push", cwd=repo).returncode == 2

    # Removing the default remote leaves no default naming a remote that is gone.
    assert run_ledger("remote", "default", "a", cwd=repo).returncode == 0
    assert run_ledger("remote", "remove", "a", cwd=repo).returncode == 0
    assert "default_remote" not in json.loads((repo / ".ledger" / "config.json").read_text())
    assert run_ledger("push", cwd=repo).returncode == 0  # b, now the only one


def test_a_remote_written_as_a_path_or_url_is_used_as_it_stands(repo: Path, tmp_path: Path) -> None:
    record(repo)
    assert run_ledger("remote", "add", "team", str(tmp_path / "team"), cwd=repo).returncode == 0
    assert run_ledger("push", "./teem", cwd=repo).returncode == 0
    assert (repo / "teem" / "ledgerremote.json").is_file()
    elsewhere = tmp_path / "elsewhere"
    assert run_ledger("push", f"file://{elsewhere}", cwd=repo).returncode == 0
    assert (elsewhere / "ledgerremote.json").is_file()
    r = run_ledger("pull", "../elsewhere", "--json", cwd=repo)
    assert r.returncode == 0, r.stderr


def test_seed_jobs_refuse_a_typo_of_their_remote_before_anything_runs(
    repo: Path, tmp_path: Path
) -> None:
    run_id = record(repo)
    assert run_ledger("remote", "add", "team", str(tmp_path / "team"), cwd=repo).returncode == 0
    before = run_ledger("ls", "--replays", "--json", cwd=repo).stdout
    r = run_ledger(
        "replay", run_id, "--mode", "seeds", "--seeds", "2", "--seed-arg=--seed",
        "--executor", "submitit-local", "--job-remote", "teem", cwd=repo,
    )  # fmt: skip
    assert r.returncode == 2, r.stdout + r.stderr
    assert "'teem' is not a configured remote" in r.stderr and "did you mean 'team'?" in r.stderr
    assert not (repo / "teem").exists() and not (tmp_path / "team").exists()
    assert run_ledger("ls", "--replays", "--json", cwd=repo).stdout == before


def test_clone_of_a_bare_word_is_refused_and_makes_nothing(tmp_path: Path) -> None:
    r = run_ledger("clone", "teem", str(tmp_path / "c"), cwd=tmp_path)
    assert r.returncode == 2, r.stderr
    assert "'teem' is not a path or URL" in r.stderr and "./teem" in r.stderr, r.stderr
    assert _files(tmp_path) == []


# -- the resolver itself ------------------------------------------------------------------------
REMOTES = {"team": "/srv/team", "origin": "s3://b/p"}


@pytest.mark.parametrize(
    ("text", "explicit"),
    [
        ("team", False),
        ("teem", False),
        ("my.remote", False),
        ("a/b", False),
        (".", True),
        ("..", True),
        ("./x", True),
        ("../x", True),
        ("/x", True),
        ("~/x", True),
        ("~", True),
        ("file:///x", True),
        ("s3://bucket/p", True),
        (".x", False),
        ("..x", False),
    ],
)
def test_what_counts_as_written_as_a_location(text: str, explicit: bool) -> None:
    assert is_explicit_location(text) is explicit


def test_a_name_wins_and_a_location_passes_through() -> None:
    assert remote_url(REMOTES, None, "team") == "/srv/team"
    assert remote_url(REMOTES, "origin", "team") == "/srv/team"
    assert remote_url(REMOTES, None, "./team") == "./team"
    assert remote_url({}, None, "s3://b/q") == "s3://b/q"


def test_no_name_takes_the_default_or_the_only_remote() -> None:
    assert remote_url(REMOTES, "origin", None) == "s3://b/p"
    assert remote_url({"team": "/srv/team"}, None, None) == "/srv/team"
    with pytest.raises(UsageError, match="2 are configured with no default") as e:
        remote_url(REMOTES, None, None)
    assert e.value.hint is not None and "origin (s3://b/p), team (/srv/team)" in e.value.hint
    with pytest.raises(UsageError, match="none is configured"):
        remote_url({}, None, None)


def test_a_default_naming_a_remote_that_is_gone_is_refused() -> None:
    with pytest.raises(UsageError, match="the default remote 'old' is not configured") as e:
        remote_url({"team": "/srv/team"}, "old", None)
    assert e.value.hint is not None and "team (/srv/team)" in e.value.hint


def test_a_close_name_is_offered_only_when_close() -> None:
    with pytest.raises(UsageError) as e:
        remote_url(REMOTES, None, "orgin")
    assert e.value.hint is not None and e.value.hint.startswith("did you mean 'origin'?")
    with pytest.raises(UsageError) as e:
        remote_url(REMOTES, None, "backup")
    assert e.value.hint is not None and e.value.hint.startswith("configured remotes: ")
    with pytest.raises(UsageError) as e:
        remote_url({}, None, "team")
    assert e.value.hint is not None and e.value.hint.startswith("no remote is configured")
