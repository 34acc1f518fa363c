# A click group with a subcommand: options of both, an argument, a flag.
import click


@click.group()
@click.option("--verbose/--quiet", default=False)
def cli(verbose):
    pass


@cli.command()
@click.option("--lr", type=float, default=0.1)
@click.option("--epochs", type=int, default=3)
@click.argument("data", type=click.Path())
def train(lr, epochs, data):
    print(f"train lr={lr} epochs={epochs} data={data}", flush=True)


if __name__ == "__main__":
    cli()
