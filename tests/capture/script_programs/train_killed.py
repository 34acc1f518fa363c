# Saves a checkpoint with torch.save, then dies by the signal named on the command line
# (SIGKILL or SIGTERM: neither runs atexit handlers).
import os
import signal
import sys

import torch

learning_rate = 0.003
warmup_iters = 10
kill_with = sys.argv[1]
step = 0
for step in range(5):
    if step == 2:
        torch.save({"step": step, "w": torch.zeros(2)}, "ckpt.pt")
        print("saved", flush=True)
        os.kill(os.getpid(), getattr(signal, kill_with))
