"""``ledger gate RUN:out/model.pt``: a weights file a real recorded run wrote as an output is
gated straight from the ledger (read back through the store, never unpickled), and a plain
model's answer to NaN/Inf inputs — none, sanitize, reject — is what the poison check judges."""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path
from typing import Any

import pytest
from _support import init_ledger, run_ledger

pytest.importorskip("torch")
pytestmark = [pytest.mark.torch, pytest.mark.slow]

NET = '''
import torch
from torch import nn
from ledger.check import Spec


class Plain(nn.Module):
    """Passes NaN and Inf through: the gate's poison check fails it, with a hint."""

    def __init__(self):
        super().__init__()
        self.body = nn.Sequential(nn.Linear(4, 8), nn.Tanh(), nn.Linear(8, 2))

    def forward(self, x):
        return self.body(x)


class Sanitize(Plain):
    def forward(self, x):
        return self.body(torch.nan_to_num(x, nan=0.0, posinf=1e4, neginf=-1e4))


class Reject(Plain):
    def forward(self, x):
        if not torch.compiler.is_exporting() and not bool(torch.isfinite(x).all()):
            raise ValueError("input holds NaN or Inf")
        return self.body(x)


def batch(n):
    g = torch.Generator().manual_seed(n)
    return torch.randn(n, 4, generator=g), torch.randn(n, 2, generator=g)


def _spec(model):
    return Spec(
        model=model,
        batch=batch,
        loss=nn.functional.mse_loss,
        optimizer=lambda p: torch.optim.SGD(p, lr=0.1),
    )


def plain():
    return _spec(Plain)


def sanitize():
    return _spec(Sanitize)


def reject():
    return _spec(Reject)
'''
TRAIN = """
import os, pickle, sys
import torch
from safetensors.torch import save_file
from net import Plain, batch

torch.manual_seed(0)
model = Plain()
x, y = batch(16)
opt = torch.optim.SGD(model.parameters(), lr=0.1)
for step in range(3):
    opt.zero_grad()
    loss = torch.nn.functional.mse_loss(model(x), y)
    loss.backward()
    opt.step()
    print(f"step {step} loss {loss.item():.5f}", flush=True)
os.makedirs("out", exist_ok=True)
torch.save(model.state_dict(), "out/model.pt")
save_file(model.state_dict(), "out/model.safetensors")


class Evil:
    def __reduce__(self):
        return (os.mkdir, (os.environ["PWNED"],))


torch.save({"body.0.weight": Evil()}, "out/evil.pt")
"""


def _git(repo: Path, *args: str) -> None:
    env = {**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@e"}
    env |= {"GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@e"}
    subprocess.run(["git", *args], cwd=repo, check=True, capture_output=True, env=env)


@pytest.fixture(scope="module")
def trained(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, str, Path]:
    repo = tmp_path_factory.mktemp("gate-output") / "proj"
    repo.mkdir()
    (repo / "net.py").write_text(NET)
    (repo / "train.py").write_text(TRAIN)
    (repo / ".gitignore").write_text("out/\n.ledger/\n__pycache__/\n")
    _git(repo, "init", "-q")
    _git(repo, "add", "-A")
    _git(repo, "commit", "-qm", "init")
    init_ledger(repo)
    pwned = repo.parent / "PWNED"
    r = run_ledger(
        "record",
        "-n",
        "mlp",
        "-o",
        "out",
        "--",
        "python",
        "train.py",
        cwd=repo,
        PWNED=str(pwned),
    )
    assert r.returncode == 0, r.stdout + r.stderr
    runs = json.loads(run_ledger("ls", "--json", cwd=repo).stdout)
    # The run's own files are gone from disk: the gate reads them from the ledger.
    for f in (repo / "out").iterdir():
        f.unlink()
    return repo, runs[0]["run_id"], pwned


def _gate(repo: Path, target: str, spec: str) -> tuple[int, dict[str, Any] | None, str]:
    r = run_ledger("gate", target, "--spec", spec, "--checks", "poison", "--json", cwd=repo)
    data = json.loads(r.stdout) if r.stdout.strip() else None
    return r.returncode, data, r.stderr


def _items(data: dict[str, Any]) -> dict[str, dict[str, Any]]:
    return {i["name"]: i for i in data["items"]}


def test_a_recorded_output_is_gated_and_bound_to_its_run(
    trained: tuple[Path, str, Path],
) -> None:
    from ledger.read import open as open_ledger

    repo, run_id, _ = trained
    outputs = {o["path"]: o["oid"] for o in open_ledger(repo).run(run_id).outputs}
    for name in ("model.pt", "model.safetensors"):
        code, data, err = _gate(repo, f"mlp:out/{name}", "net:sanitize")
        assert code == 0 and data is not None, err
        rec = data
        assert rec["passed"] and rec["oid"] is not None and rec["run_id"] == run_id
        # Bound to the file's BLAKE3, which is its object id in the ledger.
        assert rec["checkpoint_digest"] == outputs[f"out/{name}"]
        assert _items(data)["NaN"]["figure"].startswith("handled: finite output")
    code, data, err = _gate(repo, f"{run_id}:out/model.pt", "net:reject")
    assert code == 0 and data is not None, err
    assert _items(data)["+Inf"]["figure"] == "rejected: ValueError: input holds NaN or Inf"


def test_a_model_without_an_answer_to_nan_fails_with_a_hint(
    trained: tuple[Path, str, Path],
) -> None:
    repo, _, _ = trained
    code, data, err = _gate(repo, "mlp:out/model.pt", "net:plain")
    assert code == 1 and data is not None, err
    items = _items(data)
    for name in ("NaN", "+Inf", "-Inf"):
        figure = items[name]["figure"]
        assert figure.startswith("silent non-finite output"), figure
        assert "sanitize them in forward (torch.nan_to_num) or reject them" in figure
    assert items["all zeros"]["passed"]


def test_a_pickle_among_the_outputs_is_never_run(trained: tuple[Path, str, Path]) -> None:
    repo, _, pwned = trained
    code, data, err = _gate(repo, "mlp:out/evil.pt", "net:plain")
    assert code == 2 and data is None
    assert "cannot read weights mlp:out/evil.pt" in err and "weights_only=True" in err
    assert not pwned.exists()


def test_bad_targets_say_what_the_run_holds(trained: tuple[Path, str, Path]) -> None:
    repo, _, _ = trained
    code, _, err = _gate(repo, "mlp:out/none.pt", "net:plain")
    assert code == 2
    assert "recorded no output file 'out/none.pt'" in err
    assert "out/model.pt" in err and "out/model.safetensors" in err
    code, _, err = _gate(repo, "nosuchrun:out/model.pt", "net:plain")
    assert code == 2 and "RUN:PATH" in err
