"""What to do about each cause a localization names: one sentence and a documentation link.

The causes are the words of ``ledger.replay.localize``; the sentences name what ledger
already recorded (determinism settings, thread counts, the environment) so the next step is
a comparison, not a guess.
"""

from __future__ import annotations

__all__ = ["CAUSES", "DOC", "suggestion"]

DOC = "docs/how-to/localize-divergence.md"

# cause -> (what it is, in the report's arrow; what to do; anchor of the how-to page)
CAUSES: dict[str, tuple[str, str, str]] = {
    "nondeterministic-op": (
        "an operation that is not deterministic here",
        "turn on ledger.torch.deterministic() (torch.use_deterministic_algorithms(True)) and "
        "compare the determinism settings both runs recorded (`ledger show RUN`)",
        "nondeterministic-operation",
    ),
    "unflagged-nondeterminism": (
        "something nondeterministic that torch does not flag (a thread pool's order, an "
        "unseeded generator)",
        "look in that module's forward for a generator not seeded from ledger.seed() "
        "(a torch.Generator seeded from the clock or os.urandom) or for work split across "
        "threads whose results are combined in the order they finish, and seed or order it",
        "not-flagged-by-torch",
    ),
    "thread-count": (
        "the thread count changed",
        "set OMP_NUM_THREADS / torch.set_num_threads to the recorded value",
        "thread-count",
    ),
    "library-version": (
        "a library version changed",
        "compare the environments (`ledger diff A B`) and pin the version the run recorded",
        "library-version",
    ),
    "data-order": (
        "data order",
        "give the DataLoader's sampler a seeded generator (ledger.torch.dataloader_generator())",
        "data-order",
    ),
    "data-content": (
        "data content (same samples, other values: augmentation or the files changed)",
        "seed the augmentation per sample (ledger.torch.worker_init_fn) and compare the inputs "
        "(`ledger diff A B`)",
        "data-content",
    ),
    "worker-seeding": (
        "data loader worker seeding",
        "seed each worker from the run's root: DataLoader(..., worker_init_fn="
        "ledger.torch.worker_init_fn), and draw augmentations from generators it seeds",
        "worker-seeding",
    ),
    "random-state": (
        "random state",
        "seed every generator from the recorded root (ledger.seed()) before the first step",
        "random-state",
    ),
    "outside-modules": (
        "code between modules (a functional call or random draw in the parent's forward)",
        "move the operation into a module, or seed the generator it draws from",
        "outside-modules",
    ),
    "loss": (
        "the loss computation",
        "compare the loss function's settings and its inputs (labels, weights)",
        "loss",
    ),
    "lr-schedule": (
        "learning rate schedule",
        "compare the scheduler's settings in the two configs (`ledger diff A B`)",
        "optimizer",
    ),
    "optimizer-settings": (
        "optimizer settings",
        "compare the optimizer's settings in the two configs (`ledger diff A B`)",
        "optimizer",
    ),
    "optimizer-state": (
        "optimizer state",
        "resume the optimizer's state with the model's (ledger.torch.save_checkpoint saves both)",
        "optimizer",
    ),
    "execution-order": (
        "the modules ran in another order (control flow depends on something that differs)",
        "compare the config and code of the two runs (`ledger diff A B`)",
        "execution-order",
    ),
}


def suggestion(cause: str) -> tuple[str, str, str]:
    """(what the cause is, what to do, the documentation link)."""
    what, todo, anchor = CAUSES[cause]
    return what, todo, f"{DOC}#{anchor}"
