# A program configured by absl flags, run through absl.app.
from absl import app, flags

FLAGS = flags.FLAGS
flags.DEFINE_float("learning_rate", 0.1, "step size")
flags.DEFINE_integer("steps", 3, "training steps")
flags.DEFINE_enum("optimizer", "sgd", ["sgd", "adam"], "optimizer")
flags.DEFINE_list("layers", ["64", "64"], "layer widths")


def main(argv):
    del argv
    for step in range(FLAGS.steps):
        print(f"step {step} lr {FLAGS.learning_rate}", flush=True)


if __name__ == "__main__":
    app.run(main)
