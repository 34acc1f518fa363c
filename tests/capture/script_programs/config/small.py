# train a tiny model on the tiny data set
import time

out_dir = "out-small"
batch_size = 4
n_layer = 1
wandb_run_name = "small-" + str(time.time())
