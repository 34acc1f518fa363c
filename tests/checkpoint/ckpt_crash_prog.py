"""A fork server for the crash test: torch is imported once, each save runs in a forked child
that the test SIGKILLs (or that kills itself at a phase via LEDGER_CKPT_KILL_AT).

Protocol on stdin/stdout, one line each: ``save <step> <phase or -> <delay or -> [bg]`` → the child
prints ``ready <pid> <t>`` before saving and ``saved <t>`` after, ``t`` being the seconds since
the fork (so the test can aim its kills inside a save on a machine of any speed); with a delay,
the server SIGKILLs the child that many seconds after forking it (the server, not the test,
kills: only the parent knows the pid is still this child); the server then prints
``exit <status>``. With ``bg`` the save is a background one: the child prints ``returned <t>``
when ``save_checkpoint`` gives control back, then overwrites every tensor in place (the save
must have copied them), then waits for the save; the kill phases then fire in its thread.

Tensor ``t<j>`` holds ``randn(step * 100 + j)`` for ``j < 4`` (new every step) and
``randn(j)`` otherwise (deduplicated), so a loaded checkpoint can be checked exactly.
"""

from __future__ import annotations

import argparse
import os
import signal
import sys
import time

import torch

from ledger.torch.checkpoint import save_checkpoint

N_TENSORS = 12
NUMEL = 1 << 18  # 1 MiB of float32 each


def expected(step: int) -> dict[str, torch.Tensor]:
    out = {}
    for j in range(N_TENSORS):
        g = torch.Generator().manual_seed(step * 100 + j if j < 4 else j)
        out[f"t{j}"] = torch.randn(NUMEL, generator=g)
    return out


def _child(ledger: str, step: int, phase: str, forked: float, bg: bool) -> None:
    if phase != "-":
        os.environ["LEDGER_CKPT_KILL_AT"] = phase
    state = {"weights": expected(step), "counters": {"step": step}}
    sys.stdout.write(f"ready {os.getpid()} {time.monotonic() - forked:.6f}\n")
    sys.stdout.flush()
    if bg:
        pending = save_checkpoint(
            state,
            step=step,
            store=ledger,
            run_id="crash",
            keep_last=2,
            chunk_size=256 << 10,
            background=True,
        )
        sys.stdout.write(f"returned {time.monotonic() - forked:.6f}\n")
        sys.stdout.flush()
        for t in state["weights"].values():  # training goes on while the thread writes
            t.fill_(float("nan"))
        state["counters"]["step"] = -1
        pending.wait()
    else:
        save_checkpoint(
            state, step=step, store=ledger, run_id="crash", keep_last=2, chunk_size=256 << 10
        )
    sys.stdout.write(f"saved {time.monotonic() - forked:.6f}\n")
    sys.stdout.flush()


def main() -> None:
    p = argparse.ArgumentParser()
    p.add_argument("--ledger", required=True)
    a = p.parse_args()
    torch.set_num_threads(1)
    for line in sys.stdin:
        _, step, phase, delay, *bg = line.split()
        forked = time.monotonic()
        pid = os.fork()
        if pid == 0:
            code = 0
            try:
                _child(a.ledger, int(step), phase, forked, bg == ["bg"])
            except BaseException as e:
                sys.stdout.write(f"error {e!r}\n")
                code = 1
            finally:
                sys.stdout.flush()
                os._exit(code)
        if delay != "-":
            time.sleep(float(delay))
            os.kill(pid, signal.SIGKILL)  # not yet waited for: still our child or a zombie
        _, status = os.waitpid(pid, 0)
        sys.stdout.write(f"exit {os.waitstatus_to_exitcode(status)}\n")
        sys.stdout.flush()


if __name__ == "__main__":
    main()
