"""What recording the files a program reads costs (``ledger/_hook/reads.py``): a program that
reads 10,000 small files, run with ``ledger record``'s start-up hook and without it,
interleaved; and what sorting those 10,000 paths costs at seal (``ledger.capture.reads``)."""

from __future__ import annotations

import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

from . import Row, bytecode_env, in_turn

NAME = "reads: recording the files a program opens"
REPO = Path(__file__).resolve().parent.parent
HOOK = REPO / "ledger" / "_hook"

PROGRAM = """\
import os
total = 0
for name in sorted(os.listdir("data")):
    with open(os.path.join("data", name), "rb") as f:
        total += len(f.read())
print(total)
"""


def _project(root: Path, n: int, env: dict[str, str]) -> None:
    (root / "data").mkdir(parents=True)
    for i in range(n):
        (root / "data" / f"{i:05d}.bin").write_bytes(os.urandom(100))
    (root / "read_all.py").write_text(PROGRAM)
    (root / ".gitignore").write_text("data/\n.ledger/\n")
    for args in (
        ["init", "-q"],
        ["config", "user.email", "bench@example.org"],
        ["config", "user.name", "bench"],
        ["add", "."],
        ["commit", "-q", "-m", "init"],
    ):
        subprocess.run(["git", *args], cwd=root, env=env, check=True)


def _timed(cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system) of one run of the program: on a loaded
    machine the CPU time is the steadier figure."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(
        [sys.executable, "read_all.py"], cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL
    )
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _seal_cost(root: Path, run_dir: Path) -> tuple[float, int]:
    """Seconds to collect and sort the paths the hook wrote, as the seal does."""
    sys.path.insert(0, str(REPO))
    from ledger.capture.reads import classify, collect
    from ledger.store import Store

    store = Store.init(root / ".ledger")
    code = {"in_repo": True, "root": str(root), "untracked": None, "submodules": []}
    t = time.perf_counter()
    paths, _ = collect(run_dir)
    found = classify(paths, code=code, store=store, cwd=root, inputs=[], started=time.time())
    return time.perf_counter() - t, len(found.missing)


def run(quick: bool) -> list[Row]:
    n = 10_000
    reps = 4 if quick else 12  # even: each side first as often (``bench.in_turn``)
    tmp = Path(tempfile.mkdtemp(prefix="ledger-bench-reads-", dir="/tmp"))
    base = {k: v for k, v in os.environ.items() if not k.startswith("LEDGER_")}
    base["GIT_CONFIG_NOSYSTEM"] = "1"
    env = bytecode_env(base, tmp / "pycache")
    try:
        root = tmp / "proj"
        _project(root, n, env)
        run_dir = tmp / "run"
        hooked = {
            **env,
            "PYTHONPATH": os.pathsep.join(filter(None, [str(HOOK), env.get("PYTHONPATH")])),
            "LEDGER_HOOK_DIR": str(HOOK),
            "LEDGER_RUN_DIR": str(run_dir),
        }
        plain_s: list[tuple[float, float]] = []
        hooked_s: list[tuple[float, float]] = []
        for r in range(reps):
            shutil.rmtree(run_dir, ignore_errors=True)
            run_dir.mkdir()
            got = in_turn(
                r, {"plain": partial(_timed, root, env), "hooked": partial(_timed, root, hooked)}
            )
            plain_s.append(got["plain"])
            hooked_s.append(got["hooked"])
        without = statistics.median(w for w, _ in plain_s)
        with_hook = statistics.median(w for w, _ in hooked_s)
        cpu_without = statistics.median(c for _, c in plain_s)
        cpu_with = statistics.median(c for _, c in hooked_s)
        seal_s, named = _seal_cost(root, run_dir)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    extra = with_hook - without
    cpu_extra = cpu_with - cpu_without
    return [
        Row(NAME, f"a program reading {n:,} files of 100 B, without the hook", without, "s"),
        Row(
            NAME,
            f"the same program with the start-up hook (reads recorded: {n:,} paths)",
            with_hook,
            "s",
            reference="without the hook",
            ratio=with_hook / without,
        ),
        Row(NAME, "hook overhead (difference), start-up included", extra, "s"),
        Row(
            NAME,
            "hook overhead, CPU time (user + system)",
            cpu_extra,
            "s",
            reference="CPU time without the hook",
            ratio=cpu_with / cpu_without,
            target="≤ +0.25 s",
            passed=cpu_extra <= 0.25,
        ),
        Row(
            NAME,
            "hook CPU time per file opened",
            max(cpu_extra, 0.0) / n * 1e6,
            "µs",
            note=f"median of {reps} runs of each, in alternating order, each after a `sync`; "
            "the hook is ledger's start-up "
            "hook as `ledger record` installs it (argparse/Hydra capture and the audit hook), "
            "bytecode cached; each distinct path read costs one os.write to the run's list; "
            "CPU time is that of the program's process, the steadier figure on a loaded machine",
        ),
        Row(
            NAME,
            f"seal: collect and sort the {n:,} paths (all gitignored: {named:,} named)",
            seal_s,
            "s",
            target="≤ 1 s",
            passed=seal_s <= 1.0,
        ),
        Row(NAME, "seal cost per path read", seal_s / n * 1e6, "µs"),
    ]
