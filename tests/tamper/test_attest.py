"""`ledger attest` / `verify-attestation`: a signed Statement fails on every kind of change."""

from __future__ import annotations

import base64
import json
import shutil
import subprocess
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from _support import init_ledger, run_ledger

from ledger._canonical import canonical_json
from ledger.attest import attest_run, generate_key, load_private_key, load_public_key
from ledger.attest import verify_attestation as check
from ledger.attest.dsse import PAYLOAD_TYPE, pae, sign_envelope
from ledger.index import Index
from ledger.store import Store


@pytest.fixture
def keys(tmp_path: Path) -> tuple[Path, Path]:
    private = tmp_path / "keys" / "signing.pem"
    private.parent.mkdir()
    pub, _ = generate_key(private)
    return private, pub


def _attest(project: Path, key: Path, run: str) -> Path:
    out = project.parent / "att.json"
    r = run_ledger("attest", run, "--key", str(key), "--out", str(out), cwd=project)
    assert r.returncode == 0, r.stderr
    return out


def _statement(envelope: dict[str, Any]) -> dict[str, Any]:
    value: dict[str, Any] = json.loads(base64.b64decode(envelope["payload"]))
    return value


def test_attest_and_verify_a_run_with_outputs_and_a_verdict(
    project: Path, sealed: tuple[Path, dict[str, str]], keys: tuple[Path, Path]
) -> None:
    ids = sealed[1]
    path = _attest(project, keys[0], ids["good"])
    envelope = json.loads(path.read_text())
    assert envelope["payloadType"] == PAYLOAD_TYPE and len(envelope["signatures"]) == 1
    st = _statement(envelope)
    assert st["_type"] == "https://in-toto.io/Statement/v1"
    assert st["predicateType"] == "https://slsa.dev/provenance/v1"
    assert [s["name"] for s in st["subject"]] == [f"ledger-run/{ids['good']}", "out"]
    store = Store.open(project / ".ledger")
    assert store.refs.get(f"runs/{ids['good']}") == "b3:" + st["subject"][0]["digest"]["blake3"]
    byproducts = st["predicate"]["runDetails"]["byproducts"]
    assert byproducts[0]["annotations"]["status"] == "succeeded"
    assert [b["annotations"]["outcome"] for b in byproducts[1:]] == ["reproduced"]
    deps = {d["name"] for d in st["predicate"]["buildDefinition"]["resolvedDependencies"]}
    assert deps == {"code", "environment", "input/data"}
    head = run_ledger("verify", "--json", cwd=project)
    assert (
        st["predicate"]["buildDefinition"]["internalParameters"]["chainHead"]
        == json.loads(head.stdout)["head"]
    )

    r = run_ledger("verify-attestation", str(path), "--key", str(keys[1]), cwd=project)
    assert r.returncode == 0, r.stdout + r.stderr
    assert "attestation verified" in r.stdout and "out  blake3:" in r.stdout
    # The private key also names its public half; and the env var works.
    r = run_ledger("verify-attestation", str(path), cwd=project, LEDGER_VERIFY_KEY=str(keys[0]))
    assert r.returncode == 0, r.stdout
    # Later runs extend the chain: the attested head stays an ancestor.
    assert run_ledger("record", "--", "python", "train.py", cwd=project).returncode == 0
    r = run_ledger("verify-attestation", str(path), "--key", str(keys[1]), "--json", cwd=project)
    data = json.loads(r.stdout)
    assert r.returncode == 0 and data["ok"] and data["objects_checked"] > 5


def _resign(key: Path, edit: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
    """Change the Statement and sign it again with the real key (a forger who has it)."""

    def run(env: dict[str, Any]) -> None:
        st = _statement(env)
        edit(st)
        env.clear()
        env.update(sign_envelope(canonical_json(st), load_private_key(key)))

    return run


def _payload(edit: Callable[[dict[str, Any]], None]) -> Callable[[dict[str, Any]], None]:
    """Change the Statement inside the envelope, keeping the old signature."""

    def run(env: dict[str, Any]) -> None:
        st = _statement(env)
        edit(st)
        env["payload"] = base64.b64encode(canonical_json(st)).decode()

    return run


def _status(st: dict[str, Any]) -> None:
    st["predicate"]["runDetails"]["byproducts"][0]["annotations"]["status"] = "failed"


def _subject(st: dict[str, Any]) -> None:
    st["subject"][1]["digest"]["blake3"] = "0" * 64


def _outcome(st: dict[str, Any]) -> None:
    st["predicate"]["runDetails"]["byproducts"][1]["annotations"]["outcome"] = "diverged"


def _argv(st: dict[str, Any]) -> None:
    st["predicate"]["buildDefinition"]["externalParameters"]["argv"].append("--lr=0.1")


def _length(st: dict[str, Any]) -> None:
    st["predicate"]["buildDefinition"]["internalParameters"]["chainLength"] += 1


def _drop_verdict(st: dict[str, Any]) -> None:
    del st["predicate"]["runDetails"]["byproducts"][1]


ENVELOPE_EDITS: dict[str, Callable[[Path], Callable[[dict[str, Any]], None]]] = {
    "payload-status": lambda k: _payload(_status),
    "payload-subject": lambda k: _payload(_subject),
    "payload-type": lambda k: lambda env: env.update(payloadType="application/json"),
    "signature-bytes": lambda k: (
        lambda env: env["signatures"][0].update(sig=base64.b64encode(b"\0" * 64).decode())
    ),
    "no-signatures": lambda k: lambda env: env.update(signatures=[]),
    "resigned-status": lambda k: _resign(k, _status),
    "resigned-subject": lambda k: _resign(k, _subject),
    "resigned-outcome": lambda k: _resign(k, _outcome),
    "resigned-argv": lambda k: _resign(k, _argv),
    "resigned-chain-length": lambda k: _resign(k, _length),
    "resigned-dropped-verdict": lambda k: _resign(k, _drop_verdict),
}


@pytest.mark.parametrize("case", sorted(ENVELOPE_EDITS))
def test_changed_attestation_fails(
    project: Path, sealed: tuple[Path, dict[str, str]], keys: tuple[Path, Path], case: str
) -> None:
    path = _attest(project, keys[0], sealed[1]["good"])
    env = json.loads(path.read_text())
    ENVELOPE_EDITS[case](keys[0])(env)
    path.write_text(json.dumps(env))
    r = run_ledger("verify-attestation", str(path), "--key", str(keys[1]), cwd=project)
    if case.startswith("resigned"):  # the signature holds; the records contradict it
        assert r.returncode == 1 and "says something else than the records" in r.stdout
    elif case == "payload-type":
        assert r.returncode == 2 and "payloadType" in r.stderr
    else:
        assert r.returncode == 1 and "no signature verifies" in r.stdout, r.stdout


def test_another_key_fails(
    project: Path, sealed: tuple[Path, dict[str, str]], keys: tuple[Path, Path], tmp_path: Path
) -> None:
    path = _attest(project, keys[0], sealed[1]["good"])
    other, other_pub = tmp_path / "other.pem", tmp_path / "other.pem.pub"
    generate_key(other)
    r = run_ledger("verify-attestation", str(path), "--key", str(other_pub), cwd=project)
    assert r.returncode == 1 and "no signature verifies" in r.stdout


def _drop_after(store: Store, n: int) -> None:
    """Roll the ledger back to its first ``n`` log lines, refs and index included."""
    raw = store.log.path.read_bytes().splitlines(keepends=True)
    for line in reversed(raw[n:]):
        e = json.loads(line)
        p = store.refs.path_of(e["ref"])
        p.unlink() if e["old"] is None else p.write_text(e["old"] + "\n")
    store.log.path.write_bytes(b"".join(raw[:n]))
    with Index(store) as index:
        index.rebuild()


LEDGER_EDITS: dict[str, Callable[[Store], None]] = {
    # The attested head is the last line: dropping it is a rollback.
    "rolled-back": lambda s: _drop_after(s, len(s.log.path.read_bytes().splitlines()) - 1),
    "log-edited": lambda s: s.log.path.write_bytes(
        s.log.path.read_bytes().replace(b'"op":"start"', b'"op":"set"', 1)
    ),
    "log-rewritten": lambda s: _rewrite(s),
    "output-file-deleted": lambda s: _damage_output(s, delete=True),
    "output-file-edited": lambda s: _damage_output(s, delete=False),
    "run-record-edited": lambda s: _flip(s, s.refs.get(next(n for n, _ in s.refs.iter("runs/")))),
}


def _rewrite(store: Store) -> None:
    """A careful forger: every line changed and chained again, refs and index agreeing."""
    from ledger._hashing import hash_bytes

    out, prev = [], None
    for raw in store.log.path.read_bytes().splitlines():
        e = json.loads(raw)
        e["time"], e["prev"] = e["time"].replace(":", "-", 1).replace("-", ":", 1), prev
        e["time"] = e["time"][:17] + "00.000000Z"
        line = canonical_json(e)
        prev = hash_bytes(line)
        out.append(line + b"\n")
    store.log.path.write_bytes(b"".join(out))
    with Index(store) as index:
        index.rebuild()


def _flip(store: Store, oid: str | None) -> None:
    assert oid is not None
    p = store.objects.path_of(oid)
    p.chmod(0o644)
    data = bytearray(p.read_bytes())
    data[len(data) // 2] ^= 1
    p.write_bytes(bytes(data))


def _damage_output(store: Store, *, delete: bool) -> None:
    from ledger.store.walk import reachable

    # The output tree's file blobs: objects reachable from the tree, not from anything else.
    att = json.loads((store.root.parent.parent / "att.json").read_text())
    tree = "b3:" + _statement(att)["subject"][1]["digest"]["blake3"]
    blobs = sorted(reachable(store.objects, [tree]) - {tree})
    assert blobs
    if delete:
        store.objects.delete(blobs[0])
    else:
        _flip(store, blobs[0])


@pytest.mark.parametrize("case", sorted(LEDGER_EDITS))
def test_changed_ledger_fails(
    project: Path, sealed: tuple[Path, dict[str, str]], keys: tuple[Path, Path], case: str
) -> None:
    path = _attest(project, keys[0], sealed[1]["good"])
    store = Store.open(project / ".ledger")
    assert check(store, json.loads(path.read_text()), load_public_key(keys[1])).ok
    LEDGER_EDITS[case](store)
    report = check(store, json.loads(path.read_text()), load_public_key(keys[1]))
    assert not report.ok
    want = {
        "rolled-back": "rolled back or rewritten",
        "log-edited": "is broken at line 2",
        "log-rewritten": "rolled back or rewritten",
        "output-file-deleted": "is missing",
        "output-file-edited": "hash",
        "run-record-edited": "hash",
    }[case]
    assert any(want in p for p in report.problems), report.problems
    r = run_ledger("verify-attestation", str(path), "--key", str(keys[1]), cwd=project)
    assert r.returncode == 1


def test_another_ledger_fails(
    project: Path, sealed: tuple[Path, dict[str, str]], keys: tuple[Path, Path], tmp_path: Path
) -> None:
    path = _attest(project, keys[0], sealed[1]["good"])
    other = tmp_path / "other"
    other.mkdir()
    init_ledger(other)
    r = run_ledger("verify-attestation", str(path), "--key", str(keys[1]), cwd=other)
    assert r.returncode == 1 and "is about ledger" in r.stdout


@pytest.mark.skipif(shutil.which("openssl") is None, reason="openssl not installed")
def test_openssl_keys_work(
    project: Path, sealed: tuple[Path, dict[str, str]], tmp_path: Path
) -> None:
    key, pub = tmp_path / "k.pem", tmp_path / "k.pub.pem"
    subprocess.run(["openssl", "genpkey", "-algorithm", "ed25519", "-out", str(key)], check=True)
    subprocess.run(["openssl", "pkey", "-in", str(key), "-pubout", "-out", str(pub)], check=True)
    out = tmp_path / "a.json"
    r = run_ledger(
        "attest", sealed[1]["bad"], "-o", str(out), cwd=project, LEDGER_SIGNING_KEY=str(key)
    )
    assert r.returncode == 0, r.stderr
    r = run_ledger("verify-attestation", str(out), "--key", str(pub), cwd=project)
    assert r.returncode == 0, r.stdout


def test_pae_matches_the_dsse_spec() -> None:
    # The example in the DSSE protocol document.
    assert pae("http://example.com/HelloWorld", b"hello world") == (
        b"DSSEv1 29 http://example.com/HelloWorld 11 hello world"
    )


@pytest.mark.parametrize(
    "args, message",
    [
        (["attest", "RUN"], "no key given"),
        (["attest", "RUN", "--key", "{ledger}/k.pem"], "inside the ledger"),
        (["attest", "RUN", "--key", "{tmp}/missing.pem"], "cannot read key"),
        (["attest", "RUN", "--key", "{tmp}/plain.txt"], "not a PEM private key"),
        (["attest", "nosuchrun", "--key", "{key}"], "no run"),
        (["verify-attestation", "{tmp}/plain.txt", "--key", "{pub}"], "is not JSON"),
        (["verify-attestation", "{tmp}/obj.json", "--key", "{pub}"], "not a DSSE envelope"),
        (["keygen", "{key}"], "exists"),
    ],
)
def test_bad_input_is_exit_2(
    project: Path,
    sealed: tuple[Path, dict[str, str]],
    keys: tuple[Path, Path],
    tmp_path: Path,
    args: list[str],
    message: str,
) -> None:
    (tmp_path / "plain.txt").write_text("hello\n")
    (tmp_path / "obj.json").write_text('{"payload": 1}')
    shutil.copy(keys[0], project / ".ledger" / "k.pem")
    subs = {
        "{ledger}": str(project / ".ledger"),
        "{tmp}": str(tmp_path),
        "{key}": str(keys[0]),
        "{pub}": str(keys[1]),
        "RUN": sealed[1]["good"],
    }
    argv = []
    for a in args:
        for k, v in subs.items():
            a = a.replace(k, v)
        argv.append(a)
    r = run_ledger(*argv, cwd=project, LEDGER_SIGNING_KEY="")
    assert r.returncode == 2, r.stdout + r.stderr
    assert message in r.stderr and "Traceback" not in r.stderr


def test_a_running_run_cannot_be_attested(project: Path, keys: tuple[Path, Path]) -> None:
    store = Store.open(project / ".ledger")
    raw = store.log.path.read_bytes().splitlines(keepends=True)
    first_seal = next(i for i, line in enumerate(raw) if b'"op":"seal"' in line)
    _drop_after(store, first_seal)  # the first run is back to its start record
    run_id = json.loads(raw[0])["ref"].split("/", 1)[1]
    with pytest.raises(Exception, match="still running"):
        attest_run(store, run_id, load_private_key(keys[0]))


def test_a_signed_statement_with_malformed_digests_is_reported(
    project: Path, sealed: tuple[Path, dict[str, str]], keys: tuple[Path, Path]
) -> None:
    path = _attest(project, keys[0], sealed[1]["good"])
    env = json.loads(path.read_text())

    def garble(st: dict[str, Any]) -> None:
        st["subject"][1]["digest"]["blake3"] = "../../etc/passwd"

    _resign(keys[0], garble)(env)
    store = Store.open(project / ".ledger")
    report = check(store, env, load_public_key(keys[1]))
    assert any("not an object id" in p for p in report.problems), report.problems


def test_attest_refuses_a_ledger_whose_log_chain_is_broken_naming_the_first_break(
    store: Store, tmp_path: Path
) -> None:
    """Nothing is signed over a broken chain: `ledger attest` stops with the first problem
    `ledger verify` would report (here a line dropped: its seq, then its link)."""
    from ledger.errors import IntegrityError

    for i in range(3):
        store.set_ref(f"notes/r{i}", store.put_json({"kind": "note", "schema": 1, "i": i}))
    lines = store.log.path.read_bytes().splitlines(keepends=True)
    store.log.path.write_bytes(lines[0] + lines[2])
    problems, _ = store.log.check()
    assert len({p.message for p in problems}) >= 2, problems
    generate_key(tmp_path / "key")
    with pytest.raises(IntegrityError) as e:
        attest_run(store, "notes/r0", load_private_key(tmp_path / "key"))
    assert f"the log chain is broken ({problems[0].message}); not attesting" in str(e.value)


def test_attest_refuses_an_empty_ledger(store: Store, tmp_path: Path) -> None:
    from ledger.errors import UsageError

    generate_key(tmp_path / "key")
    with pytest.raises(UsageError, match="the ledger has no history to attest"):
        attest_run(store, "anything", load_private_key(tmp_path / "key"))


def test_attest_stops_when_the_log_changes_between_its_two_reads(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The head is read, then the refs at that head: a log rewritten in between (the refs
    read finds no such line) stops the attestation, to be run again, rather than signing."""
    import ledger.attest.check as check_module
    from ledger.errors import IntegrityError

    store.set_ref("notes/r0", store.put_json({"kind": "note", "schema": 1}))
    monkeypatch.setattr(check_module, "refs_at", lambda log, head: None)
    generate_key(tmp_path / "key")
    with pytest.raises(IntegrityError, match="the ledger's log has no line"):
        attest_run(store, "notes/r0", load_private_key(tmp_path / "key"))


def test_an_attestation_rejected_before_its_objects_reports_none_checked(
    store: Store, tmp_path: Path
) -> None:
    """A signature that does not verify, or a Statement that is not ledger's, stops the check
    before any object is re-hashed: the report (and `--json`'s objects_checked) says 0."""
    generate_key(tmp_path / "a")
    public_b, _ = generate_key(tmp_path / "b")
    envelope = sign_envelope(canonical_json({"_type": "x"}), load_private_key(tmp_path / "a"))
    report = check(store, envelope, load_public_key(public_b))
    assert not report.ok and "no signature verifies" in report.problems[0]
    assert report.objects_checked == 0
    report = check(store, envelope, load_public_key(tmp_path / "a.pub"))
    assert not report.ok and "not a ledger run attestation" in report.problems[0]
    assert report.objects_checked == 0


def test_a_resigned_statement_with_a_field_of_another_shape_names_that_field(
    project: Path, sealed: tuple[Path, dict[str, str]], keys: tuple[Path, Path]
) -> None:
    """A forger who holds the key replaces an object of the Statement by a string: the check
    names the field that differs from the records, as for a changed value."""
    path = _attest(project, keys[0], sealed[1]["good"])
    env = json.loads(path.read_text())

    def flatten(st: dict[str, Any]) -> None:
        st["predicate"]["runDetails"]["byproducts"][0]["annotations"] = "succeeded"

    _resign(keys[0], flatten)(env)
    path.write_text(json.dumps(env))
    r = run_ledger("verify-attestation", str(path), "--key", str(keys[1]), cwd=project)
    assert r.returncode == 1, r.stdout + r.stderr
    assert "records at its head: predicate.runDetails.byproducts[0].annotations" in r.stdout


def test_an_envelope_that_cannot_be_read_is_a_usage_error(tmp_path: Path) -> None:
    from ledger.attest import read_envelope
    from ledger.errors import UsageError

    for path in (tmp_path / "absent.json", tmp_path):
        with pytest.raises(UsageError, match="cannot read"):
            read_envelope(path)


def test_a_statement_of_another_predicate_type_is_not_a_ledger_attestation(
    store: Store, tmp_path: Path
) -> None:
    """Both the Statement type and the predicate type must be ledger's: an in-toto Statement
    with another predicate (signed by the right key) is refused as such."""
    from ledger.attest.statement import PREDICATE_TYPE, STATEMENT_TYPE

    public, _ = generate_key(tmp_path / "k")
    # other types sorting before and after ledger's
    others = ["https://example.org/other/v1", "https://zz.example.org/other/v1"]
    for st in [
        *({"_type": STATEMENT_TYPE, "predicateType": other} for other in others),
        *({"_type": other, "predicateType": PREDICATE_TYPE} for other in others),
    ]:
        env = sign_envelope(canonical_json(st), load_private_key(tmp_path / "k"))
        report = check(store, env, load_public_key(public))
        assert len(report.problems) == 1 and not report.ok
        assert report.problems[0].startswith("not a ledger run attestation"), report.problems


def test_a_ledger_statement_without_the_fields_ledger_writes_is_reported(
    store: Store, tmp_path: Path
) -> None:
    from ledger.attest.statement import PREDICATE_TYPE, STATEMENT_TYPE

    public, _ = generate_key(tmp_path / "k")
    st = {"_type": STATEMENT_TYPE, "predicateType": PREDICATE_TYPE, "predicate": {}}
    env = sign_envelope(canonical_json(st), load_private_key(tmp_path / "k"))
    report = check(store, env, load_public_key(public))
    assert report.problems == ["the Statement lacks a field ledger writes ('buildDefinition')"]
    assert report.objects_checked == 0


def test_an_attestation_about_another_ledger_is_reported_whatever_its_id(
    store: Store, tmp_path: Path
) -> None:
    """The ledger id the Statement names must be this ledger's: ids sorting before and after
    it are both reported (ledger ids are random, so one pair of ledgers shows one side only)."""
    store.set_ref("notes/r0", store.put_json({"kind": "note", "schema": 1}))
    public, _ = generate_key(tmp_path / "k")
    none = "b3:" + "0" * 64
    for other in ("", "~" * 8):
        st = _bare_statement(store, none, none)
        st["predicate"]["buildDefinition"]["internalParameters"]["ledgerId"] = other
        env = sign_envelope(canonical_json(st), load_private_key(tmp_path / "k"))
        report = check(store, env, load_public_key(public))
        said = f"the attestation is about ledger {other}, this is {store.id}"
        assert said in report.problems, report.problems


def _bare_statement(store: Store, record: str, contract: str) -> dict[str, Any]:
    """A ledger Statement at this ledger's head naming ``record`` and ``contract``, no more."""
    from ledger.attest.statement import PREDICATE_TYPE, STATEMENT_TYPE
    from ledger.store.anchor import chain_head

    head, _ = chain_head(store.log)
    params = {"chainHead": head, "ledgerId": store.id, "runRecord": record, "contract": contract}
    return {
        "_type": STATEMENT_TYPE,
        "predicateType": PREDICATE_TYPE,
        "subject": [],
        "predicate": {
            "buildDefinition": {"internalParameters": params, "resolvedDependencies": []},
            "runDetails": {"metadata": {"invocationId": "r"}, "byproducts": []},
        },
    }


def test_each_object_an_attestation_names_is_rehashed_once_and_a_missing_one_is_named(
    store: Store, tmp_path: Path
) -> None:
    present = store.put_json({"kind": "note", "schema": 1})
    store.set_ref("notes/r0", present)
    other = store.put_json({"kind": "note", "schema": 1, "i": 2})
    gone = "b3:" + "0" * 64
    public, _ = generate_key(tmp_path / "k")
    for record, contract, checked in ((present, other, 2), (present, gone, 1)):
        st = _bare_statement(store, record, contract)
        env = sign_envelope(canonical_json(st), load_private_key(tmp_path / "k"))
        report = check(store, env, load_public_key(public))
        assert report.objects_checked == checked
        assert (f"object {gone} is missing" in report.problems) == (contract == gone)
        # no run "r": the Statement cannot be rebuilt from the records, and says so
        assert any(p.startswith("the ledger cannot rebuild the Statement") for p in report.problems)


def test_verify_attestation_stops_when_the_log_changes_between_its_two_reads(
    store: Store, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    import ledger.attest.check as check_module
    from ledger.errors import IntegrityError

    note = store.put_json({"kind": "note", "schema": 1})
    store.set_ref("notes/r0", note)
    public, _ = generate_key(tmp_path / "k")
    env = sign_envelope(
        canonical_json(_bare_statement(store, note, note)), load_private_key(tmp_path / "k")
    )
    monkeypatch.setattr(check_module, "refs_at", lambda log, head: None)
    with pytest.raises(IntegrityError, match="the ledger's log has no line"):
        check(store, env, load_public_key(public))


def test_an_attestation_whose_head_is_the_logs_first_line_verifies(
    tmp_path: Path, keys: tuple[Path, Path]
) -> None:
    """A run recorded outside git (no source ref) imported alone into an empty ledger: its
    import line is the log's only line, the head the attestation names (seq 0, which a
    ``seq or 1`` would take for another length)."""
    private, public = keys
    source, here = tmp_path / "source", tmp_path / "here"
    for folder in (source, here):
        folder.mkdir()
        init_ledger(folder)
    r = run_ledger("record", "-n", "alone", "--", "python", "-c", "print(1)", cwd=source)
    assert r.returncode == 0, r.stderr
    package = tmp_path / "alone.tar"
    assert run_ledger("export", "alone", "-o", str(package), cwd=source).returncode == 0
    assert run_ledger("import", str(package), cwd=here).returncode == 0
    assert len((here / ".ledger" / "log" / "chain.jsonl").read_bytes().splitlines()) == 1
    out = _attest(here, private, "alone")
    r = run_ledger("verify-attestation", str(out), "--key", str(public), cwd=here)
    assert r.returncode == 0 and "attestation verified" in r.stdout, r.stdout + r.stderr
