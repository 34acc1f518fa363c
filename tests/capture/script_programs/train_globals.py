# A nanoGPT-style training script: configured by module globals, a config .py file and
# --key=value overrides applied by exec-ing configurator.py; the loop runs at module level.
import math
import os
import time

out_dir = "out"
eval_interval = 2
batch_size = 12
block_size = 64
n_layer = 2
dropout = 0.0
bias = False
learning_rate = 6e-4
max_iters = 4
decay_lr = True
dataset = "shakespeare_char"
device = "cpu"
config_keys = [
    k
    for k, v in globals().items()
    if not k.startswith("_") and isinstance(v, (int, float, bool, str))
]
exec(open("configurator.py").read())  # noqa: SIM115  (nanoGPT: overrides from the command line)
config = {k: globals()[k] for k in config_keys}  # will be useful for logging
model_args = dict(
    n_layer=n_layer, block_size=block_size, bias=bias, vocab_size=None, dropout=dropout
)
model_args["vocab_size"] = 65
os.makedirs(out_dir, exist_ok=True)
iter_num = 0
best_val_loss = 1e9
t0 = time.time()
while True:
    lr = learning_rate * (0.5 * (1 + math.cos(math.pi * iter_num / max_iters)))
    lossf = 4.0 / (1 + iter_num) + dropout
    t1 = time.time()
    dt = t1 - t0
    t0 = t1
    print(f"iter {iter_num}: loss {lossf:.4f}, lr {lr:.6f}", flush=True)
    if iter_num % eval_interval == 0 and lossf < best_val_loss:
        best_val_loss = lossf
    iter_num += 1
    if iter_num > max_iters:
        break
