# A Fire CLI over a class: its constructor's arguments, then the method's.
import fire


class Trainer:
    def __init__(self, seed=0, name="baseline"):
        self.seed = seed
        self.name = name

    def train(self, lr=0.1, epochs=3, *layers, **extra):
        print(f"train {self.name} seed={self.seed} lr={lr} epochs={epochs} {layers} {extra}")


if __name__ == "__main__":
    fire.Fire(Trainer)
