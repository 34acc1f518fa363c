"""Models for the ``kv-cache`` check: a tiny GPT-2 built from a config (no download), three
GPT-2s with a real cache bug each, and a hand-written GRU decoder with a ``decode`` hook.

Every bug below lives in the model's own code path, as a user would write it; the check sees
only logits. Every ``*_spec`` function is a spec entry point (``kv_models:gpt2_spec``).
"""

from __future__ import annotations

from typing import Any

import torch
from torch import nn
from transformers import AttentionInterface, GPT2Config, GPT2LMHeadModel
from transformers.cache_utils import Cache, DynamicLayer

from ledger.check import Spec

VOCAB, LENGTH = 50, 12


def _config(**kw: Any) -> GPT2Config:
    # A wider init than GPT-2's 0.02 so attention is far from uniform: a wrong key or mask moves
    # the logits well past float32's tolerance rather than just past it.
    return GPT2Config(
        n_layer=2,
        n_head=2,
        n_embd=32,
        vocab_size=VOCAB,
        n_positions=64,
        bos_token_id=0,
        eos_token_id=0,
        initializer_range=0.2,
        **kw,
    )


def _ids(n: int) -> tuple[torch.Tensor, torch.Tensor]:
    g = torch.Generator().manual_seed(4000 + n)
    ids = torch.randint(0, VOCAB, (n, LENGTH + 1), generator=g)
    return ids[:, :-1], ids[:, 1:]


def _lm_loss(out: Any, target: torch.Tensor) -> torch.Tensor:
    return nn.functional.cross_entropy(out.logits.reshape(-1, VOCAB), target.reshape(-1))


def _spec(model: Any, **kw: Any) -> Spec:
    return Spec(
        model=model,
        batch=_ids,
        loss=_lm_loss,
        optimizer=lambda p: torch.optim.Adam(p, lr=1e-3),
        batch_size=4,
        sequence_axis=1,
        **kw,
    )


def gpt2_spec() -> Spec:
    return _spec(lambda: GPT2LMHeadModel(_config()))


class PositionRestart(GPT2LMHeadModel):
    """A serving wrapper that numbers the positions of the tokens it is given from 0: right for
    one full forward, wrong for every decoded token after the first (it gets position 0)."""

    def forward(  # type: ignore[override]
        self, input_ids: Any = None, cache: Any = None, use_cache: Any = None, **kw: Any
    ) -> Any:
        positions = torch.arange(input_ids.shape[1]).unsqueeze(0)
        return super().forward(
            input_ids, cache=cache, use_cache=use_cache, position_ids=positions, **kw
        )


def gpt2_position_restart_spec() -> Spec:
    return _spec(lambda: PositionRestart(_config()))


class FirstKeyLayer(DynamicLayer):
    """A cache layer that stores the first token's key in the slot of every later token (the
    values are right): each decoded token attends to keys that are all the first one's."""

    def update(  # type: ignore[override]
        self, key_states: torch.Tensor, value_states: torch.Tensor, *args: Any, **kwargs: Any
    ) -> tuple[torch.Tensor, torch.Tensor]:
        if self.is_initialized and self.keys.numel():
            key_states = self.keys[..., :1, :].expand_as(key_states)
        return super().update(key_states, value_states, *args, **kwargs)  # type: ignore[no-any-return]


class StaleKey(GPT2LMHeadModel):
    def forward(  # type: ignore[override]
        self, input_ids: Any = None, cache: Any = None, use_cache: Any = None, **kw: Any
    ) -> Any:
        if use_cache and cache is None:
            cache = Cache(layers=[FirstKeyLayer() for _ in range(self.config.n_layer)])
        return super().forward(input_ids, cache=cache, use_cache=use_cache, **kw)


def gpt2_stale_key_spec() -> Spec:
    return _spec(lambda: StaleKey(_config()))


def _attention_off_by_one(
    module: Any,
    query: torch.Tensor,
    key: torch.Tensor,
    value: torch.Tensor,
    attention_mask: Any,
    scaling: float | None = None,
    dropout: float = 0.0,
    **kwargs: Any,
) -> tuple[torch.Tensor, None]:
    """A hand-written attention kernel whose causal mask is off by one: query ``i`` of a block
    of ``q`` queries over ``k`` keys may see key ``i + (k - q) + 1``, one token of its future.
    A single decoded query has no future key, so decoding is right and the full forward not."""
    q, k = query.shape[-2], key.shape[-2]
    allowed = torch.ones(q, k, dtype=torch.bool, device=query.device).tril(diagonal=k - q + 1)
    scores = (query @ key.transpose(-1, -2)) * (scaling or query.shape[-1] ** -0.5)
    weights = scores.masked_fill(~allowed, float("-inf")).softmax(dim=-1)
    return (weights @ value).transpose(1, 2).contiguous(), None


AttentionInterface.register("ledger_test_mask_off_by_one", _attention_off_by_one)


def gpt2_mask_off_by_one_spec() -> Spec:
    return _spec(
        lambda: GPT2LMHeadModel(_config(attn_implementation="ledger_test_mask_off_by_one"))
    )


class GRUDecoder(nn.Module):
    """A hand-written character decoder: embedding, GRU, head. Its forward takes no cache; the
    spec's ``decode`` hook carries the GRU's hidden state from step to step."""

    def __init__(self) -> None:
        super().__init__()
        self.emb = nn.Embedding(VOCAB, 16)
        self.gru = nn.GRU(16, 32, batch_first=True)
        self.head = nn.Linear(32, VOCAB)

    def forward(self, ids: torch.Tensor) -> torch.Tensor:
        out, _ = self.gru(self.emb(ids))
        return self.head(out)


def gru_decode(model: GRUDecoder, state: Any, next_ids: torch.Tensor) -> tuple[Any, Any]:
    out, hidden = model.gru(model.emb(next_ids), state)
    return model.head(out), hidden


def gru_decode_forgetting(model: GRUDecoder, state: Any, next_ids: torch.Tensor) -> tuple[Any, Any]:
    """The hidden state is returned but never passed back in: every token starts from zeros."""
    out, hidden = model.gru(model.emb(next_ids))
    return model.head(out), hidden


def _gru_loss(out: torch.Tensor, target: torch.Tensor) -> torch.Tensor:
    return nn.functional.cross_entropy(out.reshape(-1, VOCAB), target.reshape(-1))


def gru_spec() -> Spec:
    return Spec(
        model=GRUDecoder,
        batch=_ids,
        loss=_gru_loss,
        optimizer=lambda p: torch.optim.Adam(p, lr=1e-2),
        decode=gru_decode,
    )


def gru_state_dropped_spec() -> Spec:
    spec = gru_spec()
    spec.decode = gru_decode_forgetting
    return spec


def gru_no_hook_spec() -> Spec:
    """The same decoder without a hook: nothing tells the check how to decode it."""
    spec = gru_spec()
    spec.decode = None
    return spec
