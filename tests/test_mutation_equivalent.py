"""Every entry of ``scripts/mutation_harness/targets.py``'s EQUIVALENT names a mutant its module
has today. The harness matches an entry to a survivor by (module, stripped source line,
mutation) exactly; an entry whose line was since rewritten matches nothing and argues for a
mutant that no longer exists, while the rewritten line's own mutants run unexamined."""

from __future__ import annotations

import sys
from collections import defaultdict
from pathlib import Path

SCRIPTS = Path(__file__).resolve().parent.parent / "scripts"
sys.path.insert(0, str(SCRIPTS))

from mutation_harness.mutate import mutants_of  # noqa: E402
from mutation_harness.targets import EQUIVALENT  # noqa: E402

REPO = SCRIPTS.parent


def test_every_equivalent_entry_names_a_mutant_of_the_current_source() -> None:
    by_module: dict[str, list[tuple[str, str, str]]] = defaultdict(list)
    for key in EQUIVALENT:
        by_module[key[0]].append(key)
    stale = []
    for module, keys in sorted(by_module.items()):
        if not (REPO / module).is_file():
            stale += [f"{k} (no such module)" for k in keys]
            continue
        have = {(m.module, m.source, m.mutation) for m in mutants_of(module)}
        stale += [str(k) for k in keys if k not in have]
    assert not stale, "EQUIVALENT entries that match no mutant:\n" + "\n".join(stale)


def test_an_entry_is_matched_with_its_line_as_written_comment_included() -> None:
    """A source line keeps its trailing comment in the key: the entry for single.py's
    ``update_index=False`` (with its comment) is one of the module's mutants."""
    key = (
        "ledger/replay/single.py",
        "update_index=False,  # the engine updates it once the verdict is stored",
        "False -> True",
    )
    assert key in EQUIVALENT
    assert key in {(m.module, m.source, m.mutation) for m in mutants_of(key[0])}
