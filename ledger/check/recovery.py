"""The checkpoint-recovery level: train N steps, save with ledger's checkpoints, restart in a
new process, continue N steps; the continued run must match an uninterrupted one exactly.

Both halves run as ``python -m ledger.check.recovery PHASE SPEC STORE STEPS OUT`` children so
the resume really starts from a fresh interpreter (no state left in module globals).
"""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import Any

from ..records.check import CheckItem

__all__ = ["recovery_checks"]

_RUN_ID = "ledger-check-recovery"


def _digest(value: Any) -> str:
    """A digest of every tensor in a (nested) state dict, in key order."""
    import torch

    h = hashlib.sha256()

    def walk(v: Any, path: str) -> None:
        if isinstance(v, torch.Tensor):
            h.update(path.encode() + str(v.dtype).encode() + str(tuple(v.shape)).encode())
            h.update(v.detach().cpu().contiguous().view(-1).view(torch.uint8).numpy().tobytes())
        elif isinstance(v, dict):
            for k in sorted(v, key=str):
                walk(v[k], f"{path}/{k}")
        elif isinstance(v, (list, tuple)):
            for i, x in enumerate(v):
                walk(x, f"{path}/{i}")
        else:
            h.update(f"{path}={v!r}".encode())

    walk(value, "")
    return h.hexdigest()


def _child(phase: str, source: str, store_dir: str, steps: int, out: str) -> None:
    import torch

    from ..torch import load_checkpoint, save_checkpoint
    from ._tensors import call
    from .spec import load_spec

    spec = load_spec(source).spec
    torch.manual_seed(0)
    model = spec.model()
    opt = spec.optimizer([p for p in model.parameters() if p.requires_grad])
    sched = spec.scheduler(opt) if spec.scheduler else None
    model.train()
    inputs, target = spec.batch(spec.batch_size)
    state: dict[str, Any] = {"model": model, "optimizer": opt, "step": 0}
    if sched is not None:
        state["scheduler"] = sched

    def train(k: int) -> list[dict[str, float]]:
        rows = []
        for _ in range(k):
            opt.zero_grad(set_to_none=True)
            loss = spec.loss(call(model, inputs), target)
            loss.backward()
            opt.step()
            if sched is not None:
                sched.step()
            state["step"] += 1
            rows.append({"loss": float(loss.detach()), "lr": float(opt.param_groups[0]["lr"])})
        return rows

    result: dict[str, Any] = {}
    if phase == "save":
        train(steps)
        save_checkpoint(state, step=state["step"], store=store_dir, run_id=_RUN_ID)
        result["saved_step"] = state["step"]
        result["continued"] = train(steps)
    else:
        loaded = load_checkpoint("latest", state=state, store=store_dir, run_id=_RUN_ID)
        state["step"] = loaded.state["step"]
        result["resumed_step"] = state["step"]
        result["continued"] = train(steps)
    result["step"] = state["step"]
    result["model"] = _digest(model.state_dict())
    result["optimizer"] = _digest(opt.state_dict())
    result["scheduler"] = _digest(sched.state_dict()) if sched is not None else None
    Path(out).write_text(json.dumps(result), encoding="utf-8")


def recovery_checks(
    spec: Any, settings: dict[str, Any], source: str | None = None
) -> list[CheckItem]:
    source = source or settings.get("_source")
    steps = int(settings.get("steps", 3))
    if not source:
        return [
            CheckItem(
                level="checkpoint",
                name="resume",
                passed=None,
                figure="no spec source to restart from: skipped",
            )
        ]
    with tempfile.TemporaryDirectory(prefix="ledger-check-") as tmp:
        from ..store import Store

        Store.init(Path(tmp) / ".ledger")
        outs = {}
        env = {k: v for k, v in os.environ.items() if k not in ("LEDGER_RUN_ID", "LEDGER_DIR")}
        # The children import this same ledger (a checkout may differ from the installed one).
        here = str(Path(__file__).resolve().parents[2])
        env["PYTHONPATH"] = os.pathsep.join(p for p in (here, env.get("PYTHONPATH")) if p)
        for phase in ("save", "resume"):
            out = Path(tmp) / f"{phase}.json"
            cmd = [
                sys.executable,
                "-m",
                "ledger.check.recovery",
                phase,
                source,
                str(Path(tmp) / ".ledger"),
                str(steps),
                str(out),
            ]
            p = subprocess.run(cmd, capture_output=True, text=True, env=env, check=False)
            if p.returncode != 0:
                tail = (p.stderr.strip().splitlines() or ["(no output)"])[-1]
                return [
                    CheckItem(
                        level="checkpoint",
                        name="resume",
                        passed=False,
                        figure=f"the {phase} process failed: {tail[:300]}",
                        detail={"stderr": p.stderr[-4000:]},
                    )
                ]
            outs[phase] = json.loads(out.read_text(encoding="utf-8"))
    a, b = outs["save"], outs["resume"]
    la = [r["loss"] for r in a["continued"]]
    lb = [r["loss"] for r in b["continued"]]
    first = next((i for i, (x, y) in enumerate(zip(la, lb, strict=True)) if x != y), None)
    parts = {
        "step": b["resumed_step"] == a["saved_step"] and a["step"] == b["step"],
        "loss": first is None,
        "lr": [r["lr"] for r in a["continued"]] == [r["lr"] for r in b["continued"]],
        "weights": a["model"] == b["model"],
        "optimizer state": a["optimizer"] == b["optimizer"],
        "scheduler state": a["scheduler"] == b["scheduler"],
    }
    bad = [k for k, ok in parts.items() if not ok]
    figure = (
        f"saved at step {a['saved_step']}, resumed in a new process at step {b['resumed_step']}; "
        f"{steps} more steps: "
    )
    if not bad:
        figure += "loss, LR, step, weights and optimizer state continue exactly"
    else:
        figure += "differs in " + ", ".join(bad)
        if first is not None:
            at = a["saved_step"] + first + 1
            figure += f" (loss first differs at step {at}: {la[first]!r} vs {lb[first]!r})"
    return [
        CheckItem(
            level="checkpoint",
            name="resume",
            passed=not bad,
            figure=figure,
            detail={"uninterrupted": a, "resumed": b, "differs": bad},
        )
    ]


if __name__ == "__main__":
    _child(sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5])
