"""``requirements/demo.txt``: the part of ``requirements/lock.txt`` that ``make demo`` installs.

The demo needs ledger's core and its ``torch`` extra, not every extra ``make test`` installs
(dvc, mlflow, onnx, the docs site...: 2.2 GB and minutes). Resolving that subset again could
pick other versions than the lock's; this takes the lock's own entries instead, versions and
hashes as they are: the core's and the torch extra's requirements, the lock's own roots that
the demo needs (``torch`` CPU build, ``setuptools``, from ``requirements/lock.in``), and every
package the lock says one of those requires (its ``# via`` lines), to closure. A package that
only an unneeded one requires stays out. ``scripts/lock.sh`` (``make lock``) runs this after
resolving the lock; tests/test_lock.py checks the file is current.

    python scripts/lock_subset.py            # write requirements/demo.txt
    python scripts/lock_subset.py --check    # exit 1 when it is not what the lock gives
"""

from __future__ import annotations

import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
LOCK = ROOT / "requirements" / "lock.txt"
DEMO = ROOT / "requirements" / "demo.txt"
EXTRAS = ("torch",)  # besides the core dependencies
FROM_LOCK_IN = ("torch", "setuptools")  # lock.in's pins the demo install needs
_ENTRY = re.compile(r"^([A-Za-z0-9][A-Za-z0-9._-]*)==\S+", re.M)
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*")


def canonical(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def entries(text: str) -> dict[str, tuple[str, set[str]]]:
    """name -> (the entry's lines as the lock has them, the packages its ``# via`` names)."""
    starts = [m.start() for m in _ENTRY.finditer(text)]
    out: dict[str, tuple[str, set[str]]] = {}
    for i, start in enumerate(starts):
        end = starts[i + 1] if i + 1 < len(starts) else len(text)
        block = text[start:end]
        # A trailing comment block that opens the next section belongs to no entry.
        block = block.split("\n\n", 1)[0].rstrip("\n") + "\n"
        via: set[str] = set()
        for line in block.splitlines():
            comment = line.strip().removeprefix("#").strip()
            if not line.strip().startswith("#"):
                continue
            comment = comment.removeprefix("via").strip()
            m = _NAME.match(comment)
            if m and not comment.startswith("-r"):
                via.add(canonical(m.group(0)))
        name = canonical(_ENTRY.match(block).group(1))  # type: ignore[union-attr]
        out[name] = (block, via)
    return out


def roots() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    reqs = list(project["dependencies"])
    for extra in EXTRAS:
        reqs += project["optional-dependencies"][extra]
    names = {canonical(_NAME.match(r).group(0)) for r in reqs}  # type: ignore[union-attr]
    return names | set(FROM_LOCK_IN)


def subset(text: str) -> str:
    locked = entries(text)
    need = {r for r in roots() if r in locked}
    missing = roots() - set(locked)
    if missing:
        raise SystemExit(
            f"not in requirements/lock.txt: {', '.join(sorted(missing))}: run make lock"
        )
    grew = True
    while grew:
        more = {n for n, (_, via) in locked.items() if n not in need and via & need}
        need |= more
        grew = bool(more)
    head = (
        "# What `make demo` installs: ledger's core and its torch extra, the entries of\n"
        "# requirements/lock.txt they need (versions and hashes as there), written by\n"
        "# scripts/lock_subset.py from the lock (`make lock` runs it). Do not edit.\n"
    )
    return head + "".join(locked[n][0] for n in sorted(need))


def main(argv: list[str]) -> int:
    want = subset(LOCK.read_text())
    if "--check" in argv:
        if not DEMO.is_file() or DEMO.read_text() != want:
            print(
                "requirements/demo.txt is not what lock.txt gives: run make lock", file=sys.stderr
            )
            return 1
        return 0
    DEMO.write_text(want)
    print(f"scripts/lock_subset.py: {DEMO.relative_to(ROOT)} written ({want.count('==')} packages)")
    return 0


if __name__ == "__main__":
    raise SystemExit(main(sys.argv[1:]))
