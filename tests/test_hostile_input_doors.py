"""Every door a YAML, JSON or TOML file comes in by refuses an alias bomb and deep nesting at
once, with a message and exit status, not a hang, a traceback or a crash (``ledger._parse``).

Before: 370 bytes of aliases given to ``record --config`` ran 113 s and took 2.5 GB, and a
YAML nested 100,000 deep crashed libyaml's composer (SIGSEGV); a deep check spec, gate spec,
project config, MLflow ``meta.yaml``, package manifest, attestation or remote marker ended in
``RecursionError``. Each case runs the real command in a child process: a hang would blow
``run_ledger``'s timeout.
"""

from __future__ import annotations

import io
import json
import tarfile
from pathlib import Path

import pytest
import zstandard
from _support import new_project, run_ledger

# 9 ** 8 = 43 million nodes once the aliases are expanded; 400 bytes on disk.
LAUGHS = "a: &a [x, x, x, x, x, x, x, x, x]\n" + "".join(
    f"{k}: &{k} [{', '.join([f'*{p}'] * 9)}]\n" for p, k in zip("abcdefgh", "bcdefghi", strict=True)
)
DEEP = 100_000
DEEP_YAML = "x: " + "[" * DEEP + "]" * DEEP + "\n"
DEEP_JSON = '{"x": ' + "[" * DEEP + "]" * DEEP + "}"
DEEP_TOML = "x = " + "[" * DEEP + "]" * DEEP + "\n"


def refused(r: object, code: int, *words: str) -> None:
    stderr = r.stderr  # type: ignore[attr-defined]
    assert r.returncode == code, (r.returncode, stderr[-2000:])  # type: ignore[attr-defined]
    assert "Traceback" not in stderr, stderr[-2000:]
    assert stderr.startswith("ledger: error: "), stderr[-2000:]
    for w in words:
        assert w in stderr, stderr[-2000:]


@pytest.fixture
def proj(tmp_path: Path) -> Path:
    return new_project(tmp_path / "proj")


def runs_of(proj: Path) -> list[Path]:
    return sorted((proj / ".ledger" / "refs").rglob("*"))


@pytest.mark.parametrize(
    ("name", "text", "words"),
    [
        ("bomb.yaml", LAUGHS, "expands to more than 1000000 nodes"),
        ("deep.yaml", DEEP_YAML, "nested more than 100 levels deep"),
        ("deep.json", DEEP_JSON, "nested more than 100 levels deep"),
        ("deep.toml", DEEP_TOML, "nested more than 100 levels deep"),
        ("bomb", LAUGHS, "expands to more than 1000000 nodes"),  # no extension: sniffed
    ],
    ids=["yaml-bomb", "yaml-deep", "json-deep", "toml-deep", "sniffed-bomb"],
)
def test_record_config(proj: Path, name: str, text: str, words: str) -> None:
    (proj / name).write_text(text)
    before = runs_of(proj)
    r = run_ledger("record", "--config", name, "--", "python", "-c", "pass", cwd=proj)
    refused(r, 2, f"{name}:", "refused", words)
    assert runs_of(proj) == before  # refused before the run started


def test_record_project_config(proj: Path) -> None:
    (proj / ".ledger" / "config.toml").write_text("[record]\n" + DEEP_TOML)
    r = run_ledger("record", "--", "python", "-c", "pass", cwd=proj)
    refused(r, 2, "config.toml", "nested more than 100 levels deep")


@pytest.mark.parametrize(
    "text", [LAUGHS + "claims: [*i]\n", "claims: " + DEEP_YAML[3:]], ids=["bomb", "deep"]
)
def test_audit_claims(proj: Path, text: str) -> None:
    (proj / "claims.yaml").write_text(text)
    r = run_ledger("audit", "claims.yaml", cwd=proj)
    refused(r, 2, "claims.yaml:")


SPEC_BOMB = LAUGHS.replace("i: &i", "entry: nowhere:spec\nsettings: {all: *i}\ni: &i")


@pytest.mark.parametrize(
    ("text", "words"),
    [
        (SPEC_BOMB, "expands to more than"),
        ("entry: nowhere:spec\n" + DEEP_YAML, "nested more than 100 levels deep"),
    ],
    ids=["bomb", "deep"],
)
def test_check_and_gate_specs(proj: Path, text: str, words: str) -> None:
    (proj / "spec.yaml").write_text(text)
    r = run_ledger("check", "spec.yaml", "--no-store", cwd=proj)
    refused(r, 2, "spec spec.yaml", words)
    r = run_ledger("gate", "weights.pt", "--spec", "spec.yaml", "--no-store", cwd=proj)
    refused(r, 2, "spec spec.yaml", words)


def test_mlflow_meta_yaml(proj: Path) -> None:
    store = proj / "mlruns"
    (store / "0").mkdir(parents=True)
    (store / "0" / "meta.yaml").write_text("name: " + DEEP_YAML[3:])
    r = run_ledger("import", "mlflow", str(store), "--dry-run", cwd=proj)
    assert "Traceback" not in r.stderr and r.returncode != 0, r.stderr[-2000:]
    assert "meta.yaml" in r.stderr


def test_package_manifest(proj: Path, tmp_path: Path) -> None:
    manifest = DEEP_JSON.encode()
    raw = io.BytesIO()
    with tarfile.open(fileobj=raw, mode="w") as tar:
        info = tarfile.TarInfo("manifest.json")
        info.size = len(manifest)
        tar.addfile(info, io.BytesIO(manifest))
    pkg = tmp_path / "deep.ledgerpkg"
    pkg.write_bytes(zstandard.ZstdCompressor().compress(raw.getvalue()))
    r = run_ledger("import", str(pkg), cwd=proj)
    refused(r, 2, "nested more than")


def test_attestation_envelope(proj: Path, tmp_path: Path) -> None:
    assert run_ledger("keygen", str(tmp_path / "key"), cwd=proj).returncode == 0
    pub = next(p for p in tmp_path.iterdir() if p.name.startswith("key") and p.suffix == ".pub")
    (proj / "att.json").write_text(DEEP_JSON)
    r = run_ledger("verify-attestation", "att.json", "--key", str(pub), cwd=proj)
    refused(r, 2, "att.json is not JSON", "nested more than")


def test_remote_marker(proj: Path, tmp_path: Path) -> None:
    remote = tmp_path / "remote"
    remote.mkdir()
    # Deep but small: a marker over 64 KiB is refused for its size before it is parsed.
    (remote / "ledgerremote.json").write_text('{"x": ' + "[" * 1000 + "]" * 1000 + "}")
    r = run_ledger("pull", str(remote), cwd=proj)
    refused(r, 3, "ledgerremote.json", "nested more than")


def test_a_small_config_with_aliases_still_records(proj: Path) -> None:
    (proj / "cfg.yaml").write_text("base: &b {lr: 0.1, layers: [1, 2]}\nmodel: *b\n")
    args = ("--name", "aliased", "--config", "cfg.yaml", "--", "python", "-c", "pass")
    r = run_ledger("record", *args, cwd=proj)
    assert r.returncode == 0, r.stderr
    shown = run_ledger("show", "aliased", "--json", cwd=proj)
    assert shown.returncode == 0, shown.stderr
    assert '"model": {"layers": [1, 2], "lr": 0.1}' in json.dumps(json.loads(shown.stdout))
