# ml_collections' config_flags: a ConfigDict from a config file, overridden on the command line.
from absl import app
from ml_collections import config_flags

_CONFIG = config_flags.DEFINE_config_file("config", "config/cdict.py", "the training config")


def main(argv):
    print(f"train lr={_CONFIG.value.lr} width={_CONFIG.value.model.width}", flush=True)


if __name__ == "__main__":
    app.run(main)
