"""Every shell block in the README, the tutorial and the how-to guides is run, in order, and the
output it shows is checked.

Shell blocks are ```console blocks: ``$ command`` lines (a trailing ``\\`` continues a command),
each followed by the output it shows (none: not checked). In the shown output ``…`` matches any
text within a line, and a line holding only ``…`` matches any number of lines. Run ids, object
ids (also shortened to 12 digits), 64-hex-digit key ids, UTC times and runs of blanks are
normalised on both sides. Every other fenced
block names its language (``text`` for output shown on its own), so no shell block goes unrun.

The commands of one page run as one shell session: they share the working directory and the
exported variables, starting in a fresh copy of ``tests/docs_project`` (a git repository with a
training script, data and a config) — the tutorial starts next to a copy of ``examples/``,
which it uses. Just above a block:

    <!-- docs-test: skip (why) -->          the block cannot run in a test
    <!-- docs-test: write FILE -->          the block's text is written to FILE (a claims file)
    <!-- docs-test: setup
    ledger init
    -->                                     commands run first, shown to no reader

``ledger`` and ``python`` on the PATH run this checkout.
"""

from __future__ import annotations

import importlib.util
import os
import re
import shutil
import stat
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from _support import REPO, require_component, subprocess_env

DOCS = [
    "README.md",
    "docs/tutorial/getting-started.md",
    *sorted(str(p.relative_to(REPO)) for p in (REPO / "docs" / "how-to").glob("*.md")),
]
SKIP = re.compile(r"<!--\s*docs-test:\s*skip\s*\((?P<why>[^)]+)\)\s*-->\s*$")
WRITE = re.compile(r"<!--\s*docs-test:\s*write\s+(?P<file>\S+)\s*-->\s*$")
SETUP = re.compile(r"<!--\s*docs-test:\s*setup\s*\n(?P<body>.*?)-->", re.S)
FENCE = re.compile(r"^```(\w*)\s*$")
START = {  # default: the docs project
    "docs/tutorial/getting-started.md": ".",
    "docs/how-to/verify-and-gate.md": ".",  # its example lives in examples/verify
}
PROJECT = REPO / "tests" / "docs_project"
# Pages whose blocks take more than a few seconds (a five-seed replay, ten recorded seeds,
# importing torch): about a minute each on two shared cores.
SLOW = {
    "docs/how-to/record-and-replay.md",
    "docs/how-to/checkpoints.md",
    "docs/how-to/audit-claims.md",
    "docs/how-to/import-from-mlflow.md",
    "docs/how-to/cluster-seeds.md",
    "docs/how-to/hydra-sweeps.md",
    "docs/how-to/localize-divergence.md",
}
TORCH = {"docs/how-to/checkpoints.md", "docs/how-to/localize-divergence.md"}
# Run by `make test-heavy` only (CI runs both): the localize page replays a divergent run
# through every localization pass, 90.7 s of one worker in the idle run of 2026-12-06, the
# suite's slowest test; tests/trace/ checks the same passes in the default set.
HEAVY = {"docs/how-to/localize-divergence.md"}
SLURM = {"docs/how-to/cluster-seeds.md"}  # run against a one-node Slurm (tests/_slurm.py)
MLFLOW = {"docs/how-to/import-from-mlflow.md"}  # needs the mlflow extra


@dataclass
class Command:
    line: int
    text: str
    expected: list[str] = field(default_factory=list)


@dataclass
class Block:
    line: int
    commands: list[Command]
    skip: str | None
    write: str | None = None  # a file to write ``text`` to, instead of commands to run
    text: str = ""


def _commands(body: list[str], first: int) -> list[Command]:
    commands: list[Command] = []
    n = 0
    while n < len(body):
        line = body[n]
        if line.startswith("$ "):
            cmd, at = line[2:], first + n
            while cmd.endswith("\\") and n + 1 < len(body):
                n += 1
                cmd = cmd + "\n" + body[n]  # bash reads the backslash-newline
            commands.append(Command(at, cmd))
        elif commands:
            commands[-1].expected.append(line)
        else:
            raise AssertionError(f"line {first + n}: console block output before a $")
        n += 1
    return commands


def parse(text: str) -> list[Block]:
    blocks: list[Block] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        if lines[i].strip().startswith("<!--") and SETUP.match("\n".join(lines[i:])):
            j = i + 1
            while "-->" not in lines[j]:
                j += 1
            body = ["$ " + c for c in lines[i + 1 : j] if c.strip()]
            blocks.append(Block(i + 1, _commands(body, i + 2), None))
            i = j + 1
            continue
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        lang, start = m.group(1), i
        j = i + 1
        while j < len(lines) and not lines[j].startswith("```"):
            j += 1
        k = start - 1
        while k >= 0 and not lines[k].strip():
            k -= 1
        above = lines[k].strip() if k >= 0 else ""
        skip, write = SKIP.match(above), WRITE.match(above)
        body = lines[start + 1 : j]
        if write:
            blocks.append(Block(start + 1, [], None, write.group("file"), "\n".join(body) + "\n"))
        elif lang == "console":
            why = skip.group("why") if skip else None
            blocks.append(Block(start + 1, _commands(body, start + 2), why))
        i = j + 1
    return blocks


def untagged_fences(text: str) -> list[int]:
    """Lines of fenced blocks that name no language: a shell block there would go unrun."""
    out, inside = [], False
    for n, line in enumerate(text.splitlines(), 1):
        if line.startswith("```"):
            if not inside and not line[3:].strip():
                out.append(n)
            inside = not inside
    return out


def _normalise(text: str) -> str:
    text = re.sub(r"\d{8}T\d{6}(\.\d+)?Z?-[0-9a-f]{8}", "RUN", text)
    text = re.sub(r"b3:[0-9a-f]{64}", "OID", text)
    text = re.sub(r"b3:[0-9a-f]{12}(?![0-9a-f])", "OID", text)  # as tables shorten them
    text = re.sub(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z", "TIME", text)
    text = re.sub(r"\b[0-9a-f]{64}\b", "HEX", text)  # key ids, digests without b3:
    # Column widths follow the content: compare words, not the number of blanks between them.
    return "\n".join(re.sub(r"[ \t]+", " ", line).rstrip() for line in text.splitlines())


def _pattern(expected: list[str]) -> re.Pattern[str]:
    parts = []
    for line in _normalise("\n".join(expected)).splitlines():
        if line.strip() == "…":
            parts.append(r"(?:[^\n]*\n)*?")
        else:
            parts.append(".*".join(re.escape(p) for p in line.split("…")) + r"[ \t]*\n")
    return re.compile("".join(parts))


def _shims(bin_dir: Path) -> None:
    bin_dir.mkdir()
    for name, body in (
        ("ledger", f'exec "{sys.executable}" -m ledger "$@"\n'),
        ("python", f'exec "{sys.executable}" "$@"\n'),
        ("python3", f'exec "{sys.executable}" "$@"\n'),
    ):
        path = bin_dir / name
        path.write_text("#!/bin/sh\n" + body)
        path.chmod(path.stat().st_mode | stat.S_IEXEC)


def test_docs_have_console_blocks() -> None:
    total = sum(len(parse((REPO / d).read_text())) for d in DOCS)
    assert total >= 8
    assert any(b.skip is None for b in parse((REPO / DOCS[1]).read_text()))


@pytest.mark.parametrize("doc", DOCS)
def test_every_fenced_block_names_its_language(doc: str) -> None:
    assert untagged_fences((REPO / doc).read_text(encoding="utf-8")) == [], doc


def _start(doc: str, work: Path, env: dict[str, str]) -> Path:
    """The directory a page starts in: a fresh git repository holding the docs project."""
    shutil.copytree(REPO / "examples", work / "examples")
    if doc in START:
        return work / START[doc]
    project = work / "project"
    shutil.copytree(PROJECT, project)
    (project / ".gitignore").write_text(".ledger/\nout/\n")
    for argv in (["init", "-q"], ["add", "-A"], ["commit", "-qm", "docs project"]):
        subprocess.run(["git", *argv], cwd=project, env=env, check=True, capture_output=True)
    return project


@pytest.fixture
def docs_slurm(tmp_path: Path) -> Iterator[dict[str, str]]:
    """A one-node Slurm for this page only; its SLURM_CONF for the page's commands."""
    from _slurm import require_slurm, slurm_cluster

    require_slurm()
    with slurm_cluster(tmp_path / "slurm", "docs") as cluster:
        yield cluster.env()


@pytest.mark.parametrize(
    "doc",
    [
        pytest.param(
            d,
            marks=[pytest.mark.slow] * (d in SLOW)
            + [pytest.mark.torch] * (d in TORCH)
            + [pytest.mark.heavy] * (d in HEAVY),
        )
        for d in DOCS
    ],
)
def test_console_blocks_run(doc: str, tmp_path: Path, request: pytest.FixtureRequest) -> None:
    if doc in TORCH:
        pytest.importorskip("torch")
    if doc in MLFLOW:
        require_component(
            importlib.util.find_spec("mlflow"), "mlflow", "pip install 'ledger-repro[mlflow]'"
        )
    blocks = parse((REPO / doc).read_text(encoding="utf-8"))
    runnable = [b for b in blocks if b.skip is None]
    if not any(b.commands for b in runnable):
        pytest.skip(
            "no console block runs here: " + "; ".join(b.skip or "" for b in blocks)
            if blocks
            else "no console blocks"
        )
    work = tmp_path / "work"
    _shims(tmp_path / "bin")
    env = subprocess_env(
        PATH=f"{tmp_path / 'bin'}{os.pathsep}{os.environ['PATH']}",
        HOME=str(tmp_path),
        GIT_AUTHOR_NAME="docs",
        GIT_AUTHOR_EMAIL="docs@example.invalid",
        GIT_COMMITTER_NAME="docs",
        GIT_COMMITTER_EMAIL="docs@example.invalid",
        LEDGER_DIR="",
    )
    env.pop("LEDGER_SIGNING_KEY", None)
    env.pop("LEDGER_VERIFY_KEY", None)
    if doc in SLURM:
        env.update(request.getfixturevalue("docs_slurm"))
    cwd = _start(doc, work, env)
    cwd_file, env_file = tmp_path / "cwd", tmp_path / "env"
    env_file.write_text("")
    for block in runnable:
        if block.write is not None:
            (cwd / block.write).write_text(block.text)
            continue
        for cmd in block.commands:
            # One shell session per page: the directory and exported variables carry over.
            script = (
                f'cd "$1" && . "$3" && {{\n{cmd.text}\n}} 2>&1; rc=$?; pwd > "$2"; '
                "export -p | grep -Ev '^declare -x (PWD|OLDPWD|SHLVL|_)=' > \"$3\"; exit $rc"
            )
            proc = subprocess.run(
                ["bash", "-c", script, "docs", str(cwd), str(cwd_file), str(env_file)],
                env=env,
                capture_output=True,
                text=True,
                timeout=300,
            )
            where = f"{doc}:{cmd.line}: $ {cmd.text}"
            assert proc.returncode == 0, (
                f"{where}\nexit {proc.returncode}\n{proc.stdout}{proc.stderr}"
            )
            cwd = Path(cwd_file.read_text().strip())
            if cmd.expected:
                actual = _normalise(proc.stdout) + "\n"
                assert _pattern(cmd.expected).fullmatch(actual), (
                    f"{where}\n--- documented\n"
                    + "\n".join(cmd.expected)
                    + f"\n--- actual\n{proc.stdout}"
                )
