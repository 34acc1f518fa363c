# A typer program: its parameters come from the function's signature.
import typer


def main(lr: float = 0.1, name: str = "baseline", steps: int = 2) -> None:
    print(f"lr={lr} name={name} steps={steps}", flush=True)


if __name__ == "__main__":
    typer.run(main)
