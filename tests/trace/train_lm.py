"""A small transformer language model trained for a few steps with a trace on every step.

The tests record it, then replay it with one cause of divergence injected through the
environment (each variable changes only the replay):

T_THREADS      torch.set_num_threads (the recording sets 2)
T_UNSEEDED     blocks.1.drop draws its mask from an unseeded generator
T_NOGEN        the DataLoader shuffles without its seeded generator
T_LR_STEP      the learning rate schedule halves the rate from this step on (default: never)
T_EPS          AdamW's eps (default 1e-8)
T_NONDET       blocks.0.mix adds its partial sums in an order drawn from os.urandom
T_DRIFT        F.gelu patched to its tanh approximation and torch.__version__ changed, as a
               library upgrade would
"""

import os
import random
import sys

import torch
import torch.nn.functional as F
from torch import nn

import ledger
from ledger.torch import trace

V, D, T, B = 50, 64, 64, 16
env = os.environ.get  # train() sets it to its options


class GlobalRMS(nn.Module):
    """Scales by the RMS of the whole batch: one sum over B·T·D = 65,536 values, which torch
    splits across threads (so the thread count decides the order of the additions)."""

    def forward(self, x):
        return x * torch.rsqrt(x.pow(2).sum() / x.numel() + 1e-6)


class ScatterMix(nn.Module):
    """index_add_ of partial sums; T_NONDET adds the partials in a random order."""

    def __init__(self):
        super().__init__()
        self.proj = nn.Linear(D, D)

    def forward(self, x):
        h = self.proj(x)
        flat = h.reshape(-1, D)
        idx = torch.arange(flat.shape[0]) % T
        chunks = list(zip(flat.chunk(8), idx.chunk(8), strict=True))
        if env("T_NONDET"):
            k = 1 + random.SystemRandom().randrange(len(chunks) - 1)
            chunks = chunks[k:] + chunks[:k]
        out = torch.zeros(T, D)
        for part, where in chunks:
            out = out.index_add(0, where, part)
        return x + out.unsqueeze(0) / B


class UnseededDropout(nn.Module):
    def __init__(self, p):
        super().__init__()
        self.p = p
        self.gen = torch.Generator().manual_seed(7)

    def forward(self, x):
        if env("T_UNSEEDED"):
            self.gen.seed()  # a seed from the clock: what "unseeded" means
        keep = torch.rand(x.shape, generator=self.gen) >= self.p
        return x * keep / (1 - self.p)


class Block(nn.Module):
    def __init__(self, mix):
        super().__init__()
        self.ln = nn.LayerNorm(D)
        self.attn = nn.Linear(D, 3 * D)
        self.out = nn.Linear(D, D)
        self.mix = ScatterMix() if mix else nn.Identity()
        self.mlp = nn.Sequential(nn.Linear(D, 2 * D), nn.GELU(), nn.Linear(2 * D, D))
        self.drop = nn.Identity() if mix else UnseededDropout(0.1)

    def forward(self, x):
        q, k, v = self.attn(self.ln(x)).chunk(3, dim=-1)
        a = F.scaled_dot_product_attention(q, k, v, is_causal=True)
        x = x + self.out(a)
        x = self.mix(x)
        return x + self.drop(self.mlp(x))


class LM(nn.Module):
    def __init__(self):
        super().__init__()
        self.emb = nn.Embedding(V, D)
        self.norm = GlobalRMS()
        self.blocks = nn.Sequential(Block(True), Block(False))
        self.head = nn.Linear(D, V)

    def forward(self, tokens):
        return self.head(self.blocks(self.norm(self.emb(tokens))))


class Tokens(torch.utils.data.Dataset):
    def __init__(self):
        g = torch.Generator().manual_seed(1)
        self.data = torch.randint(0, V, (8 * B, T + 1), generator=g)

    def __len__(self):
        return len(self.data)

    def __getitem__(self, i):
        return i, self.data[i]


def train(opts: dict[str, str], run=None):
    """Train with the causes ``opts`` names; returns the trace (``run`` None: the current run)."""
    global env
    env = opts.get
    threads = torch.get_num_threads()
    gelu, version = F.gelu, torch.__version__
    torch.set_num_threads(int(env("T_THREADS", "2")))
    if env("T_DRIFT"):
        F.gelu = lambda x, approximate="none": gelu(x, approximate="tanh")
        torch.__version__ = torch.__version__ + ".drift"
    try:
        return _train(run)
    finally:
        torch.set_num_threads(threads)
        F.gelu, torch.__version__ = gelu, version


def _train(run):
    ledger.seed(0)
    steps = int(env("T_STEPS", "4"))
    model = LM()
    opt = torch.optim.AdamW(model.parameters(), lr=1e-3, eps=float(env("T_EPS", "1e-8")))
    lr_step = int(env("T_LR_STEP", "1000000"))
    sched = torch.optim.lr_scheduler.LambdaLR(opt, lambda s: 0.5 if s >= lr_step else 1.0)
    gen = None if env("T_NOGEN") else torch.Generator().manual_seed(0)
    loader = torch.utils.data.DataLoader(
        Tokens(), batch_size=B, shuffle=True, generator=gen, num_workers=int(env("T_WORKERS", "0"))
    )
    tr = trace(
        model, opt, run=run, every=int(env("T_EVERY", "1")), values=int(env("T_VALUES", "4096"))
    )
    for step, (ids, seq) in enumerate(loader):
        if step == steps:
            break
        tr.batch(seq, ids=ids)
        logits = model(seq[:, :-1])
        loss = F.cross_entropy(logits.reshape(-1, V), seq[:, 1:].reshape(-1))
        tr.loss(loss)
        loss.backward()
        opt.step()
        opt.zero_grad()
        sched.step()
        ledger.log(step=step, loss=loss.item())
    tr.close()
    return tr


if __name__ == "__main__":
    train(dict(os.environ))
    print("done", file=sys.stderr)
