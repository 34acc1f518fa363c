# Saves a checkpoint with torch.save (or ledger's save_checkpoint, second argument "ledger"),
# then dies by the signal named on the command line (SIGKILL or SIGTERM: neither runs atexit
# handlers).
import os
import signal
import sys

import torch

learning_rate = 0.003
warmup_iters = 10
kill_with = sys.argv[1]
saver = sys.argv[2] if len(sys.argv) > 2 else "torch"
step = 0
for step in range(5):
    if step == 2:
        if saver == "ledger":
            from ledger.torch import save_checkpoint

            save_checkpoint({"w": torch.zeros(2)}, step=step)
        else:
            torch.save({"step": step, "w": torch.zeros(2)}, "ckpt.pt")
        print("saved", flush=True)
        os.kill(os.getpid(), getattr(signal, kill_with))
