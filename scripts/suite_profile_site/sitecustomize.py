"""Imported by every Python started with this folder on PYTHONPATH (scripts/suite_profile.py):
at a normal exit, appends the process's CPU, command line and test to $LEDGER_SUITE_PROFILE."""

import atexit
import os
import sys


def _record() -> None:
    import json
    import resource

    folder = os.environ.get("LEDGER_SUITE_PROFILE")
    if not folder or ("PYTEST_XDIST_WORKER" in os.environ and "pytest" in sys.modules):
        return  # the test processes themselves are profiled by the plugin
    usage = resource.getrusage(resource.RUSAGE_SELF)
    argv = list(getattr(sys, "orig_argv", sys.argv)[1:])
    line = {
        "pid": os.getpid(),
        "ppid": os.getppid(),
        "argv": [a[:200] for a in argv[:12]],
        "cpu": round(usage.ru_utime + usage.ru_stime, 4),
        "torch": "torch" in sys.modules,
        "test": os.environ.get("PYTEST_CURRENT_TEST", "").rsplit(" ", 1)[0],
    }
    try:
        os.makedirs(folder, exist_ok=True)
        with open(os.path.join(folder, f"children-{os.getpid()}.jsonl"), "a") as f:
            f.write(json.dumps(line) + "\n")
    except OSError:
        pass


if os.environ.get("LEDGER_SUITE_PROFILE"):
    atexit.register(_record)
