"""Start-up overhead of ``ledger record``: ``ledger record -- python -c pass`` against a bare
``python -c pass``, interleaved in one run in a temporary git repository with a ``.ledger``,
plus where the recorder's own time goes (its imports, from ``python -X importtime``)."""

from __future__ import annotations

import os
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from functools import partial
from pathlib import Path

from . import Row, baseline_checkout, bytecode_env, in_turn

NAME = "record: start-up overhead"
REPO = Path(__file__).resolve().parent.parent
_IMPORT_LINE = re.compile(r"^import time:\s+(\d+) \|\s+(\d+) \|( +)(\S+)$")


def _env() -> dict[str, str]:
    env = {**os.environ, "PYTHONPATH": str(REPO), "GIT_CONFIG_NOSYSTEM": "1"}
    env.pop("LEDGER_DIR", None)
    return env


def _timed(argv: list[str], cwd: Path, env: dict[str, str]) -> tuple[float, float]:
    """Wall seconds and CPU seconds (user + system, the process and every descendant it
    waited for: the recorded command too) of one run of ``argv``."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    t = time.perf_counter()
    subprocess.run(
        argv, cwd=cwd, env=env, check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL
    )
    wall = time.perf_counter() - t
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return wall, cpu


def _project(root: Path, env: dict[str, str]) -> None:
    """A small committed project with a ledger, as a user would have."""
    root.mkdir(parents=True)
    (root / "train.py").write_text("print('training')\n")
    for args in (
        ["init", "-q"],
        ["config", "user.email", "bench@example.org"],
        ["config", "user.name", "bench"],
        ["add", "train.py"],
        ["commit", "-q", "-m", "init"],
    ):
        subprocess.run(["git", *args], cwd=root, env=env, check=True)
    subprocess.run(
        [sys.executable, "-m", "ledger", "init"],
        cwd=root,
        env=env,
        check=True,
        capture_output=True,
    )


def top_imports(stderr: str) -> list[tuple[str, float]]:
    """Top-level modules and their cumulative import seconds from ``-X importtime`` output."""
    out = []
    for line in stderr.splitlines():
        m = _IMPORT_LINE.match(line)
        if m and len(m.group(3)) == 1:  # one space: imported at top level, not nested
            out.append((m.group(4), int(m.group(2)) / 1e6))
    return out


def run(quick: bool) -> list[Row]:
    reps = 6 if quick else 22  # even: each order of the sides as often (``bench.in_turn``)
    tmp = Path(tempfile.mkdtemp(prefix="ledger-bench-record-", dir="/tmp"))
    env = bytecode_env(_env(), tmp / "pycache")
    try:
        project = tmp / "project"
        _project(project, env)
        bare = [sys.executable, "-c", "pass"]
        recorded = [sys.executable, "-m", "ledger", "record", "--", *bare]
        cli_import = [sys.executable, "-c", "import ledger.cli.app"]
        base = baseline_checkout(tmp / "baseline")
        base_env = {**env, "PYTHONPATH": str(base[1])} if base else env
        cases = [
            ("bare", bare, env, project),
            ("recorded", recorded, env, project),
            ("cli", cli_import, env, project),
        ]
        if base is not None:
            # Its own project and ledger: the two versions' secret-detection rules differ, so
            # sharing one ledger would drop its memo of clean lines (.ledger/cache) on every
            # switch, and both would import the detectors on every run.
            base_project = tmp / "project-baseline"
            _project(base_project, base_env)
            cases.append(("baseline", recorded, base_env, base_project))
        for _, argv, e, cwd in cases:  # warm the page cache, bytecode and the secrets memo
            _timed(argv, cwd, e)
        times: dict[str, list[float]] = {key: [] for key, _, _, _ in cases}
        cpu: dict[str, list[float]] = {key: [] for key, _, _, _ in cases}
        sides = {key: partial(_timed, argv, cwd, e) for key, argv, e, cwd in cases}
        # In an order that turns, each after a sync (``bench.in_turn``): a recorded run seals
        # with fsyncs, and a fixed order always gave the same side the disk after them.
        for r in range(reps):
            for key, (wall, used) in in_turn(r, sides).items():
                times[key].append(wall)
                cpu[key].append(used)
        profiled = subprocess.run(
            [sys.executable, "-X", "importtime", "-m", "ledger", "record", "--", *bare],
            cwd=project,
            env=env,
            check=True,
            capture_output=True,
            text=True,
        )
        imports = top_imports(profiled.stderr)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)

    bare_s = statistics.median(times["bare"])
    rec_s = statistics.median(times["recorded"])
    cli_s = statistics.median(times["cli"])
    import_s = sum(s for _, s in imports)
    heaviest = ", ".join(
        f"{name} {s * 1000:.0f} ms" for name, s in sorted(imports, key=lambda x: -x[1])[:5]
    )
    overhead = rec_s - bare_s
    cpu_overhead = statistics.median(cpu["recorded"]) - statistics.median(cpu["bare"])
    before: list[Row] = []
    before_cpu: list[Row] = []
    if base is not None:
        base_s = statistics.median(times["baseline"])
        before = [
            Row(
                NAME,
                f"overhead of `ledger record` at {base[0]} (before), same run",
                base_s - bare_s,
                "s",
                "overhead now",
                (base_s - bare_s) / overhead if overhead > 0 else None,
            )
        ]
        base_cpu = statistics.median(cpu["baseline"]) - statistics.median(cpu["bare"])
        before_cpu = [
            Row(
                NAME,
                f"overhead of `ledger record` at {base[0]} (before), CPU time",
                base_cpu,
                "s",
                "CPU overhead now",
                base_cpu / cpu_overhead if cpu_overhead > 0 else None,
            )
        ]
    return [
        Row(
            NAME,
            "`python -c pass`",
            bare_s,
            "s",
            note=(
                f"median of {reps} interleaved runs of each command (the order turning, each "
                "after a `sync`), in a temporary git "
                "repository (one committed file) with a `.ledger`; the run records pile up "
                "in that ledger as they would in use"
            ),
        ),
        Row(
            NAME,
            "`ledger record -- python -c pass`",
            rec_s,
            "s",
            "`python -c pass`",
            rec_s / bare_s,
            note=(
                "`ledger record` is `python -m ledger record` with this checkout on PYTHONPATH: "
                "it freezes the contract (git snapshot, environment fingerprint), starts the "
                "command, seals the run and updates the index"
            ),
        ),
        Row(
            NAME,
            "overhead of `ledger record` (difference)",
            overhead,
            "s",
            target="≤ +0.25 s",
            passed=overhead <= 0.25,
            note=(
                "bytecode is cached (PYTHONPYCACHEPREFIX in the bench's temporary folder) as in "
                "an installed package; PYTHONDONTWRITEBYTECODE would add ~0.1 s of compiling "
                "to every start"
            ),
        ),
        Row(
            NAME,
            "overhead of `ledger record`, CPU time (user + system)",
            cpu_overhead,
            "s",
            target="≤ +0.25 s",
            passed=cpu_overhead <= 0.25,
            note=(
                "CPU time: of `ledger record` and the command it runs, minus that of the bare "
                "command (medians); it does not wait for a core, so it is what the recorder "
                "adds on an idle machine, where wall and CPU time agree"
            ),
        ),
        *before,
        *before_cpu,
        Row(
            NAME,
            "`python -c 'import ledger.cli.app'` (the CLI's imports alone)",
            cli_s,
            "s",
            "`ledger record -- python -c pass`",
            cli_s / rec_s,
        ),
        Row(
            NAME,
            "all imports of the recorder (`-X importtime`, top-level cumulative)",
            import_s,
            "s",
            "`ledger record -- python -c pass`",
            import_s / rec_s,
            note=f"heaviest top-level imports of the recorder: {heaviest}",
        ),
    ]
