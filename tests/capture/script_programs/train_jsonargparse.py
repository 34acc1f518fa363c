# jsonargparse, as LightningCLI uses it: a class's arguments nested, a config file, overrides.
from jsonargparse import ActionConfigFile, ArgumentParser


class Model:
    def __init__(self, width: int = 32, dropout: float = 0.0):
        self.width = width
        self.dropout = dropout


parser = ArgumentParser(prog="train")
parser.add_argument("--config", action=ActionConfigFile)
parser.add_argument("--lr", type=float, default=0.1)
parser.add_argument("--epochs", type=int, default=3)
parser.add_class_arguments(Model, "model")
cfg = parser.parse_args()
print(f"train lr={cfg.lr} epochs={cfg.epochs} width={cfg.model.width}", flush=True)
