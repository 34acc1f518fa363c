"""Every ```console block in the README, the tutorial and the how-to guides is run, in order,
in a temporary directory, and the output it shows is checked.

A block is a list of ``$ command`` lines (a trailing ``\\`` continues a command), each
followed by the output it shows (none: not checked). In the shown output ``…`` matches any text
within a line, and a line holding only ``…`` matches any number of lines. Run ids, object ids
and runs of blanks are normalised on both sides. A block that cannot run here is marked
just above it::

    <!-- docs-test: skip (why) -->

Blocks of one file share a directory (a copy of ``examples/``) and the working directory a
``cd`` left them in. ``ledger`` and ``python`` on the PATH run this checkout.
"""

from __future__ import annotations

import os
import re
import shutil
import stat
import subprocess
import sys
from dataclasses import dataclass, field
from pathlib import Path

import pytest
from _support import REPO, subprocess_env

DOCS = [
    "README.md",
    "docs/tutorial/getting-started.md",
    *sorted(str(p.relative_to(REPO)) for p in (REPO / "docs" / "how-to").glob("*.md")),
]
SKIP = re.compile(r"<!--\s*docs-test:\s*skip\s*\((?P<why>[^)]+)\)\s*-->\s*$")
FENCE = re.compile(r"^```(\w*)\s*$")


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


def parse(text: str) -> list[Block]:
    blocks: list[Block] = []
    lines = text.splitlines()
    i = 0
    while i < len(lines):
        m = FENCE.match(lines[i])
        if not m:
            i += 1
            continue
        lang, start = m.group(1), i
        j = i + 1
        while j < len(lines) and not lines[j].startswith("```"):
            j += 1
        if lang == "console":
            k = start - 1
            while k >= 0 and not lines[k].strip():
                k -= 1
            skip = SKIP.match(lines[k].strip()) if k >= 0 else None
            commands: list[Command] = []
            body = lines[start + 1 : j]
            n = 0
            while n < len(body):
                line = body[n]
                if line.startswith("$ "):
                    cmd = line[2:]
                    while cmd.endswith("\\") and n + 1 < len(body):
                        n += 1
                        cmd = cmd[:-1] + "\n" + body[n]
                    commands.append(Command(start + 2 + n, cmd))
                elif commands:
                    commands[-1].expected.append(line)
                else:
                    raise AssertionError(f"line {start + 2 + n}: console block output before a $")
                n += 1
            blocks.append(Block(start + 1, commands, skip.group("why") if skip else None))
        i = j + 1
    return blocks


def _normalise(text: str) -> str:
    text = re.sub(r"\d{8}T\d{6}(\.\d+)?Z?-[0-9a-f]{8}", "RUN", text)
    text = re.sub(r"b3:[0-9a-f]{64}", "OID", text)
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
def test_console_blocks_run(doc: str, tmp_path: Path) -> None:
    blocks = parse((REPO / doc).read_text(encoding="utf-8"))
    runnable = [b for b in blocks if b.skip is None]
    if not blocks:
        pytest.skip("no console blocks")
    if not runnable:
        pytest.skip(
            "every console block is marked skip: " + "; ".join(b.skip or "" for b in blocks)
        )
    work = tmp_path / "work"
    shutil.copytree(REPO / "examples", work / "examples")
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
    cwd_file = tmp_path / "cwd"
    cwd = work
    for block in runnable:
        for cmd in block.commands:
            script = f'cd "$1" && {{\n{cmd.text}\n}} 2>&1; rc=$?; pwd > "$2"; exit $rc'
            proc = subprocess.run(
                ["bash", "-c", script, "docs", str(cwd), str(cwd_file)],
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
