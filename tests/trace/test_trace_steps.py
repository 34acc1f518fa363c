"""What a trace records and when: traced steps only, hooks gone between them, steps without an
optimizer, gradient accumulation, keyword inputs, and the file the recorder stores."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

torch = pytest.importorskip("torch")
pytestmark = pytest.mark.torch

from torch import nn  # noqa: E402

from ledger.runtime import RankInfo  # noqa: E402
from ledger.runtime.ingest import collect_runtime_json  # noqa: E402
from ledger.runtime.run import Run  # noqa: E402
from ledger.store import Store  # noqa: E402
from ledger.torch import trace  # noqa: E402


class Keywords(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.lin = nn.Linear(3, 3)

    def forward(self, x: torch.Tensor, *, shift: torch.Tensor) -> torch.Tensor:
        return self.lin(x + shift)


def _hooks(model: nn.Module) -> int:
    return sum(len(m._forward_hooks) + len(m._forward_pre_hooks) for m in model.modules())


def test_only_every_nth_step_is_traced_and_its_hooks_are_removed_after() -> None:
    model = nn.Sequential(nn.Linear(3, 4), nn.ReLU(), nn.Linear(4, 1))
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    tr = trace(model, opt, every=3, run=Run())
    idle = _hooks(model)
    for _ in range(7):
        model(torch.ones(2, 3)).sum().backward()
        opt.step()
        opt.zero_grad()
        assert _hooks(model) == idle  # between steps only the root's pre-hook stays
    assert [s["s"] for s in tr.records[1:]] == [0, 3, 6]
    tr.close()
    assert _hooks(model) == 0


def test_without_an_optimizer_the_next_batch_ends_the_step() -> None:
    model = nn.Linear(3, 1)
    tr = trace(model, every=1, run=Run())
    for i in range(3):
        tr.batch(torch.full((2, 3), float(i)), ids=[2 * i, 2 * i + 1])
        model(torch.full((2, 3), float(i))).sum().backward()
    tr.close()
    steps = tr.records[1:]
    assert [s["s"] for s in steps] == [0, 1, 2]
    assert [s["ids"] for s in steps] == [[0, 1], [2, 3], [4, 5]]
    assert all(len(s["grad"]) == 2 and len(s["param"]) == 2 for s in steps)


def test_gradient_accumulation_keeps_one_step_per_optimizer_step() -> None:
    model = nn.Linear(3, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    tr = trace(model, opt, every=1, run=Run())
    for micro in range(4):
        tr.batch(torch.full((2, 3), float(micro)), ids=[micro])
        model(torch.full((2, 3), float(micro))).sum().backward()
        if micro % 2 == 1:
            opt.step()
            opt.zero_grad()
    steps = tr.records[1:]
    assert [s["ids"] for s in steps] == [[0, 1], [2, 3]]
    assert [len(s["fwd"]) for s in steps] == [2, 2]


def test_keyword_inputs_are_part_of_the_input_digest() -> None:
    def inputs(shift: float) -> Any:
        model = Keywords()
        tr = trace(model, every=1, run=Run())
        model(torch.ones(1, 3), shift=torch.full((1, 3), shift)).sum().backward()
        tr.close()
        return tr.records[1]

    a, b = inputs(0.0), inputs(1.0)
    assert a["batch"] != b["batch"]
    outer_a, outer_b = (next(e for e in s["fwd"] if e[0] == 0) for s in (a, b))
    assert outer_a[1] != outer_b[1]  # the outer module's inputs: x and shift


def test_an_attached_run_writes_its_trace_and_the_recorder_stores_it(tmp_path: Path) -> None:
    run = Run(run_id="r", run_dir=tmp_path / "staging", rank=RankInfo())
    model = nn.Linear(3, 1)
    opt = torch.optim.SGD(model.parameters(), lr=0.1)
    tr = trace(model, opt, every=2, run=run)
    for _ in range(5):
        model(torch.ones(2, 3)).sum().backward()
        opt.step()
        opt.zero_grad()
    tr.close()
    lines = (tmp_path / "staging" / "traces" / "rank-0.jsonl").read_text().splitlines()
    assert "header" in json.loads(lines[0]) and len(lines) == 4  # header, steps 0, 2, 4
    store = Store.init(tmp_path / ".ledger")
    (ref,) = collect_runtime_json(tmp_path / "staging", store)["traces"]
    assert (ref["rank"], ref["every"], ref["steps"]) == (0, 2, 3)
    stored = store.get_json(ref["trace"])
    assert stored["header"]["params"] == ["weight", "bias"]
    assert [s["s"] for s in stored["steps"]] == [0, 2, 4]
