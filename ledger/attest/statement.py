"""The in-toto Statement about one run, with a SLSA Provenance v1 predicate.

Everything in it is read from hashed records named by the refs as they stood at one chain
head, so the same function rebuilds it at verification time and any difference is a change.
Digests use the ``blake3`` algorithm name with the hex of the ledger's object id.
"""

from __future__ import annotations

from typing import Any

from ..errors import LedgerError, UnknownIdError, UsageError
from ..store import Store

__all__ = ["BUILD_TYPE", "PREDICATE_TYPE", "STATEMENT_TYPE", "build_statement", "object_ids"]

STATEMENT_TYPE = "https://in-toto.io/Statement/v1"
PREDICATE_TYPE = "https://slsa.dev/provenance/v1"
BUILD_TYPE = "https://ledger-repro.dev/attestation/run/v1"


def _digest(oid: str) -> dict[str, str]:
    return {"blake3": oid.removeprefix("b3:")}


def _get(store: Store, oid: Any, what: str) -> dict[str, Any]:
    if not isinstance(oid, str):
        raise LedgerError(f"the run record names no {what}")
    value = store.get_json(oid)  # re-hashed on read
    if not isinstance(value, dict):
        raise LedgerError(f"{what} {oid} is not a record")
    return value


def _verdicts(store: Store, run_id: str, refs: dict[str, str]) -> list[dict[str, Any]]:
    out = []
    for ref, oid in sorted(refs.items()):
        parts = ref.split("/")
        if parts[0] != "verdicts" or run_id not in parts[1:]:
            continue
        v = _get(store, oid, "verdict")
        out.append(
            {
                "name": ref,
                "digest": _digest(oid),
                "annotations": {
                    "mode": v.get("mode"),
                    "outcome": v.get("outcome"),
                    "summary": v.get("summary"),
                    "original": v.get("original"),
                    "replays": v.get("replays"),
                },
            }
        )
    return out


def build_statement(
    store: Store, run_id: str, refs: dict[str, str], head: str, length: int
) -> dict[str, Any]:
    """The Statement for ``run_id`` as ``refs`` (the fold of the log up to ``head``) say."""
    oid = refs.get(f"runs/{run_id}")
    if oid is None:
        raise UnknownIdError(f"no run {run_id} at chain head {head}")
    run = _get(store, oid, "run")
    if run.get("status") == "running":
        raise UsageError(f"run {run_id} is still running", hint="attest a run once it is sealed")
    if run.get("contract") is None:
        raise UsageError(
            f"run {run_id} was imported (from {(run.get('imported') or {}).get('source')}): "
            "it has no contract, so there is no build to attest",
            hint="attest runs recorded with `ledger record`",
        )
    contract = _get(store, run.get("contract"), "contract")
    code = _get(store, contract.get("code"), "code snapshot")
    env = _get(store, contract.get("environment"), "environment")

    subjects = [
        {"name": out["path"], "digest": _digest(out["tree"])}
        for out in run.get("outputs") or []
        if out.get("tree")
    ]
    # Checkpoints the run saved and still keeps (retention may have dropped older ones).
    kept = {oid for ref, oid in refs.items() if ref.startswith(f"checkpoints/{run_id}/")}
    seen: set[str] = set()
    for cp in run.get("checkpoints") or []:
        digest = cp.get("checkpoint_digest")
        if cp.get("event") != "save" or digest not in kept or digest in seen:
            continue
        seen.add(digest)
        subjects.append({"name": f"checkpoint/step-{cp.get('step')}", "digest": _digest(digest)})
    # The run record itself is always a subject: an attestation names at least one.
    subjects.insert(0, {"name": f"ledger-run/{run_id}", "digest": _digest(oid)})

    commit = code.get("commit")
    dependencies: list[dict[str, Any]] = [
        {
            "name": "code",
            "digest": {"blake3": contract["code"].removeprefix("b3:")}
            | ({"gitCommit": commit} if commit else {}),
            "annotations": {
                "dirty": code.get("dirty"),
                "branch": code.get("branch"),
                "remotes": code.get("remotes"),
                "codeDigest": contract.get("code_digest"),
            },
        },
        {
            "name": "environment",
            "digest": _digest(contract["environment"]),
            "annotations": {
                "envDigest": contract.get("env_digest"),
                "python": (env.get("python") or {}).get("version"),
                "os": env.get("os"),
                "packages": len(env.get("packages") or {}),
            },
        },
    ]
    for item in contract.get("inputs") or []:
        dependencies.append(
            {
                "name": f"input/{item.get('path')}",
                "digest": _digest(str(item.get("digest"))),
                "annotations": {
                    "kind": item.get("kind"),
                    "files": item.get("n_files"),
                    "bytes": item.get("n_bytes"),
                    "manifest": item.get("files"),
                },
            }
        )
    predicate = {
        "buildDefinition": {
            "buildType": BUILD_TYPE,
            "externalParameters": {
                "argv": contract.get("argv"),
                "name": run.get("name"),
                "tags": run.get("tags"),
                "replayOf": run.get("replay_of"),
            },
            "internalParameters": {
                "ledgerId": store.id,
                "chainHead": head,
                "chainLength": length,
                "runRecord": oid,
                "contract": run.get("contract"),
                "contractDigest": run.get("contract_digest"),
            },
            "resolvedDependencies": dependencies,
        },
        "runDetails": {
            "builder": {"id": f"https://ledger-repro.dev/ledger@{run.get('ledger_version')}"},
            "metadata": {
                "invocationId": run_id,
                "startedOn": run.get("started"),
                "finishedOn": run.get("ended"),
            },
            "byproducts": [
                {
                    "name": f"ledger-run/{run_id}",
                    "digest": _digest(oid),
                    "annotations": {
                        "status": run.get("status"),
                        "exitCode": run.get("exit_code"),
                        "signal": run.get("signal"),
                        "wallSeconds": run.get("wall_seconds"),
                    },
                },
                *_verdicts(store, run_id, refs),
            ],
        },
    }
    return {
        "_type": STATEMENT_TYPE,
        "subject": subjects,
        "predicateType": PREDICATE_TYPE,
        "predicate": predicate,
    }


def object_ids(statement: dict[str, Any]) -> list[str]:
    """The ledger objects a Statement names: its subjects and the records it cites."""
    params = statement["predicate"]["buildDefinition"]["internalParameters"]
    details = statement["predicate"]["runDetails"]
    deps = statement["predicate"]["buildDefinition"]["resolvedDependencies"]
    oids = ["b3:" + s["digest"]["blake3"] for s in statement["subject"]]
    oids += [params["runRecord"], params["contract"]]
    oids += ["b3:" + d["digest"]["blake3"] for d in deps if d["name"] in ("code", "environment")]
    oids += ["b3:" + b["digest"]["blake3"] for b in details["byproducts"]]
    oids += [
        d["annotations"]["manifest"]
        for d in deps
        if d["name"].startswith("input/") and d["annotations"].get("manifest")
    ]
    return list(dict.fromkeys(oids))
