"""Writes data.csv: 256 rows of 4 features and a binary label (run once; the CSV is shipped)."""

import numpy as np

rng = np.random.default_rng(20261130)
x = rng.standard_normal((256, 4))
y = (x @ np.array([1.5, -2.0, 0.5, 1.0]) + 0.3 * rng.standard_normal(256) > 0).astype(int)
with open("data.csv", "w") as f:
    f.write("f0,f1,f2,f3,label\n")
    for row, label in zip(x, y, strict=True):
        f.write(",".join(f"{v:.6f}" for v in row) + f",{label}\n")
