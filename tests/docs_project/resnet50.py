"""Stands in for ten seeds of a ResNet-50 run on CIFAR (docs/how-to/audit-claims.md): it logs
the values tests/audit/test_audit_reports.py gives its ten runs, one seed per run."""

import argparse

import ledger

ACC = [76.1 + d for d in (-0.3, -0.25, -0.2, -0.1, -0.05, 0.05, 0.1, 0.2, 0.25, 0.3)]
LOSS = [
    0.912 + d for d in (-0.008, -0.007, -0.006, -0.004, -0.002, 0.002, 0.004, 0.006, 0.007, 0.008)
]

parser = argparse.ArgumentParser()
parser.add_argument("--seed", type=int, default=0)
seed = parser.parse_args().seed
acc, loss = ACC[seed], LOSS[seed]
for step, (val, test_acc, test_loss) in enumerate(
    [(70.0, 69.0, 2.0), (77.0, acc, 1.0), (76.0, acc - 1.0, loss)]
):
    ledger.log(step=step, **{"val/acc": val, "test/acc": test_acc, "test/loss": test_loss})
    print(f"epoch {step} val/acc {val} test/acc {test_acc:.2f}", flush=True)
