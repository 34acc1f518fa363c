# ml_collections: a ConfigDict built by hand and a frozen copy, held in module globals.
from ml_collections import config_dict

config = config_dict.ConfigDict()
config.lr = 0.05
config.model = config_dict.ConfigDict({"width": 64, "depth": 2})
config.model.head = config_dict.FieldReference(16)
frozen = config_dict.FrozenConfigDict({"seed": 7, "tags": ("a", "b")})

print(f"train lr={config.lr} width={config.model.width} seed={frozen.seed}", flush=True)
