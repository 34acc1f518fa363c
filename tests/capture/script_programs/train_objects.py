# Config held in objects built by hand: an OmegaConf config and a dataclass, plus a global.
from dataclasses import dataclass

from omegaconf import OmegaConf


@dataclass
class Optim:
    lr: float = 0.1
    betas: tuple = (0.9, 0.95)


optim = Optim(lr=0.02)
cfg = OmegaConf.create({"model": {"width": 64, "head": "${model.width}"}, "data": "tiny"})
epochs = 2
table = [[0] * 200 for _ in range(200)]  # data, not config: 40,000 values
for epoch in range(epochs):
    print(f"epoch {epoch} width {cfg.model.width}", flush=True)
