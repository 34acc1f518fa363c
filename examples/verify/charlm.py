"""A character language model (embedding, GRU, linear head) as a `ledger check` / `ledger gate`
spec: `ledger check charlm:spec`, `ledger gate CHECKPOINT --spec gate.yaml`."""

from __future__ import annotations

import torch
from torch import nn

from ledger.check import Spec

VOCAB, LENGTH, MAX_LENGTH = 40, 16, 64


class CharLM(nn.Module):
    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(VOCAB, 32)
        self.gru = nn.GRU(32, 64, batch_first=True)
        self.head = nn.Linear(64, VOCAB)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        # Reject what the model cannot answer, with a message a caller can act on. Only shape
        # checks: a check on the values (ids.max()) depends on the data and cannot be exported;
        # out-of-range ids raise IndexError in the embedding, which gate.yaml accepts.
        if ids.dim() != 2:
            raise ValueError(f"ids must be [batch, length], got shape {tuple(ids.shape)}")
        if ids.shape[1] > MAX_LENGTH:
            raise ValueError(f"sequence of {ids.shape[1]} tokens exceeds {MAX_LENGTH}")
        out, _ = self.gru(self.emb(ids))
        return self.head(out)


def decode(
    model: CharLM, state: torch.Tensor | None, ids: torch.Tensor
) -> tuple[torch.Tensor, torch.Tensor]:
    """One serving step: the next tokens' logits, carrying the GRU's hidden state (the
    `kv-cache` check compares it, token by token, with one full forward)."""
    out, hidden = model.gru(model.emb(ids), state)
    return model.head(out), hidden


def batch(n: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(n)
    ids = torch.randint(0, VOCAB, (n, LENGTH + 1), generator=g)
    return ids[:, :-1], ids[:, 1:]


def loss(logits: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    return nn.functional.cross_entropy(logits.reshape(-1, VOCAB), target.reshape(-1))


def spec() -> Spec:
    return Spec(
        model=CharLM,
        batch=batch,
        loss=loss,
        optimizer=lambda params: torch.optim.Adam(params, lr=1e-2),
        scheduler=lambda opt: torch.optim.lr_scheduler.StepLR(opt, step_size=10, gamma=0.5),
        tokens_per_sample=LENGTH,
        sequence_axis=1,
        max_length=MAX_LENGTH,
        decode=decode,
    )


if __name__ == "__main__":
    # Train briefly and save a ledger checkpoint for `ledger gate` (run under `ledger record`).
    from ledger.torch import save_checkpoint

    torch.manual_seed(0)
    s = spec()
    model = s.model()
    opt = s.optimizer(model.parameters())
    ids, target = s.batch(32)
    for _ in range(30):
        opt.zero_grad()
        s.loss(model(ids), target).backward()
        opt.step()
    save_checkpoint({"model": model, "optimizer": opt}, step=30)
