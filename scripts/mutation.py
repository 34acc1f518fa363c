"""Mutation testing of the modules whose bugs would corrupt evidence (``make mutation``).

A small AST mutator of our own, not mutmut: mutmut 3 rewrites every function into a trampoline
and runs the tests from a ``mutants/`` copy, which our tests defeat (they start ``python -m
ledger`` children from the test file's checkout). Here each mutant is one changed source span
written into a throw-away copy of the checkout, and the module's related tests (``MODULES``) run
against that copy with ``pytest -x``: a failing run kills the mutant, a green one lets it survive.

    python scripts/mutation.py                     # every module in MODULES
    python scripts/mutation.py ledger/store/log.py # one module
    python scripts/mutation.py --list ledger/store/log.py  # print the mutants, run nothing

Operators: comparison flips (== !=, < <=, > >=, is / is not, in / not in), and <-> or,
dropping a ``not``, + <-> -, * <-> /, True <-> False, an int constant n -> n + 1, a float
constant x -> 2x, ``return X`` -> ``return None``, a ``raise`` or a bare call statement
-> ``pass``. Strings are left alone (messages), and so are calls of ``os.fsync`` and
``fsync_dir``: only a power loss shows their absence, which no test here simulates.

Survivors judged equivalent (no test can tell them apart from the original) are listed in
``EQUIVALENT`` by module, source line and mutation, each with its reason; the score counts
them apart. Results go to ``mutation-results/<module>.json``.
"""

from __future__ import annotations

import argparse
import ast
import contextlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from dataclasses import asdict, dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

# module -> the tests that exercise it (fast files first: -x stops at the first failure).
MODULES: dict[str, list[str]] = {
    "ledger/store/objects.py": [
        "tests/test_objects_codec_rules.py",
        "tests/test_objects_layout.py",
        "tests/test_integrity_holes.py",
        "tests/test_objects.py",
        "tests/test_cli_store.py",
        "tests/test_gc.py",
    ],
    "ledger/store/log.py": [
        "tests/test_log_and_refs.py",
        "tests/test_integrity_holes.py",
        "tests/test_cli_store.py",
    ],
    "ledger/store/refs.py": [
        "tests/test_log_and_refs.py",
        "tests/test_integrity_holes.py",
        "tests/test_cli_store.py",
    ],
    "ledger/store/verify.py": [
        "tests/test_store_verify.py",
        "tests/test_integrity_holes.py",
        "tests/test_log_and_refs.py",
    ],
    "ledger/store/gc.py": ["tests/test_gc_sweep.py", "tests/test_gc.py"],
    "ledger/store/staging.py": [
        "tests/test_store_staging.py",
        "tests/test_gc_sweep.py",
        "tests/test_store_verify.py",
    ],
    "ledger/store/anchor.py": ["tests/test_store_anchor.py", "tests/test_store_verify.py"],
    "ledger/capture/redact.py": [
        "tests/capture/test_redact_edges.py",
        "tests/capture/test_redact_rules.py",
        "tests/capture/test_redact_stored.py",
    ],
    "ledger/capture/secrets.py": [
        "tests/capture/test_secrets_edges.py",
        "tests/capture/test_secret_scrub.py",
        "tests/capture/test_secret_corpus.py",
        "tests/capture/test_secrets_log_limit.py",
    ],
    "ledger/stats/tolerance.py": [
        "tests/stats/test_tolerance_edges.py",
        "tests/stats/test_stats_tolerance.py",
        "tests/replay/test_bitwise_edges.py::test_bitwise_equal_tells_signed_zeros_and_nan_payloads_apart",
        "tests/replay/test_bitwise_edges.py::test_bitwise_structured_comparison_refuses_a_signed_zero",
    ],
    "ledger/stats/equivalence.py": [
        "tests/stats/test_equivalence_edges.py",
        "tests/stats/test_stats_tost.py",
        "tests/stats/test_stats_bootstrap.py",
        "tests/stats/test_stats_api.py",
    ],
    "ledger/replay/compare_outputs.py": [
        "tests/replay/test_compare_outputs.py",
        "tests/replay/test_bitwise_edges.py",
        "tests/replay/test_compare_structured.py",
        "tests/replay/test_compare_trees.py",
    ],
    "ledger/replay/compare/_common.py": [
        "tests/replay/test_compare_structured.py",
        "tests/replay/test_bitwise_edges.py",
        "tests/replay/test_compare_trees.py",
        "tests/replay/test_compare_tensors.py",
    ],
    "ledger/replay/compare/checkpoints.py": [
        "tests/replay/test_compare_checkpoints.py",
        "tests/replay/test_compare_outputs.py",
    ],
    "ledger/torch/ckpt_save.py": ["tests/checkpoint/test_ckpt_save_load.py"],
    "ledger/torch/ckpt_load.py": ["tests/checkpoint/test_ckpt_save_load.py"],
}

# (module, stripped source line, mutation) -> why no test can tell the mutant from the original.
# "durability:" marks a mutant that only a crash or power loss between two steps could show.
_LOG = "ledger/store/log.py"
_OBJ = "ledger/store/objects.py"
_VERIFY = "ledger/store/verify.py"
_GC = "ledger/store/gc.py"
_REDACT = "ledger/capture/redact.py"
_SECRETS = "ledger/capture/secrets.py"
_GIT_PATCH = "a patch from git always opens with `diff --git` and a hunk header"
_FOUR = (
    "no line of four characters is flagged: checked for every one that passes the candidate "
    "filter (7854 lines, as yaml, py, env and log), none is"
)
_RACE = "reached only when a writer acts between two of gc's own steps: a race no test stages"
EQUIVALENT: dict[tuple[str, str, str], str] = {
    (
        "ledger/stats/tolerance.py",
        "if math.isnan(o) or math.isnan(r):",
        "or -> and",
    ): (
        "with one NaN the later tests are false too (NaN equals nothing and is no closer than "
        "any bound), so is_close still says False"
    ),
    (
        "ledger/replay/compare/checkpoints.py",
        'leaf = key.rsplit("/", 1)[-1]',
        "1 -> 2",
    ): "the last part is the same however many splits come before it",
    (
        "ledger/replay/compare/checkpoints.py",
        'return [prefix + key, key, leaf, leaf.rsplit(".", 1)[-1]]',
        "1 -> 2",
    ): "the last part is the same however many splits come before it",
    (
        "ledger/replay/compare/checkpoints.py",
        "for sa, sb in zip(ca.shards, cb.shards, strict=True):",
        "True -> False",
    ): (
        "the world sizes were compared just above, and a record holds one shard per rank: "
        "the lengths always agree here"
    ),
    (_SECRETS, "@lru_cache(maxsize=1)", "1 -> 2"): (
        "the cache of a function without arguments holds one entry whatever its size"
    ),
    (_SECRETS, "def preload(delay: float = 0.0) -> threading.Timer:", "0.0 -> 1.0"): (
        "the default is never seen: the one caller (record) passes delay=1.0"
    ),
    (_SECRETS, "if len(line) < 4 or not _candidate(line):", "len(line) < 4 -> len(line) <= 4"): (
        _FOUR
    ),
    (_SECRETS, "if len(line) < 4 or not _candidate(line):", "4 -> 5"): _FOUR,
    (_SECRETS, "_WINDOW = 4096", "4096 -> 4097"): (
        "the window size: a secret of up to _OVERLAP characters is seen whole in one window "
        "either way"
    ),
    (_SECRETS, "_OVERLAP = 512", "512 -> 513"): (
        "the windows' overlap: every token a detector knows is far shorter than 512 characters"
    ),
    (_SECRETS, "if len(line) > _WINDOW:", "len(line) > _WINDOW -> len(line) >= _WINDOW"): (
        "a line of exactly _WINDOW characters is then judged in one window: the whole line"
    ),
    (
        _SECRETS,
        "for i in range(0, len(line) - _OVERLAP, step):",
        "len(line) - _OVERLAP -> len(line) + _OVERLAP",
    ): "more windows at the end, each a part of the line the last window already holds",
    (
        _SECRETS,
        "for secret in plugin.analyze_line(filename=filename, line=line, line_number=0):",
        "0 -> 1",
    ): "the line number only labels the detector's match, which is not kept",
    (_SECRETS, "judge = _Judge(os.path.basename(where) or where)", "or -> and"): (
        "the keyword detector reads only the file's extension, which a path and its base name share"
    ),
    (_SECRETS, "new_line = 0", "0 -> 1"): f"{_GIT_PATCH}, which sets the line number",
    (_SECRETS, "old_line = 0", "0 -> 1"): f"{_GIT_PATCH}, which sets the line number",
    (_SECRETS, 'name = path.rstrip("/").rsplit("/", 1)[-1]', "1 -> 2"): (
        "the last part is the same however many splits come before it"
    ),
    (
        _SECRETS,
        "for i, (raw, red) in enumerate(zip(argv, redacted, strict=True)):",
        "True -> False",
    ): "redact_argv returns one argument for each it is given: the lengths always agree",
    (_SECRETS, "return False", "return X -> return None"): (
        "None is as false as False to every caller (`if hunk.body(line)`, `or` in launch_secrets)"
    ),
    (_SECRETS, "if name[:1] == b'\"' and name[-1:] == b'\"':", "and -> or"): (
        'git quotes every name that holds a `"`: an unquoted name neither starts nor ends '
        "with one, and a quoted one does both"
    ),
    (_SECRETS, "start = -(-8 * k // 6)", "8 -> 9"): (
        "for the three alignments k = 0, 1, 2, ceil(8k/6) and ceil(9k/6) are both 0, 2, 3"
    ),
    (_SECRETS, "start = -(-8 * k // 6)", "6 -> 7"): (
        "for the three alignments k = 0, 1, 2, ceil(8k/6) and ceil(8k/7) are both 0, 2, 3"
    ),
    (_SECRETS, "for k in range(3):", "3 -> 4"): (
        "a shift of three bytes is four base64 characters: the same core as no shift"
    ),
    ("ledger/store/staging.py", "@dataclass(frozen=True)", "True -> False"): (
        "frozen only forbids assignment (and adds a hash), and no code assigns to or hashes a "
        "StagingDir"
    ),
    (
        "ledger/store/staging.py",
        "live = bool(held) or (held is None and time.time() - last < UNLEASED_MIN_AGE)",
        "time.time() - last < UNLEASED_MIN_AGE -> time.time() - last <= UNLEASED_MIN_AGE",
    ): "equality to the float time.time() read inside scan_staging: no test can arrange it "
    "without a fake clock",
    ("ledger/store/anchor.py", "@dataclass(frozen=True)", "True -> False"): (
        "frozen only forbids assignment (and adds a hash), and no code assigns to or hashes a "
        "HeadCheck"
    ),
    (_REDACT, 'name = arg.split("=", 1)[0]', "1 -> 2"): (
        "the part before the first `=` is the same however many splits follow"
    ),
    (_REDACT, "return False", "return X -> return None"): (
        "None is as false as False to every caller of is_secret_name (`if`/`not`/`and`)"
    ),
    (
        _REDACT,
        "while len(words) > 1 and words[-1] in _QUALIFIERS:",
        "len(words) > 1 -> len(words) >= 1",
    ): (
        "also pops a name's only word when it is a qualifier; no qualifier is a secret word, "
        "so the name is not secret either way"
    ),
    (
        _REDACT,
        'if _OPTION.match(arg) and len(name.lstrip("-")) > 1:',
        "len(name.lstrip('-')) > 1 -> len(name.lstrip('-')) >= 1",
    ): (
        "a one-letter option other than -p/-P is never a secret name, and its `=value` is "
        "scanned the same as the whole argument"
    ),
    (_REDACT, 'if _OPTION.match(arg) and len(name.lstrip("-")) > 1:', "1 -> 2"): (
        "no secret name has two letters, and a non-secret `--xy=value` is scanned the same "
        "as the whole argument"
    ),
    (_GC, "reachable: int = 0", "0 -> 1"): (
        "the default is never seen: collect_garbage always sets reachable"
    ),
    (_GC, "dry_run: bool = True", "True -> False"): (
        "the default is never seen: collect_garbage always passes dry_run"
    ),
    (_GC, 'aside = store.tmp_dir / f"gc-{oid[3:]}"', "3 -> 4"): (
        "the name of gc's own short-lived temp file; still unique per object swept in turn"
    ),
    (_GC, "return False", "return X -> return None"): (
        "None is as false as False to the one caller (`not _sweep(...)`)"
    ),
    (_GC, "report.too_young.append(oid)", "drop call: report.too_young.append(oid)"): (
        f"the one after a failed sweep: {_RACE} (a touch between the stat and the sweep)"
    ),
    (_GC, "shutil.rmtree(s.path, ignore_errors=True)", "True -> False"): (
        f"{_RACE} (a staging dir removed by another gc between the scan and the rmtree)"
    ),
    (_GC, "tmp.unlink(missing_ok=True)", "True -> False"): (
        f"{_RACE} (a temp file renamed away between gc's lstat and its unlink)"
    ),
    (
        _GC,
        "if s.live or now - s.last_write < grace_seconds:",
        "now - s.last_write < grace_seconds -> now - s.last_write <= grace_seconds",
    ): (
        "equality to the float `now` that collect_garbage reads itself: no test can arrange "
        "it without a fake clock"
    ),
    (_VERIFY, "@dataclass(frozen=True)", "True -> False"): (
        "frozen only forbids assignment (and adds a hash), and no code assigns to or hashes a "
        "Problem"
    ),
    (_VERIFY, "log_entries: int = 0", "0 -> 1"): (
        "the default is never seen: verify_store always sets log_entries from chain_head"
    ),
    (
        _VERIFY,
        'where = "end of log" if p.line < 0 else f"log line {p.line}"',
        "p.line < 0 -> p.line <= 0",
    ): "log lines are numbered from 1 and the end of the log is -1: no problem has line 0",
    (_VERIFY, 'where = "end of log" if p.line < 0 else f"log line {p.line}"', "0 -> 1"): (
        "log lines are numbered from 1 and the end of the log is -1: no problem has line 0"
    ),
    (_LOG, "@dataclass(frozen=True)", "True -> False"): (
        "frozen only forbids assignment, and no code assigns to a LogEntry or ChainProblem"
    ),
    (_LOG, "end = f.seek(0, os.SEEK_END)", "0 -> 1"): (
        "one past the end: the first block read is one byte short at EOF, so every byte is "
        "still read exactly once"
    ),
    (_LOG, "block = 4096", "4096 -> 4097"): "the read block size; any size reads the same lines",
    (_LOG, "if len(complete) >= 2 or (pos == 0 and complete):", "2 -> 3"): (
        "waits for one more complete line before returning; the last line returned is the same"
    ),
    (
        _LOG,
        "if len(complete) >= 2 or (pos == 0 and complete):",
        "len(complete) >= 2 -> len(complete) > 2",
    ): "the same as 2 -> 3",
    (_LOG, 'return f.read(1) != b"\\n"', "1 -> 2"): (
        "read at the last byte: read(2) returns the same single byte"
    ),
    (_LOG, "return False", "return X -> return None"): (
        "None is as false as False to every caller (`if`/`not`)"
    ),
    (_LOG, "f.flush()", "drop call: f.flush()"): (
        "durability: the `with` block's close() writes the buffer anyway; only a crash between "
        "fsync and close could tell"
    ),
    (
        _OBJ,
        "return fd if isinstance(fd, int) and stat.S_ISREG(os.fstat(fd).st_mode) else None",
        "return X -> return None",
    ): "the sendfile fast path is skipped and the bytes go through Python: same content",
    (
        _OBJ,
        "return fd if isinstance(fd, int) and stat.S_ISREG(os.fstat(fd).st_mode) else None",
        "and -> or",
    ): (
        "a pipe or socket destination also takes the sendfile path, which Linux accepts for "
        "any output descriptor since 2.6.33: same bytes; the guard is for other kernels"
    ),
    (_OBJ, "f.flush()", "drop call: f.flush()"): (
        "durability: the close() that follows still writes the buffer before the rename (a test "
        "checks the renamed file is complete); only the fsync between them then syncs less"
    ),
    (_OBJ, "f.close()", "drop call: f.close()"): (
        "the buffer was flushed just before, and temp_file closes the file on exit"
    ),
    (_OBJ, "return False", "return X -> return None"): (
        "None is as false as False to every caller (`if`/`not`/`and`)"
    ),
    (
        _OBJ,
        "len(data) <= SAMPLE or compression_pays(data[:SAMPLE])",
        "len(data) <= SAMPLE -> len(data) < SAMPLE",
    ): ("at exactly SAMPLE bytes the sample is the whole content: the same 10% rule decides"),
    (
        _OBJ,
        "writer = zstandard.ZstdCompressor(level=ZSTD_LEVEL).stream_writer(f, closefd=False)",
        "False -> True",
    ): "the writer is never closed, so whether closing it would close the file never matters",
    (_OBJ, "while sent := os.sendfile(dest_fd, src_fd, offset, CHUNK * 8):", "8 -> 9"): (
        "the sendfile chunk size; any size copies the same bytes"
    ),
    (_OBJ, "ZSTD_LEVEL = 3", "3 -> 4"): (
        "the compression level changes only the compressed size: ids, content and codec byte "
        "are the same"
    ),
}

SKIP_CALLS = {"fsync", "fsync_dir"}
# Start-up is most of a killed mutant's cost: leave out plugins no related test uses.
PYTEST_PLUGINS_OFF = ["-p", "no:cacheprovider", "-p", "no:hydra_pytest", "-p", "no:benchmark"]


@dataclass
class Mutant:
    module: str
    line: int
    source: str
    mutation: str
    start: tuple[int, int]
    end: tuple[int, int]
    replacement: str


_CMP_SWAP: dict[type[ast.cmpop], type[ast.cmpop]] = {
    ast.Eq: ast.NotEq,
    ast.NotEq: ast.Eq,
    ast.Lt: ast.LtE,
    ast.LtE: ast.Lt,
    ast.Gt: ast.GtE,
    ast.GtE: ast.Gt,
    ast.Is: ast.IsNot,
    ast.IsNot: ast.Is,
    ast.In: ast.NotIn,
    ast.NotIn: ast.In,
}
_BIN_SWAP: dict[type[ast.operator], type[ast.operator]] = {
    ast.Add: ast.Sub,
    ast.Sub: ast.Add,
    ast.Mult: ast.Div,
    ast.Div: ast.Mult,
}


def _docstring_nodes(tree: ast.AST) -> set[int]:
    out: set[int] = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Module | ast.ClassDef | ast.FunctionDef | ast.AsyncFunctionDef):
            body = node.body
            if body and isinstance(body[0], ast.Expr) and isinstance(body[0].value, ast.Constant):
                out.add(id(body[0]))
    return out


def _skipped_subtrees(tree: ast.AST) -> set[int]:
    """Annotations, ``__all__`` and ``if TYPE_CHECKING`` blocks: not behaviour."""
    skip: set[int] = set()

    def mark(node: ast.AST | None) -> None:
        if node is not None:
            skip.update(id(n) for n in ast.walk(node))

    for node in ast.walk(tree):
        if isinstance(node, ast.AnnAssign | ast.arg):
            mark(node.annotation)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            mark(node.returns)
        elif (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)
        ) or (isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)):
            mark(node)
    return skip


def _call_name(call: ast.Call) -> str:
    f = call.func
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


def mutants_of(module: str) -> list[Mutant]:
    text = (REPO / module).read_text()
    lines = text.splitlines()
    tree = ast.parse(text)
    docs, skip = _docstring_nodes(tree), _skipped_subtrees(tree)
    out: list[Mutant] = []

    def add(node: ast.AST, mutation: str, new: ast.AST, statement: bool = False) -> None:
        repl = ast.unparse(new) if statement else f"({ast.unparse(new)})"
        out.append(
            Mutant(
                module,
                node.lineno,  # type: ignore[attr-defined]
                lines[node.lineno - 1].strip(),  # type: ignore[attr-defined]
                mutation,
                (node.lineno, node.col_offset),  # type: ignore[attr-defined]
                (node.end_lineno, node.end_col_offset),  # type: ignore[attr-defined]
                repl,
            )
        )

    for node in ast.walk(tree):
        if id(node) in skip or id(node) in docs:
            continue
        if isinstance(node, ast.Compare):
            for i, op in enumerate(node.ops):
                swap = _CMP_SWAP.get(type(op))
                if swap is not None:
                    new = ast.Compare(node.left, list(node.ops), node.comparators)
                    new.ops[i] = swap()
                    add(node, f"{ast.unparse(node)} -> {ast.unparse(new)}", new)
        elif isinstance(node, ast.BoolOp):
            other = ast.Or() if isinstance(node.op, ast.And) else ast.And()
            add(
                node,
                f"{type(node.op).__name__.lower()} -> {type(other).__name__.lower()}",
                ast.BoolOp(other, node.values),
            )
        elif isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.Not):
            add(node, f"drop not: {ast.unparse(node)}", node.operand)
        elif isinstance(node, ast.BinOp) and type(node.op) in _BIN_SWAP:
            new = ast.BinOp(node.left, _BIN_SWAP[type(node.op)](), node.right)
            add(node, f"{ast.unparse(node)} -> {ast.unparse(new)}", new)
        elif isinstance(node, ast.Constant) and isinstance(node.value, bool):
            add(node, f"{node.value} -> {not node.value}", ast.Constant(not node.value))
        elif isinstance(node, ast.Constant) and type(node.value) is int:
            add(node, f"{node.value} -> {node.value + 1}", ast.Constant(node.value + 1))
        elif isinstance(node, ast.Constant) and type(node.value) is float:
            add(
                node,
                f"{node.value} -> {node.value * 2 or 1.0}",
                ast.Constant(node.value * 2 or 1.0),
            )
        elif isinstance(node, ast.Return) and node.value is not None:
            if not (isinstance(node.value, ast.Constant) and node.value.value is None):
                add(node, "return X -> return None", ast.Return(None), statement=True)
        elif isinstance(node, ast.Raise):
            add(node, "raise -> pass", ast.Pass(), statement=True)
        elif (
            isinstance(node, ast.Expr)
            and isinstance(node.value, ast.Call)
            and _call_name(node.value) not in SKIP_CALLS
        ):
            add(node, f"drop call: {ast.unparse(node)[:60]}", ast.Pass(), statement=True)
    out.sort(key=lambda m: (m.start, m.mutation))
    return out


def apply(text: str, m: Mutant) -> str:
    lines = text.splitlines(keepends=True)
    offsets = [0]
    for line in lines:
        offsets.append(offsets[-1] + len(line.encode()))
    raw = text.encode()

    def pos(lc: tuple[int, int]) -> int:
        return offsets[lc[0] - 1] + lc[1]  # col_offset counts UTF-8 bytes

    return (raw[: pos(m.start)] + m.replacement.encode() + raw[pos(m.end) :]).decode()


def _copy_checkout(dest: Path) -> None:
    ignore = shutil.ignore_patterns(
        ".git", "__pycache__", "*.pyc", ".mypy_cache", ".ruff_cache", "mutation-results", "site"
    )
    for entry in REPO.iterdir():
        if entry.name in {".git", "mutation-results", "site", ".venv"}:
            continue
        if entry.is_dir():
            shutil.copytree(entry, dest / entry.name, ignore=ignore, symlinks=True)
        else:
            shutil.copy2(entry, dest / entry.name)


def _pytest(copy: Path, tests: list[str], timeout: float) -> tuple[str, float]:
    """Run the tests against the copy; the whole process group is stopped whatever happens."""
    env = dict(os.environ)
    env["PYTHONPATH"] = str(copy)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    t0 = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest", "-x", "-q", *PYTEST_PLUGINS_OFF, *tests],
        cwd=copy,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    outcome = "killed-timeout"
    try:
        rc = proc.wait(timeout=timeout)
        outcome = "survived" if rc == 0 else "killed"
    except subprocess.TimeoutExpired:
        pass
    finally:
        # Also reaps what the tests left behind in the group (a hung child of a mutant).
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
    return outcome, time.monotonic() - t0


def run_module(module: str, *, out_dir: Path, recheck: bool = False) -> dict[str, object]:
    """Run every mutant of ``module``; with ``recheck``, only the saved survivors again (after
    tests were added), keeping the other saved outcomes."""
    tests = [t for t in MODULES[module] if (REPO / t.split("::")[0]).is_file()]
    original = (REPO / module).read_text()
    mutants = mutants_of(module)
    saved_path = out_dir / (module.replace("/", ".") + ".json")
    kept: dict[tuple[str, str, int], dict[str, object]] = {}
    if recheck and saved_path.is_file():
        saved = json.loads(saved_path.read_text())
        kept = {
            key: r
            for key, r in zip(_keys(saved["results"]), saved["results"], strict=True)
            if r["outcome"] not in ("survived", "equivalent")
        }
    keys = _keys([asdict(m) for m in mutants])
    with tempfile.TemporaryDirectory(prefix="ledger-mutation-") as tmp:
        copy = Path(tmp)
        _copy_checkout(copy)
        base, base_s = _pytest(copy, tests, timeout=900)
        if base != "survived":
            raise SystemExit(f"mutation: the tests of {module} fail without any mutant")
        timeout = max(60.0, 3 * base_s)
        print(f"{module}: {len(mutants)} mutants, tests {base_s:.1f}s: {' '.join(tests)}")
        results = []
        for i, m in enumerate(mutants, 1):
            mutated = apply(original, m)
            try:
                compile(mutated, module, "exec")
            except SyntaxError:
                continue
            previous = kept.get(keys[i - 1])
            if previous is not None:
                results.append({**asdict(m), "outcome": previous["outcome"], "seconds": 0.0})
                continue
            (copy / module).write_text(mutated)
            outcome, secs = _pytest(copy, tests, timeout)
            (copy / module).write_text(original)
            key = (module, m.source, m.mutation)
            if outcome == "survived" and key in EQUIVALENT:
                outcome = "equivalent"
            results.append({**asdict(m), "outcome": outcome, "seconds": round(secs, 1)})
            flag = "" if outcome.startswith("killed") else f"  <-- {outcome}"
            print(f"  [{i}/{len(mutants)}] {secs:5.1f}s {m.line}: {m.mutation}{flag}", flush=True)
            _save(module, tests, results, saved_path, recheck, final=False)
    return _save(module, tests, results, saved_path, recheck, final=True)


def _keys(results: list[dict[str, object]]) -> list[tuple[str, str, int]]:
    """(source line, mutation, occurrence): stable when lines move, unique when a line repeats."""
    seen: dict[tuple[str, str], int] = {}
    out = []
    for r in results:
        pair = (str(r["source"]), str(r["mutation"]))
        seen[pair] = seen.get(pair, 0) + 1
        out.append((*pair, seen[pair]))
    return out


def _save(
    module: str,
    tests: list[str],
    results: list[dict[str, object]],
    saved_path: Path,
    recheck: bool,
    *,
    final: bool,
) -> dict[str, object]:
    """Write the results so far (after every mutant: an interrupted run keeps its work)."""
    killed = sum(str(r["outcome"]).startswith("killed") for r in results)
    equivalent = sum(r["outcome"] == "equivalent" for r in results)
    survived = [r for r in results if r["outcome"] == "survived"]
    scored = len(results) - equivalent
    summary = {
        "module": module,
        "tests": tests,
        "complete": final,
        "mutants": len(results),
        "killed": killed,
        "equivalent": equivalent,
        "survived": len(survived),
        "score": round(100 * killed / scored, 1) if scored else 100.0,
        "rechecked": recheck,
        "survivors": [
            {"line": r["line"], "source": r["source"], "mutation": r["mutation"]} for r in survived
        ],
        "results": results,
    }
    saved_path.parent.mkdir(exist_ok=True)
    saved_path.write_text(json.dumps(summary, indent=1))
    if final:
        print(
            f"{module}: {killed} killed, {equivalent} equivalent, {len(survived)} survived: "
            f"score {summary['score']}%"
        )
    return summary


def report(out_dir: Path) -> None:
    print("| module | mutants | killed | equivalent | survived | score |")
    print("|---|---|---|---|---|---|")
    for path in sorted(out_dir.glob("*.json")):
        r = json.loads(path.read_text())
        print(
            f"| `{r['module']}` | {r['mutants']} | {r['killed']} | {r['equivalent']} "
            f"| {r['survived']} | {r['score']}% |"
        )
    for path in sorted(out_dir.glob("*.json")):
        r = json.loads(path.read_text())
        for x in r["results"]:
            if x["outcome"] == "equivalent":
                reason = EQUIVALENT[(r["module"], x["source"], x["mutation"])]
                print(f"- equivalent `{r['module']}:{x['line']}` {x['mutation']}: {reason}")
        for x in r["survivors"]:
            print(f"- SURVIVED `{r['module']}:{x['line']}` {x['mutation']}")


def _stop(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)  # unwinds: the running tests are stopped, the copy removed


def main() -> None:
    signal.signal(signal.SIGTERM, _stop)
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("modules", nargs="*", help="modules to mutate (default: all in MODULES)")
    parser.add_argument("--list", action="store_true", help="print the mutants; run nothing")
    parser.add_argument(
        "--report", action="store_true", help="print the saved results as a Markdown table"
    )
    parser.add_argument(
        "--recheck", action="store_true", help="rerun only the saved survivors (after new tests)"
    )
    args = parser.parse_args()
    if args.report:
        report(REPO / "mutation-results")
        return
    modules = args.modules or list(MODULES)
    for module in modules:
        if module not in MODULES:
            raise SystemExit(f"mutation: {module} has no test mapping in scripts/mutation.py")
    if args.list:
        for module in modules:
            for m in mutants_of(module):
                print(f"{module}:{m.line}: {m.mutation}")
        return
    for module in modules:
        run_module(module, out_dir=REPO / "mutation-results", recheck=args.recheck)


if __name__ == "__main__":
    main()
