"""A chunk size that is not a positive int is refused with a ``UsageError`` naming it, raised as
is by a one-process save (not wrapped as "not published"), and nothing is published.

Before, ``chunk_size=0`` failed with ``range() arg 3 must not be zero``, ``-1`` with a pydantic
validation error and ``1.5`` with a ``TypeError``. Found by mutation testing (issue #18): no
input made the save's own write step raise a ``LedgerError``, so the code that raises one as
is in a one-process save was never run.
"""

from __future__ import annotations

from typing import Any

import pytest

from ledger.errors import UsageError
from ledger.store import Store

torch = pytest.importorskip("torch")

from ledger.torch.checkpoint import save_checkpoint  # noqa: E402

pytestmark = pytest.mark.torch


@pytest.mark.parametrize("chunk_size", [0, -1, 1.5, True, "64"])
@pytest.mark.parametrize("background", [False, True])
def test_a_chunk_size_that_is_not_a_positive_int_is_refused(
    store: Store, chunk_size: Any, background: bool
) -> None:
    state = {"w": torch.arange(4.0)}
    with pytest.raises(UsageError, match=r"chunk_size must be a positive int") as caught:
        pending: Any = save_checkpoint(
            state, step=1, store=store, run_id="r", chunk_size=chunk_size, background=background
        )
        if background:
            pending.wait()
    assert type(caught.value) is UsageError  # as is, not an IntegrityError "not published"
    assert store.refs.get("checkpoints/r/latest") is None
    save_checkpoint(state, step=1, store=store, run_id="r", chunk_size=1)  # the smallest works
    assert store.refs.get("checkpoints/r/latest") is not None
