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
import hashlib
import json
import os
import queue
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor, as_completed
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

from mutation_fork import ForkServer, shared_modules
from mutation_select import (
    CoverMap,
    Spans,
    cover_key,
    coverage_env,
    hash_tests,
    hash_tree,
    mutant_key,
    read_coverage,
    seconds_of,
    select,
)

REPO = Path(__file__).resolve().parent.parent

# Record and replay a real run, verdict by verdict.
_REPLAY_TESTS = [
    "tests/replay/test_replay_e2e.py",
    "tests/replay/test_replay_environment.py",
    "tests/replay/test_replay_checkpoints.py",
    "tests/replay/test_replay_confinement.py",
    "tests/replay/test_replay_index.py",
    "tests/replay/test_replay_ignored_logs.py",
    "tests/replay/test_output_labels.py",
    "tests/replay/test_replay_interrupt.py",
    "tests/replay/test_seed_effect.py",
    "tests/replay/test_seed_executors.py",
    "tests/cli/test_cli_replay_fast.py",
]

# Claims audited against recorded runs, from evidence selection to the report.
_AUDIT_TESTS = [
    "tests/audit/test_audit_evidence.py",
    "tests/audit/test_audit_claims_file.py",
    "tests/audit/test_audit_end_to_end.py",
    "tests/audit/test_audit_worked_examples.py",
    "tests/audit/test_audit_real_replay.py",
    "tests/audit/test_audit_reports.py",
    "tests/audit/test_audit_require_gate.py",
]

# The checkpoint tests, fast files first; the resume tests start two-rank torchrun jobs.
_CKPT_TESTS = [
    "tests/checkpoint/test_ckpt_save_checks.py",
    "tests/checkpoint/test_ckpt_load_checks.py",
    "tests/checkpoint/test_ckpt_read_checks.py",
    "tests/checkpoint/test_ckpt_save_load.py",
    "tests/checkpoint/test_ckpt_cli.py",
    "tests/checkpoint/test_ckpt_exports.py",
    "tests/checkpoint/test_ckpt_background.py",
    "tests/checkpoint/test_ckpt_crash.py",
    "tests/checkpoint/test_ckpt_rank_failure.py",
    "tests/checkpoint/test_ckpt_resume.py",
]
# mutckpt: the same without the resume tests (two-rank torchrun jobs: two of the three
# minutes the others take), for ckpt_io.py and ckpt_reuse.py, whose paths the one-process
# save and load tests cover.
_CKPT_FAST = [t for t in _CKPT_TESTS if not t.endswith("test_ckpt_resume.py")]

# The comparators' tests, fast files first (mutcmp); the last two start `ledger` children.
_COMPARE_TESTS = [
    "tests/replay/test_compare_tensors.py",
    "tests/replay/test_compare_structured.py",
    "tests/replay/test_compare_registry.py",
    "tests/replay/test_compare_tensorboard.py",
    "tests/replay/test_compare_trees.py",
    "tests/replay/test_compare_common.py",
    "tests/replay/test_compare_checkpoints.py",
    "tests/replay/test_compare_outputs.py",
    "tests/replay/test_replay_lazy_numpy.py",
    "tests/replay/test_bitwise_edges.py",
]

# module -> the tests that exercise it (fast files first: -x stops at the first failure).
MODULES: dict[str, list[str]] = {
    "ledger/store/objects.py": [
        "tests/test_objects_codec_rules.py",
        "tests/test_objects_pieces.py",  # mutstore2: the raw copy in pieces
        "tests/test_objects_copy_range.py",  # the kernel's copy, hashed as read back
        "tests/test_objects_layout.py",
        "tests/test_integrity_holes.py",
        "tests/test_objects.py",
        "tests/test_cli_store.py",
        "tests/test_gc.py",
    ],
    "ledger/store/log.py": [
        "tests/test_log_and_refs.py",
        "tests/test_set_refs.py",  # append_many, through Store.set_refs
        "tests/test_integrity_holes.py",
        "tests/test_cli_store.py",
    ],
    "ledger/store/refs.py": [
        "tests/test_refs_names.py",
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
    # The batch writer of store_inputs and its durability barrier (1 December; run in the
    # fifth round, with their own edge tests first).
    "ledger/store/batch.py": [
        "tests/test_store_batch.py",
        "tests/test_store_batch_direct.py",
        "tests/test_put_many.py",
        "tests/capture/test_data_digest.py",
        "tests/capture/test_data_store_kill.py",
    ],
    "ledger/store/durable.py": [
        "tests/test_store_durable.py",
        "tests/test_store_batch_direct.py",
        "tests/test_store_batch.py",
        "tests/test_put_many.py",
        "tests/capture/test_data_store_kill.py",
    ],
    "ledger/capture/redact.py": [
        "tests/capture/test_redact_edges.py",
        "tests/capture/test_redact_rules.py",
        "tests/capture/test_redact_stored.py",
    ],
    "ledger/capture/secrets.py": [
        "tests/capture/test_secrets_leaks.py",
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
        "tests/replay/test_compare_common.py",
        "tests/replay/test_compare_structured.py",
        "tests/replay/test_bitwise_edges.py",
        "tests/replay/test_compare_trees.py",
        "tests/replay/test_compare_tensors.py",
    ],
    "ledger/replay/compare/checkpoints.py": [
        "tests/replay/test_compare_checkpoints_checks.py",
        "tests/replay/test_compare_checkpoints.py",
        "tests/replay/test_compare_outputs.py",
    ],
    "ledger/torch/ckpt_save.py": [
        "tests/checkpoint/test_ckpt_save_skeleton.py",
        "tests/checkpoint/test_ckpt_save_chunk_size.py",
        *_CKPT_TESTS,
    ],
    "ledger/torch/ckpt_load.py": _CKPT_TESTS,
    "ledger/torch/ckpt_io.py": [
        "tests/checkpoint/test_ckpt_io_checks.py",
        "tests/checkpoint/test_ckpt_compress.py",
        "tests/checkpoint/test_ckpt_direct.py",
        "tests/checkpoint/test_ckpt_save_chunk_size.py",
        "tests/checkpoint/test_ckpt_reuse.py",
        "tests/checkpoint/test_ckpt_reuse_checks.py",
        *_CKPT_FAST,
        "tests/replay/test_compare_checkpoints.py",
    ],
    "ledger/capture/scrub_stream.py": [
        "tests/capture/test_scrub_stream_edges.py",
        "tests/capture/test_scrub_stream.py",
        "tests/capture/test_secret_scrub.py",
    ],
    "ledger/capture/secret_memo.py": [
        "tests/capture/test_secret_memo_file.py",
        "tests/capture/test_secret_memo.py",
        "tests/capture/test_secret_scrub.py",
    ],
    "ledger/stats/multiseed.py": [
        "tests/stats/test_multiseed_edges.py",
        "tests/stats/test_stats_bootstrap.py",
    ],
    # mutstore: the links gc keeps and verify checks, and the crash-safe writes of refs,
    # anchors and caches (both evidence: a link not followed is an object gc deletes).
    # The ledger on disk: init/open, the write lock, and the ref moves that log each change
    # (set_refs moves a checkpoint's step ref and latest with one log append).
    "ledger/store/repo.py": [
        "tests/test_store_repo.py",
        "tests/test_set_refs.py",
        "tests/test_log_and_refs.py",
        "tests/test_integrity_holes.py",
        "tests/test_store_anchor.py",
        "tests/test_cli_store.py",
        "tests/cli/test_cli_errors.py",
        "tests/tamper/test_verify_tamper.py",
    ],
    "ledger/store/walk.py": [
        "tests/test_store_walk.py",
        "tests/test_gc.py",
        "tests/test_store_verify.py",
    ],
    "ledger/store/atomic.py": [
        "tests/test_store_atomic.py",
        "tests/test_set_refs.py",  # replace_bytes, through Store.set_refs
        "tests/test_log_and_refs.py",
        "tests/test_store_anchor.py",
    ],
    # mutckpt: the reuse of chunk ids by comparing bytes with the last save (a wrong id
    # stored there is a corrupt checkpoint).
    "ledger/torch/ckpt_reuse.py": [
        "tests/checkpoint/test_ckpt_reuse_checks.py",
        "tests/checkpoint/test_ckpt_direct.py",
        "tests/checkpoint/test_ckpt_reuse.py",
        "tests/checkpoint/test_ckpt_io_checks.py",
        *_CKPT_FAST,
    ],
    # mutwrite: the checkpoint chunk writer (a bug names a chunk before it is durable, or
    # under another's id), its own tests first, then the save tests that reach it.
    "ledger/torch/ckpt_write.py": [
        "tests/checkpoint/test_ckpt_direct.py",
        "tests/checkpoint/test_ckpt_compress.py",
        "tests/checkpoint/test_ckpt_write_checks.py",
        "tests/checkpoint/test_ckpt_write.py",
        "tests/checkpoint/test_ckpt_io_checks.py",
        "tests/checkpoint/test_ckpt_save_chunk_size.py",
        "tests/checkpoint/test_ckpt_reuse.py",
        "tests/checkpoint/test_ckpt_reuse_checks.py",
        *_CKPT_FAST,
    ],
    # mutcmp: the rest of ledger/replay/compare/ (1 December), each module's own checks first.
    **{
        f"ledger/replay/compare/{name}.py": [
            f"tests/replay/test_compare_{name.strip('_')}_checks.py",
            *_COMPARE_TESTS,
        ]
        for name in (
            "tensors",
            "trees",
            "registry",
            "structured",
            "tables",
            "logs",
            "digest",
            "tensorboard",
            "__init__",
            "tensor_names",
        )
    },
    # mutverdict (issue 37): every other module that decides a verdict, its own tests first.
    "ledger/replay/engine.py": [
        "tests/replay/test_replay_verdict_edges.py",
        *_REPLAY_TESTS,
    ],
    "ledger/replay/single.py": _REPLAY_TESTS,
    "ledger/replay/seed_effect.py": [
        "tests/replay/test_replay_verdict_edges.py",
        "tests/replay/test_seed_effect.py",
        "tests/replay/test_seed_executors.py",
        "tests/replay/test_replay_interrupt.py",
    ],
    "ledger/replay/executors.py": [
        "tests/replay/test_seed_executors.py",
        "tests/replay/test_seed_effect.py",
        "tests/replay/test_replay_interrupt.py",
    ],
    "ledger/audit/evaluate.py": _AUDIT_TESTS,
    "ledger/audit/compare.py": [
        "tests/audit/test_audit_comparison.py",
        "tests/audit/test_audit_comparison_cases.py",
        *_AUDIT_TESTS,
    ],
    "ledger/audit/select.py": _AUDIT_TESTS,
    "ledger/stats/comparison.py": [
        "tests/stats/test_stats_comparison.py",
        "tests/stats/test_stats_arrays.py",
        "tests/stats/test_stats_api.py",
        "tests/audit/test_audit_comparison.py",
        "tests/audit/test_audit_comparison_cases.py",
    ],
    "ledger/stats/twosample.py": [
        "tests/stats/test_stats_twosample.py",
        "tests/stats/test_stats_api.py",
        "tests/audit/test_audit_comparison_cases.py",
    ],
    "ledger/stats/claims.py": [
        "tests/stats/test_stats_claims.py",
        "tests/stats/test_stats_api.py",
        "tests/audit/test_audit_claims_file.py",
        "tests/audit/test_audit_worked_examples.py",
    ],
    "ledger/share/package.py": [
        "tests/share/test_package_import.py",
        "tests/share/test_package_import_optimized.py",
        "tests/share/test_package_export.py",
        "tests/share/test_reviewer_workflow.py",
        "tests/test_format_examples.py",
    ],
    "ledger/share/transfer.py": [
        "tests/share/test_remote_path.py",
        "tests/share/test_reviewer_workflow.py",
        "tests/share/test_git_source.py",
    ],
    "ledger/attest/check.py": [
        "tests/tamper/test_attest.py",
        "tests/tamper/test_checkpoint_consistency.py",
    ],
    "ledger/ui/server.py": [
        "tests/ui/test_web_view.py",
        "tests/ui/test_browser.py",
        "tests/ui/test_index_tables.py",
    ],
}

# Tests that coverage cannot see reach a module: a process killed with SIGKILL saves no
# coverage data, so the crash tests' forked savers, killed at each phase on purpose, never
# show their lines. These run with every selection of the module (not with uncovered lines).
ALWAYS: dict[str, list[str]] = {
    m: ["tests/checkpoint/test_ckpt_crash.py"]
    for m in ("ledger/torch/ckpt_save.py", "ledger/torch/ckpt_io.py", "ledger/torch/ckpt_write.py")
}

# (module, stripped source line, mutation) -> why no test can tell the mutant from the original.
# "durability:" marks a mutant that only a crash or power loss between two steps could show.
_LOG = "ledger/store/log.py"
_OBJ = "ledger/store/objects.py"
_BATCH = "ledger/store/batch.py"
_DURABLE = "ledger/store/durable.py"
_VERIFY = "ledger/store/verify.py"
_GC = "ledger/store/gc.py"
_REDACT = "ledger/capture/redact.py"
_SECRETS = "ledger/capture/secrets.py"
_COMMON = "ledger/replay/compare/_common.py"
_TENSORS = "ledger/replay/compare/tensors.py"  # mutcmp
_GIT_PATCH = "a patch from git always opens with `diff --git` and a hunk header"
_FOUR = (
    "no line of four characters is flagged: checked for every one that passes the candidate "
    "filter (7854 lines, as yaml, py, env and log), none is"
)
_NS_CLOCK = (
    "one nanosecond apart at a one-second boundary against time.time_ns() read inside names(): "
    "no test can arrange it without a fake clock"
)
_EMPTIED = (
    "the same statement empties the pending bytes: whatever _ctx skips of an empty buffer, "
    "nothing is held"
)
_REPR = (
    "only repr() changes: nothing prints a Scrubber, and its repr shows the known values "
    "through `known` anyway"
)
_RACE = "reached only when a writer acts between two of gc's own steps: a race no test stages"
_REUSE = "ledger/torch/ckpt_reuse.py"
_FIRST_PIECE = (
    "chunk = first + stream.read(PIPE_CHUNK - len(first)) if len(first) < PIPE_CHUNK else first"
)
_PIECE = (
    "the size of put_stream's raw pieces: every byte is still read, hashed and written once, "
    "in order; only the memory held and the number of reads change"
)
_PROBES = "MEMCMP(addr, m.addr, _PROBE) != 0 or MEMCMP(addr + tail, m.addr + tail, _PROBE) != 0"
_REAPERS = (
    "more unmapping threads take from the same queue (the reaper never ends): each mapping "
    "is still unmapped once"
)
_NO_SYSCONF = (
    "the memory assumed where sysconf cannot tell the physical memory: Linux and macOS always can"
)
_SCHED = (
    "likely_new only orders the chunks (the likely changed ones are written first); every "
    "chunk is still compared in full or hashed: the same ids and the same objects"
)
EQUIVALENT: dict[tuple[str, str, str], str] = {
    # repo.py (mapped after the reruns): the lock's explicit unlock.
    (
        "ledger/store/repo.py",
        "fcntl.flock(fd, fcntl.LOCK_UN)",
        "drop call: fcntl.flock(fd, fcntl.LOCK_UN)",
    ): (
        "the os.close(fd) right after releases the flock (it belongs to the open file "
        "description, which only this descriptor refers to): the lock is free at the same "
        "point (test_the_lock_excludes_another_process checks it from another process)"
    ),
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
    (_SECRETS, "_pattern: FormMatcher | None = field(default=None, repr=False)", "False -> True"): (
        _REPR
    ),
    (
        _SECRETS,
        "_by_form: dict[bytes, str] = field(default_factory=dict, repr=False)",
        "False -> True",
    ): (_REPR),
    (_SECRETS, "_binary: FormMatcher | None = field(default=None, repr=False)", "False -> True"): (
        _REPR
    ),
    (
        _SECRETS,
        "longest_form: int = field(default=0, init=False)  # bytes: what a stream must hold back",
        "0 -> 1",
    ): "the default is never seen: __post_init__ always sets longest_form",
    (
        _SECRETS,
        "longest_form: int = field(default=0, init=False)  # bytes: what a stream must hold back",
        "False -> True",
    ): "no caller passes longest_form: __post_init__ sets it either way",
    (
        _SECRETS,
        "out.append(_MARKER.sub(lambda m: environ.get(m[1], m[0]), arg))",
        "0 -> 1",
    ): (
        "what replaces a marker whose variable is not set is never returned: restore_argv "
        "raises after the loop"
    ),
    (_SECRETS, "return path.read_bytes().splitlines(keepends=True)", "True -> False"): (
        "each line taken from the file is stripped of its line end before use"
    ),
    (
        _SECRETS,
        "if _SCRUBBED.search(line) and 0 < old_line <= len(old_lines):",
        "0 < old_line <= len(old_lines) -> 0 <= old_line <= len(old_lines)",
    ): (
        "git starts a hunk at old line 0 only with a count of 0 (a new file): no line but an "
        "added one, never restored, has old line 0"
    ),
    (_SECRETS, "return raw", "return X -> return None"): (
        "every change redact_argv makes puts a marker in: an argument it changed always holds one"
    ),
    (_SECRETS, "for k in range(3):", "3 -> 4"): (
        "a shift of three bytes is four base64 characters: the same core as no shift"
    ),
    (
        "ledger/store/refs.py",
        "if st.st_mtime_ns < started - 1_000_000_000:",
        "st.st_mtime_ns < started - 1000000000 -> st.st_mtime_ns <= started - 1000000000",
    ): _NS_CLOCK,
    (
        "ledger/store/refs.py",
        "if st.st_mtime_ns < started - 1_000_000_000:",
        "1000000000 -> 1000000001",
    ): (_NS_CLOCK),
    (
        "ledger/torch/ckpt_load.py",
        "for i, t in zip(wanted, loaded, strict=True):",
        "True -> False",
    ): "read_tensors returns one tensor for each entry it is given: the lengths always agree",
    (
        "ledger/torch/ckpt_load.py",
        "elif isinstance(current, dict) and isinstance(loaded, dict):",
        "and -> or",
    ): (
        "_apply hands over only dicts, and a state dict torch made holds a dict wherever the "
        "template's does: a mismatch needs a forged nested state"
    ),
    ("ledger/torch/ckpt_io.py", "extra = f.read(1)", "1 -> 2"): (
        "only whether a byte follows the tensor's bytes is used: one or two, both are true"
    ),
    (
        "ledger/capture/scrub_stream.py",
        'if self._seen < _SNIFF and b"\\0" in chunk[: _SNIFF - self._seen]:',
        "self._seen < _SNIFF -> self._seen <= _SNIFF",
    ): "at _seen == _SNIFF the slice chunk[:0] is empty: no NUL is found either way",
    (
        "ledger/capture/scrub_stream.py",
        'out, self._pending, self._ctx = self.held() + chunk, b"", 0',
        "0 -> 1",
    ): _EMPTIED,
    (
        "ledger/capture/scrub_stream.py",
        'out, self._pending, self._ctx = self.held(), b"", 0',
        "0 -> 1",
    ): (_EMPTIED),
    ("ledger/torch/ckpt_save.py", "self.t0 = 0.0", "0.0 -> 1.0"): (
        "save_checkpoint sets job.t0 right after making the job, before anything reads it"
    ),
    (_COMMON, "super().__init__(reason)", "drop call: super().__init__(reason)"): (
        "BaseException.__new__ already keeps the arguments: args and str() are the same"
    ),
    (_COMMON, "if settings.rtol is not None and settings.atol is not None:", "and -> or"): (
        "CompareSettings refuses rtol without atol and the reverse (its validator): both are "
        "set or neither"
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
        "the two in _attached_password: None is as false as False to its one caller (`if`); "
        "is_secret_name's two are killed (test_is_secret_name_answers_a_bool)"
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
    # mutstore2: put_stream's raw copy in two reused pieces (aea7bb1), rerun cold.
    (_OBJ, "PIPE_CHUNK = 4 << 20", "4 -> 5"): _PIECE,
    (_OBJ, "PIPE_CHUNK = 4 << 20", "20 -> 21"): _PIECE,
    (
        _OBJ,
        _FIRST_PIECE,
        "PIPE_CHUNK - len(first) -> PIPE_CHUNK + len(first)",
    ): _PIECE,
    (
        _OBJ,
        _FIRST_PIECE,
        "len(first) < PIPE_CHUNK -> len(first) <= PIPE_CHUNK",
    ): (
        "first is what put_stream read for its sample, at most SAMPLE + 1 bytes (1 MiB and "
        "one): never PIPE_CHUNK (4 MiB) long"
    ),
    (_OBJ, 'with ThreadPoolExecutor(1, thread_name_prefix="ledger-hash") as pool:', "1 -> 2"): (
        "every copy (lines of the same text) waits for each piece's hash before submitting the "
        "next: one update at a time, in order, whatever the pool's size"
    ),
    # mutstore: the batch writer and its durability barrier (the fifth round).
    (_BATCH, "_WORKERS = 4", "4 -> 5"): (
        "the number of threads that read, hash and write: the same objects"
    ),
    # The aligned buffer and O_DIRECT (#16, session 14).
    (
        _BATCH,
        "_READ = SMALL + _ALIGN + _ALIGN // 2",
        "SMALL + _ALIGN + _ALIGN // 2 -> SMALL + _ALIGN - _ALIGN // 2",
    ): (
        "where in the buffer a file is read: only the speed of the copies differs (4K aliasing); "
        "the buffer is sized from it and the move to offset 1 is a memmove"
    ),
    (_BATCH, "_READ = SMALL + _ALIGN + _ALIGN // 2", "SMALL + _ALIGN -> SMALL - _ALIGN"): (
        "the read area then overlaps the object's for files near 1 MiB: the move to offset 1 "
        "is a memmove, and a compressed payload is copied in after it was made: the same bytes"
    ),
    (_BATCH, "_READ = SMALL + _ALIGN + _ALIGN // 2", "2 -> 3"): (
        "where in the buffer a file is read: only the speed of the copies differs"
    ),
    (_BATCH, "view = memoryview(buf)[_READ : _READ + SMALL + 1]", "1 -> 2"): (
        "one spare byte in the read view: the loop stops after SMALL + 1 bytes either way"
    ),
    (_BATCH, "if done < total:", "done < total -> done <= total"): (
        "at done == total the added steps are an fcntl that turns O_DIRECT off and a write of "
        "nothing: the same file"
    ),
    (
        _BATCH,
        "fcntl.fcntl(fd, fcntl.F_SETFL, 0)  # none of the flags it sets is ours but O_DIRECT",
        "0 -> 1",
    ): "F_SETFL ignores the access-mode bits: 1 (O_WRONLY) sets the same flags as 0",
    (_BATCH, "name, direct = Path(tmp), False", "False -> True"): (
        "a named temp file is never opened with O_DIRECT: its 'direct' writes are aligned "
        "writes through the page cache, then the tail: the same bytes"
    ),
    (_BATCH, "if any(s[2] is not None for s in written):", "s[2] is not None -> s[2] is None"): (
        "names given in the pool's threads or in this one: the same names, only the speed "
        "differs (test_store_batch.py runs each check with both kinds of temp file)"
    ),
    (_BATCH, "if any(s[2] is not None for s in written):", "2 -> 3"): (
        "s[3], the size, is never None: every batch is named in the pool, the same names"
    ),
    (
        _OBJ,
        "if os.pread(src, 1, src_off):  # the copy stopped before the end a read finds",
        "1 -> 2",
    ): ("one byte or two: either read is empty exactly at the end"),
    (_BATCH, "if n <= 0:", "0 -> 1"): (
        "the O_DIRECT write's line: it writes whole blocks or fails, never exactly 1 byte "
        "(the same text in _pwrite_all is killed: an object's tail can be 1 byte)"
    ),
    (_BATCH, "_BATCH = 4096", "4096 -> 4097"): (
        "one more file per batch (where the open-file limit allows 4096): the same objects"
    ),
    (
        _BATCH,
        "while n <= SMALL and (got := os.readv(fd, [view[n:]])):",
        "n <= SMALL -> n < SMALL",
    ): (
        "differs only if a read stops at exactly SMALL bytes of a longer file; put_files takes "
        "regular files, whose readv fills the buffer given (no pipe, no file growing meanwhile)"
    ),
    (_BATCH, 'fd = os.open(path, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))', "0 -> 1"): (
        "the default is never used: os.O_CLOEXEC exists wherever the batch writer runs"
    ),
    (_BATCH, "return _BATCH", "return X -> return None"): (
        "never reached on Linux: RLIMIT_NOFILE cannot be unlimited (the kernel caps it at "
        "fs.nr_open)"
    ),
    (_BATCH, "return max(16, min(_BATCH, (soft - 64) // 2))", "16 -> 17"): (
        "the smallest batch, one file more: only a limit under 96 open files reaches it, and "
        "the same objects are stored (test_a_low_limit_on_open_files_is_respected)"
    ),
    (_BATCH, "return max(16, min(_BATCH, (soft - 64) // 2))", "64 -> 65"): (
        "the descriptors kept for the rest of the process, one more: a batch at most one file "
        "smaller, the same objects"
    ),
    (_BATCH, "return max(16, min(_BATCH, (soft - 64) // 2))", "2 -> 3"): (
        "smaller batches under a low open-file limit: the same objects, in more batches"
    ),
    (_BATCH, "sync_each = others_dirty(0)", "0 -> 1"): (
        "one byte more of our own against the 64 MiB slack of unwritten data"
    ),
    (_BATCH, "while not d.is_dir() and d != root:", "and -> or"): (
        "walks on up to the store's root through folders that exist: their mkdir is refused "
        "(FileExistsError, ignored), so the same folders exist; only more of them are fsynced"
    ),
    # mutrerun: the batch writer after the merges (names made durable once per put_files, the
    # descriptor table grown once, 32 files staged per pool task).
    # session 12: the staged files' sizes (the barrier's byte count), and the sizes list
    (_BATCH, "return objects.put_stream(f), None, None, 0", "0 -> 1"): (
        "the size of a file stored by put_stream, which is never counted: only staged temp "
        "files (an open descriptor) are summed for the barrier"
    ),
    (_BATCH, "_discard((oid, out, name, 0))", "0 -> 1"): (
        "_discard reads the descriptor and the name, never the size"
    ),
    (_BATCH, "for path, size in zip(paths, sizes, strict=True):", "True -> False"): (
        "sizes is always sliced like paths (put_files refuses lists of unequal lengths): "
        "strict never has a difference to find"
    ),
    (_BATCH, "_CHUNK = 32", "32 -> 33"): (
        "one more file staged per pool task: the same files staged, the same objects"
    ),
    **{
        (_BATCH, "step = max(1, min(_CHUNK, len(paths) // (4 * _WORKERS)))", mutation): (
            "how many files one pool task stages: every file is staged once either way, the "
            "same objects"
        )
        for mutation in ("1 -> 2", "4 -> 5")
    },
    **{
        (_BATCH, "_room_for_descriptors(min(size, len(paths)) + 2 * _WORKERS)", mutation): (
            "the descriptor table is grown less (or not at all) up front and grows on demand "
            "as files are opened, to the same size: only the time differs"
        )
        for mutation in (
            "drop call: _room_for_descriptors(min(size, len(paths)) + 2 * _WORKERS)",
            "min(size, len(paths)) + 2 * _WORKERS -> min(size, len(paths)) - 2 * _WORKERS",
            "2 -> 3",
        )
    },
    (
        _BATCH,
        "top = fd + n if soft == resource.RLIM_INFINITY else min(fd + n, soft - 1)",
        "fd + n -> fd - n",
    ): (
        "the first of the line's two (the second, within the limit, is killed): never reached "
        "on Linux, where RLIMIT_NOFILE cannot be unlimited (the kernel caps it at fs.nr_open)"
    ),
    (_BATCH, "if top > fd:", "top > fd -> top >= fd"): (
        "at top == fd no room is asked for: the descriptor then placed at the lowest free "
        "number above fd fits in the table as it is, and is closed at once"
    ),
    (_BATCH, 'fd = os.open(os.devnull, os.O_RDONLY | getattr(os, "O_CLOEXEC", 0))', "0 -> 1"): (
        "the default is never used: os.O_CLOEXEC exists wherever the batch writer runs"
    ),
    (_DURABLE, 'if _libc is None and sys.platform == "linux":', "and -> or"): (
        "loads the C library again on each call: the same library, the same answers"
    ),
    (
        _DURABLE,
        '_libc = ctypes.CDLL(ctypes.util.find_library("c") or "libc.so.6", use_errno=True)',
        "or -> and",
    ): "find_library('c') names libc.so.6 on glibc: the same library is loaded",
    (
        _DURABLE,
        "buf = ctypes.create_string_buffer(256)  # struct statfs: f_type (a C long) comes first",
        "256 -> 257",
    ): "a larger buffer for struct statfs (120 bytes on 64-bit Linux): f_type is read the same",
    (_DURABLE, 'if libc is None or not hasattr(libc, "syncfs"):', "or -> and"): (
        "on Linux the C library loads and has syncfs (glibc 2.14): both tests are false either way"
    ),
    (_DURABLE, "return False", "return X -> return None"): (
        "None is as false as False to the callers of sync_filesystem and sync_files (`... and "
        "sync_filesystem(...)`, `if sync_files(...)`); tests that ask for False itself kill it "
        "at the lines they reach"
    ),
    (_DURABLE, "return False", "False -> True"): (
        "of the six `return False` only the one for a C library without syncfs survives: "
        "never reached on glibc Linux"
    ),
    (_DURABLE, 'fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))', "0 -> 1"): (
        "the default is never used: os.O_DIRECTORY exists on every platform with syncfs"
    ),
    (_DURABLE, "if len(fds) == 1 or workers <= 1:", "len(fds) == 1 -> len(fds) != 1"): (
        "every file is fdatasynced either way, from this thread or from a pool "
        "(test_on_a_busy_machine_every_file_is_fdatasynced): only the time differs"
    ),
    (_DURABLE, "if len(fds) == 1 or workers <= 1:", "or -> and"): (
        "every file is fdatasynced either way, from this thread or from a pool: only the time "
        "differs"
    ),
    (_DURABLE, "if len(fds) == 1 or workers <= 1:", "1 -> 2"): (
        "every file is fdatasynced either way, from this thread or from a pool: only the time "
        "differs"
    ),
    (_DURABLE, "if len(fds) == 1 or workers <= 1:", "workers <= 1 -> workers < 1"): (
        "a pool of one thread fdatasyncs the same files as this thread"
    ),
    (_DURABLE, 'flag = getattr(os, "O_TMPFILE", 0)', "0 -> 1"): (
        "the default is never used on Linux, where os.O_TMPFILE exists (Python 3.4+)"
    ),
    (_DURABLE, "if not flag or _c() is None:", "or -> and"): (
        "on Linux the flag exists and the C library loads: both tests are false either way; "
        "elsewhere neither exists"
    ),
    (_DURABLE, "_unnamed_ok[key] = False", "False -> True"): (
        "a True remembered where no unnamed file can be made sends the next call through the "
        "same checks, which refuse again: None either way (on the test machines' ext4 and tmpfs "
        "neither line is reached but for a folder that does not exist, and the batch writer's "
        "tmp/ always does)"
    ),
    (_DURABLE, "if ok is None:", "ok is None -> ok is not None"): (
        "the probe only finds out whether linkat can name a file through /proc: where /proc "
        "is mounted (every machine the tests run on) skipping it names files the same"
    ),
    (
        _DURABLE,
        "if os.fstat(fd).st_mode & 0o7777 != mode:  # the umask took bits away (costlier: chmod)",
        "4095 -> 4096",
    ): "a regular file never has bit 0o10000: the chmod is always made, to the same mode",
    (_DURABLE, "ok = False", "False -> True"): (
        "reached only where linkat through /proc fails (no /proc mounted), not on a machine "
        "that runs the tests"
    ),
    (
        "ledger/store/atomic.py",
        'fd = os.open(path, os.O_RDONLY | getattr(os, "O_DIRECTORY", 0))',
        "0 -> 1",
    ): "the default is never used: os.O_DIRECTORY exists on every platform the ledger runs on",
    ("ledger/store/atomic.py", "f.flush()", "drop call: f.flush()"): (
        "durability: the close() that follows still writes the buffer before the rename "
        "(test_a_replaced_file_is_whole_readable_and_leaves_nothing reads it back); only the "
        "fsync between them then syncs less"
    ),
    ("ledger/store/atomic.py", "f.close()", "drop call: f.close()"): (
        "the buffer was flushed just before, and temp_file closes the file on exit"
    ),
    # mutckpt: the torch checkpoint modules (fifth round).
    ("ledger/torch/ckpt_io.py", "bytes_total: int = 0", "0 -> 1"): (
        "the default is never seen: write_tensors sets bytes_total before returning its stats"
    ),
    (
        "ledger/torch/ckpt_io.py",
        "for n, result in zip(order, done, strict=True):",
        "True -> False",
    ): "map_threads returns one result for each item it is given: the lengths always agree",
    (
        "ledger/torch/ckpt_io.py",
        "for (i, _j, chunk), (oid, written, was_reused) in zip(jobs, results, strict=True):",
        "True -> False",
    ): "results has one slot for each job: the lengths always agree",
    **{
        ("ledger/torch/ckpt_write.py", "_PIECE = 4 << 20", mutation): (
            "the size of the aligned pieces an O_DIRECT write copies and writes one after the "
            "other: 5 MiB and 8 MiB are whole 4 KiB blocks too, and any such size writes the "
            "same bytes at the same offsets (only the number of pwrite calls changes)"
        )
        for mutation in ("4 -> 5", "20 -> 21")
    },
    ("ledger/torch/ckpt_write.py", '_O_DIRECT = getattr(os, "O_DIRECT", 0)', "0 -> 1"): (
        "the default for a platform without O_DIRECT; Linux, where the tests run, has it"
    ),
    **{
        ("ledger/torch/ckpt_io.py", "_READ_PIECE = 256 << 10", mutation): (
            "the size of the pieces a load reads and hashes one after the other: any size "
            "reads and hashes the same bytes in the same order"
        )
        for mutation in ("256 -> 257", "10 -> 11")
    },
    **{
        (
            "ledger/torch/ckpt_io.py",
            "key=lambda n: not likely_new(objects, tensors[jobs[n][0]][0], *jobs[n][1:]),",
            mutation,
        ): "only the order in which the chunks are stored changes (likely_new is a hint)"
        for mutation in (
            "drop not: not likely_new(objects, tensors[jobs[n][0]][0], *jobs[n][1:])",
            "0 -> 1",
        )
    },
    (
        "ledger/torch/ckpt_io.py",
        "objects: ObjectStore, oid: str, dest: memoryview, key: str, streamed: bool = True",
        "True -> False",
    ): "the default is never seen: read_tensors, the one caller, always passes streamed=",
    (
        "ledger/torch/ckpt_io.py",
        "streamed = len(jobs) >= _WORKERS",
        "len(jobs) >= _WORKERS -> len(jobs) > _WORKERS",
    ): (
        "a load of exactly _WORKERS chunks reads each chunk whole and hashes it afterwards "
        "(BLAKE3's own threads) instead of piece by piece: the same bytes, the same hash "
        "checks and errors"
    ),
    (_REUSE, "return True", "return X -> return None"): _SCHED,
    (_REUSE, "return True", "True -> False"): _SCHED,
    (_REUSE, "return bool(", "return X -> return None"): _SCHED,
    (_REUSE, "if MEMCMP is None or len(data) < MIN_BYTES:", "or -> and"): _SCHED,
    (
        _REUSE,
        "if MEMCMP is None or len(data) < MIN_BYTES:",
        "MEMCMP is None -> MEMCMP is not None",
    ): _SCHED,
    (
        _REUSE,
        "if MEMCMP is None or len(data) < MIN_BYTES:",
        "len(data) < MIN_BYTES -> len(data) <= MIN_BYTES",
    ): _SCHED,
    **{
        (_REUSE, _PROBES, mutation): _SCHED
        for mutation in (
            "MEMCMP(addr, m.addr, _PROBE) != 0 -> MEMCMP(addr, m.addr, _PROBE) == 0",
            "or -> and",
            "0 -> 1",
            "MEMCMP(addr + tail, m.addr + tail, _PROBE) != 0 -> "
            "MEMCMP(addr + tail, m.addr + tail, _PROBE) == 0",
        )
    },
    (_REUSE, _PROBES, "addr + tail -> addr - tail"): (
        f"{_SCHED}; the 4 KiB it then reads before the chunk's buffer lie in the process's own "
        "heap, which no test can arrange to be unmapped"
    ),
    (_REUSE, "m.close()", "drop call: m.close()"): (
        "the mapping's last reference goes right after (the end of remember, of forget): "
        "CPython's reference counting unmaps it there, on the same thread"
    ),
    (_REUSE, "_retire([old])", "drop call: _retire([old])"): (
        "the replaced mapping's last reference goes at the end of remember, which unmaps it "
        "there: the same mappings, only unmapped on the saving thread instead of the reaper's "
        "(slower when gc deleted its file, which no test times)"
    ),
    # "drop call: _retire(maps)" was listed here until 1 December: the mappings are then
    # unmapped on the saving thread; test_a_process_whose_mappings_were_retired_still_exits
    # now checks that the unmapping thread was started, which kills it.
    (_REUSE, "_retired.put(m)", "drop call: _retired.put(m)"): (
        "the mapping not queued loses its last reference when the caller returns, which "
        "unmaps it there: the same mappings, unmapped on the saving thread"
    ),
    (_REUSE, "if maps and (_reaper is None or not _reaper.is_alive()):", "and -> or"): _REAPERS,
    (
        _REUSE,
        "if maps and (_reaper is None or not _reaper.is_alive()):",
        "drop not: not _reaper.is_alive()",
    ): _REAPERS,
    (
        _REUSE,
        "if f.read(1) != bytes([_CODEC_RAW]) or os.fstat(f.fileno()).st_size != size + 1:",
        "or -> and",
    ): (
        "a compressed chunk's file is at least 10% smaller than the chunk, so the size check "
        "alone refuses it, and a raw file of another size (cut short) is mapped but refused by "
        "readable() at every use, and closed at once by remember when it did not write it"
    ),
    (_REUSE, "total = 16 << 30", "16 -> 17"): _NO_SYSCONF,
    (_REUSE, "total = 16 << 30", "30 -> 31"): _NO_SYSCONF,
    (_REUSE, "_PROBE = 4 << 10", "4 -> 5"): _SCHED,
    (_REUSE, "_PROBE = 4 << 10", "10 -> 11"): _SCHED,
    (_REUSE, "return False", "return X -> return None"): (
        "None is as false as False to both callers of equals (`if ... else`, `not`)"
    ),
    (_REUSE, "self.mm.close()", "drop call: self.mm.close()"): (
        "every caller drops its last reference to the mapping right after close(), and "
        "CPython's reference counting then unmaps it at once on the same thread (a test "
        "checks /proc/self/maps)"
    ),
    # mutcmp: the rest of ledger/replay/compare/ (1 December).
    (_TENSORS, "@dataclass(frozen=True)", "True -> False"): (
        "frozen only forbids assignment (and adds a hash), and no code assigns to a TensorData "
        "or hashes one (its arrays are unhashable anyway)"
    ),
    (
        _TENSORS,
        "ints = {1: torch.uint8, 2: torch.int16, 4: torch.int32, 8: torch.int64}",
        "8 -> 9",
    ): (
        "no dtype numpy lacks is 8 bytes wide (bfloat16 2, float8 1, complex32 4): the entry is "
        "never looked up"
    ),
    (_TENSORS, 'tally.value(_root(key), x, y, [key, key.rsplit(".", 1)[-1]])', "1 -> 2"): (
        "the last part is the same however many splits come before it"
    ),
    (_TENSORS, "return False", "return X -> return None"): (
        "every caller reads the result as a truth value (`if not ...`) or not at all: None is "
        "as false as False"
    ),
    (
        _TENSORS,
        'tol = tolerance_for(tally.settings, names or [key, key.rsplit(".", 1)[-1]], x.dtype)',
        "1 -> 2",
    ): "the last part is the same however many splits come before it",
    (_TENSORS, "if x.values is None or y.values is None:", "or -> and"): (
        "the dtypes were found equal just above, and values is None exactly for the dtypes "
        "without numbers: both are None or neither"
    ),
    (_TENSORS, "tally.mismatches += r.mismatches or 0", "0 -> 1"): (
        "compare_arrays counts the mismatches whenever dtypes and shapes agree, as they do here "
        "(values of one dtype, shapes checked above): the fallback is never used"
    ),
    (_TENSORS, "va = np.ascontiguousarray(a).reshape(-1).view(np.uint8)", "1 -> 2"): (
        "numpy reads any negative size as 'the rest': reshape(-2) flattens like reshape(-1)"
    ),
    (_TENSORS, "vb = np.ascontiguousarray(b).reshape(-1).view(np.uint8)", "1 -> 2"): (
        "numpy reads any negative size as 'the rest': reshape(-2) flattens like reshape(-1)"
    ),
    (_TENSORS, "bad_count, first = r.mismatches or 0, r.first_mismatch", "0 -> 1"): (
        "compare_arrays counts the mismatches whenever dtypes and shapes agree, as they do here: "
        "the fallback is never used"
    ),
    (_TENSORS, "r = compare_arrays(x.bits, y.bits, bitwise=True)", "True -> False"): (
        "the bits that reach here are an integer view (a dtype numpy lacks, without values), "
        "and the default tolerance of integers is exact: the same comparison"
    ),
    (_TENSORS, "if bad_count == 0 or first is None:", "or -> and"): (
        "both come from the same mismatch mask: the count is 0 exactly when there is no first "
        "mismatch"
    ),
    (
        _TENSORS,
        "va = np.ascontiguousarray(a).reshape(-1).view(np.uint8).reshape((*a.shape, size))",
        "1 -> 2",
    ): "numpy reads any negative size as 'the rest': reshape(-2) flattens like reshape(-1)",
    (
        _TENSORS,
        "vb = np.ascontiguousarray(b).reshape(-1).view(np.uint8).reshape((*b.shape, size))",
        "1 -> 2",
    ): "numpy reads any negative size as 'the rest': reshape(-2) flattens like reshape(-1)",
    (
        "ledger/replay/compare/trees.py",
        "shutil.rmtree(scratch, ignore_errors=True)",
        "True -> False",
    ): (
        "removing the scratch directory this call made fails only if something else removes or "
        "holds it meanwhile (root ignores permissions): no test stages that"
    ),
    (
        "ledger/replay/compare/structured.py",
        'longer, side = (original, "original") if len(original) > len(replay) '
        'else (replay, "replay")',
        "len(original) > len(replay) -> len(original) >= len(replay)",
    ): "at equal lengths there is no item past the shorter list: either side, nothing is added",
    (
        "ledger/replay/compare/tables.py",
        'longer, side = (a, "original") if len(a) > len(b) else (b, "replay")',
        "len(a) > len(b) -> len(a) >= len(b)",
    ): "at equal lengths there is no row past the shorter table: either side, nothing is added",
    (
        "ledger/replay/compare/logs.py",
        'return bool(_LOG_NAME.fullmatch(name.rsplit("/", 1)[-1]))',
        "1 -> 2",
    ): "the last part is the same however many splits come before it",
    (
        "ledger/replay/compare/tensorboard.py",
        'return "tfevents" in name.rsplit("/", 1)[-1]',
        "1 -> 2",
    ): "the last part is the same however many splits come before it",
    ("ledger/replay/compare/digest.py", "_CHUNK = 1 << 20", "1 -> 2"): (
        "the read size: any chunk size finds the same first differing byte (tests cross the "
        "1 MiB boundary both ways)"
    ),
    ("ledger/replay/compare/digest.py", "_CHUNK = 1 << 20", "20 -> 21"): (
        "the read size: any chunk size finds the same first differing byte (tests cross the "
        "1 MiB boundary both ways)"
    ),
    (_TENSORS, "head = f.read(2)", "2 -> 3"): (
        "only the first byte is looked at (the pickle opcode b'\\x80'): one byte more read "
        "changes nothing"
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
    """Annotations, ``__all__``, ``@overload`` stubs and ``if TYPE_CHECKING`` blocks: not
    behaviour."""
    skip: set[int] = set()

    def mark(node: ast.AST | None) -> None:
        if node is not None:
            skip.update(id(n) for n in ast.walk(node))

    for node in ast.walk(tree):
        if isinstance(node, ast.AnnAssign | ast.arg):
            mark(node.annotation)
        elif isinstance(node, ast.FunctionDef | ast.AsyncFunctionDef):
            mark(node.returns)
            if any(_call_name_of(d) == "overload" for d in node.decorator_list):
                mark(node)  # a typing stub: the function that follows replaces it
        elif (
            isinstance(node, ast.Assign)
            and any(isinstance(t, ast.Name) and t.id == "__all__" for t in node.targets)
        ) or (isinstance(node, ast.If) and "TYPE_CHECKING" in ast.unparse(node.test)):
            mark(node)
    return skip


def _call_name_of(f: ast.expr) -> str:
    return f.attr if isinstance(f, ast.Attribute) else f.id if isinstance(f, ast.Name) else ""


def _call_name(call: ast.Call) -> str:
    return _call_name_of(call.func)


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
            swapped = ast.BinOp(node.left, _BIN_SWAP[type(node.op)](), node.right)
            add(node, f"{ast.unparse(node)} -> {ast.unparse(swapped)}", swapped)
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


def _pytest_env(copy: Path, env_extra: dict[str, str] | None = None) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("COVERAGE_PROCESS_")}
    env["PYTHONPATH"] = str(copy)
    env["PYTHONDONTWRITEBYTECODE"] = "1"
    env.update(env_extra or {})
    return env


def _pytest_args(copy: Path, args: list[str]) -> list[str]:
    """pytest's arguments for a run of ``args`` (node ids) against ``copy``."""
    # Hundreds of node ids, or a few with long parameters (a 200 KB log line in a test id;
    # the kernel refuses any argument over 128 KiB): pytest reads them from a file (@file).
    if len(args) > 20 or sum(len(a) for a in args) > 32_000:
        listing = copy / ".mutation-tests"
        listing.write_text("\n".join(args) + "\n")
        args = [f"@{listing}"]
    return ["-x", "-q", *PYTEST_PLUGINS_OFF, *args]


def _pytest(
    copy: Path, args: list[str], timeout: float, env_extra: dict[str, str] | None = None
) -> tuple[str, float]:
    """Run the tests against the copy; the whole process group is stopped whatever happens."""
    env = _pytest_env(copy, env_extra)
    t0 = time.monotonic()
    proc = subprocess.Popen(
        [sys.executable, "-m", "pytest", *_pytest_args(copy, args)],
        cwd=copy,
        env=env,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
        start_new_session=True,
    )
    _running.add(proc.pid)
    outcome = "killed-timeout"
    try:
        rc = proc.wait(timeout=max(timeout, 1.0))
        outcome = "survived" if rc == 0 else "killed"
    except subprocess.TimeoutExpired:
        pass
    finally:
        # Also reaps what the tests left behind in the group (a hung child of a mutant).
        with contextlib.suppress(ProcessLookupError):
            os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        _running.discard(proc.pid)
    return outcome, time.monotonic() - t0


# What a forked run's exit code says; any other code (a failure of the fork server's own
# harness, "no tests", a usage error) is not trusted as a kill: the mutant is run again plainly.
_FORK_OUTCOMES = {0: "survived", 1: "killed", 2: "killed", 3: "killed"}


def _forked_pytest(
    server: ForkServer, copy: Path, args: list[str], timeout: float
) -> tuple[str, float] | None:
    """Run the tests in a child forked from ``server``; None when that run cannot be trusted
    (the caller runs them plainly)."""
    done = server.run(_pytest_args(copy, args), {}, max(timeout, 1.0), _running)
    if done is None:
        return None
    rc, seconds, timed_out = done
    if timed_out:
        return "killed-timeout", seconds
    if rc < 0:  # a signal: a crash the mutant caused, as in a plain run
        return "killed", seconds
    outcome = _FORK_OUTCOMES.get(rc)
    return None if outcome is None else (outcome, seconds)


# The process groups of the test runs in flight, stopped when the run itself is stopped.
_running: set[int] = set()


def _stop_running() -> None:
    for pid in list(_running):
        with contextlib.suppress(ProcessLookupError):
            os.killpg(pid, signal.SIGKILL)


@dataclass
class Options:
    select: bool = True  # per-mutant test selection by coverage (False: --no-select)
    cache: bool = True  # reuse results whose key is unchanged (False: --no-cache)
    recheck: bool = False  # rerun cached survivors (after new tests)
    deadline: float = float("inf")  # time.monotonic() past which no mutant starts (--budget)
    jobs: int = 1  # mutants run at once, each in its own copy of the checkout (--jobs)
    tests: list[str] | None = None  # instead of the mapped tests (--tests)
    fork: bool = True  # run each mutant's tests in a child of a warm fork server (--no-fork)


class _Copy:
    """The throw-away checkout, made on first use (a fully cached module never needs one)."""

    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self._path: Path | None = None

    @property
    def path(self) -> Path:
        if self._path is None:
            self._path = self.tmp / "copy"
            self._path.mkdir()
            _copy_checkout(self._path)
        return self._path


def _load_json(path: Path) -> dict[str, Any]:
    try:
        loaded = json.loads(path.read_text())
    except (OSError, ValueError):
        return {}
    return loaded if isinstance(loaded, dict) else {}


def _write_json(path: Path, data: object) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_suffix(".tmp")
    tmp.write_text(json.dumps(data, indent=1))
    tmp.replace(path)


def _cover(copy: _Copy, module: str, tests: list[str]) -> CoverMap | None:
    """The coverage pass, which is also the baseline: None when the tests fail unmutated."""
    work = copy.tmp / "cover"
    shutil.rmtree(work, ignore_errors=True)
    work.mkdir()
    env = coverage_env(work, copy.path, module)
    args = ["-p", "mutation_contexts", *tests]
    outcome, seconds = _pytest(copy.path, args, timeout=3600, env_extra=env)
    if outcome != "survived":
        return None
    return read_coverage(work, module, round(seconds, 1))


def run_module(module: str, *, out_dir: Path, opts: Options) -> dict[str, Any]:
    """Run the mutants of ``module`` whose result is not cached, each against the tests that
    cover it (or all mapped tests without selection), until the deadline; write the results."""
    mapped = opts.tests or MODULES[module]
    tests = [t for t in mapped if (REPO / t.split("::")[0]).is_file()]
    original = (REPO / module).read_text()
    mutants = [m for m in mutants_of(module) if _compiles(apply(original, m), module)]
    name = module.replace("/", ".") + ".json"
    saved_path, cache_path = out_dir / name, out_dir / "cache" / name
    cache = _load_json(cache_path) if opts.cache else {}
    outcomes: dict[str, dict[str, Any]] = cache.get("mutants", {})
    if opts.recheck:
        outcomes = {k: v for k, v in outcomes.items() if v["outcome"] != "survived"}
    spans = Spans.of(original)
    digests: dict[tuple[str, ...], str] = {}

    def digest(ids: list[str]) -> str:
        files = tuple(sorted({t.split("::")[0] for t in ids}))
        if files not in digests:
            digests[files] = hash_tests(REPO, list(files))
        return digests[files]

    all_digest = digest(tests)
    ckey = cover_key(original, tests, all_digest) if opts.select else "no-select"

    def judged(m: Mutant) -> bool:
        """Listed in EQUIVALENT: its survival is argued, not confirmed by running more tests."""
        return (module, m.source, m.mutation) in EQUIVALENT

    def still_valid(hit: dict[str, Any], m: Mutant) -> bool:
        """A cached survivor not judged equivalent stands only if every mapped test, as they
        are now, let it survive (a result of the selected tests alone is rerun)."""
        return hit["outcome"] != "survived" or judged(m) or hit.get("all") == all_digest

    cover = None
    tree = hash_tree(REPO)
    fresh = False  # the cached map was made on this very ledger/ tree: its baseline holds
    if opts.select and cache.get("cover", {}).get("key") == ckey:
        cover = CoverMap.from_json(cache["cover"]["map"])
        fresh = cache["cover"].get("tree") == tree

    def plan(cover: CoverMap | None) -> list[tuple[Mutant, list[str], str, str]]:
        out = []
        for m in mutants:
            if cover is None:
                chosen, why = None, "all tests"
            else:
                chosen, why = select(cover, spans, m.start, m.end)
                if chosen:
                    chosen = _with_always(module, chosen, cover)
            run = tests if chosen is None else chosen
            out.append((m, run, why, mutant_key(original, asdict(m), run, digest(run))))
        return out

    def expected(run: list[str]) -> float:
        """The tests' time in the coverage pass, start-up included (all: the whole pass)."""
        if cover is None or run is tests:
            return base_s
        return seconds_of(cover, run) + overhead

    def pending(planned: list[tuple[Mutant, list[str], str, str]]) -> bool:
        return any(key not in outcomes and why != "uncovered" for _, _, why, key in planned)

    planned = plan(cover) if (cover is not None or not opts.select) else []
    results: list[dict[str, Any]] = []
    with tempfile.TemporaryDirectory(prefix="ledger-mutation-") as tmp:
        copy = _Copy(Path(tmp))
        base_s = cover.seconds if cover is not None else 0.0
        # A mutant to run needs a green baseline now: with selection the coverage pass is the
        # baseline (and refreshes the map), without it a plain run of the mapped tests.
        if (not planned or (pending(planned) and not fresh)) and time.monotonic() < opts.deadline:
            if opts.select:
                cover = _cover(copy, module, tests)
                if cover is None:
                    raise SystemExit(f"mutation: the tests of {module} fail without any mutant")
                cache["cover"] = {"key": ckey, "tree": tree, "map": cover.to_json()}
                base_s = cover.seconds
                planned = plan(cover)
            else:
                base, base_s = _pytest(copy.path, tests, timeout=3600)
                if base != "survived":
                    raise SystemExit(f"mutation: the tests of {module} fail without any mutant")
            print(f"{module}: {len(mutants)} mutants, tests {base_s:.1f}s", flush=True)
        overhead = 0.0
        if cover is not None:
            overhead = max(0.0, cover.seconds - seconds_of(cover, [i["id"] for i in cover.items]))
        if not planned:  # no map and no time to make one
            planned = [(m, tests, "not run", "") for m in mutants]
        n_all = len(cover.items) if cover is not None else len(tests)
        todo: list[tuple[int, Mutant, list[str], str, float]] = []
        for i, (m, run, why, key) in enumerate(planned):
            entry: dict[str, Any] = {
                **asdict(m),
                "tests": n_all if run is tests else len(run),
                "why": why,
            }
            if key in outcomes and still_valid(outcomes[key], m):
                results.append({**entry, **outcomes[key], "cached": True})
            elif why == "uncovered" and judged(m):
                results.append({**entry, "outcome": "survived", "seconds": 0.0})
            elif not key:
                results.append({**entry, "outcome": "not-run", "seconds": 0.0})
            elif why == "uncovered":
                # No test's coverage context reached the line; a child that set up its own
                # environment is not measured, so every mapped test runs before it is reported.
                results.append({**entry, "tests": n_all})
                todo.append((i, m, tests, key, max(60.0, 3 * base_s)))
            else:
                results.append(entry)  # filled in when it has run
                todo.append((i, m, run, key, max(60.0, 3 * expected(run))))
        copies = queue.SimpleQueue[Path]()
        paths = [copy.path] if todo else []
        for n in range(1, min(opts.jobs, len(todo))):
            extra = copy.tmp / f"copy{n}"
            shutil.copytree(copy.path, extra, symlinks=True)
            paths.append(extra)
        for where in paths:
            copies.put(where)
        servers: dict[Path, ForkServer] = {}
        if paths and opts.fork and time.monotonic() < opts.deadline:
            servers = _fork_servers(module, paths, tests, all_digest, out_dir)

        def one(m: Mutant, run: list[str], timeout: float) -> tuple[str, float, dict[str, Any]]:
            where = copies.get()
            try:
                (where / module).write_text(apply(original, m))
                outcome, secs = timed_run(where, run, timeout)
                extra: dict[str, Any] = {}
                if outcome == "survived" and run is not tests and not judged(m):
                    # The selection can miss a test: a statement that runs once per process
                    # (a cache filled, a thread started on first use) is covered only by the
                    # first test that reaches it. A survivor is reported only after every
                    # mapped test let it through.
                    outcome, more = timed_run(where, tests, max(60.0, 3 * base_s))
                    secs += more
                    extra["missed"] = outcome.startswith("killed")
            finally:
                (where / module).write_text(original)
                copies.put(where)
            if outcome == "not-run":
                return outcome, 0.0, {}
            if outcome == "survived" and not judged(m):
                extra["all"] = all_digest  # every mapped test ran and passed
            return outcome, secs, extra

        def timed_run(where: Path, run: list[str], timeout: float) -> tuple[str, float]:
            """The tests' outcome; ``not-run`` when the budget, not the mutant, stopped them."""
            left = opts.deadline - time.monotonic()
            if left <= 0:
                return "not-run", 0.0
            done = None
            server = servers.get(where)
            if server is not None:
                done = _forked_pytest(server, where, run, min(timeout, left))
                if done is None and server.proc.poll() is not None:
                    servers.pop(where, None)  # the server is gone: plain runs from now on
            if done is None:
                done = _pytest(where, run, min(timeout, left))
            if done[0] == "killed-timeout" and left < timeout:
                return "not-run", 0.0
            return done

        def record(futures: dict[Any, tuple[int, Mutant, list[str], str]]) -> None:
            for done in as_completed(futures):
                i, m, _run, key = futures[done]
                outcome, secs, extra = done.result()
                results[i].update(outcome=outcome, seconds=round(secs, 1), **extra)
                if outcome == "not-run":
                    continue
                outcomes[key] = {"outcome": outcome, "seconds": round(secs, 1), **extra}
                flag = "" if outcome.startswith("killed") else f"  <-- {outcome}"
                if extra.get("missed"):
                    flag = "  (killed by a test the selection did not pick)"
                print(
                    f"  [{i + 1}/{len(mutants)}] {secs:5.1f}s {results[i]['tests']:4d} tests "
                    f"{m.line}: {m.mutation}{flag}",
                    flush=True,
                )
                cache["mutants"] = outcomes
                if opts.cache:
                    _write_json(cache_path, cache)
                finished = [r for r in results if "outcome" in r]
                _save(module, tests, finished, saved_path, opts, final=False, base_s=base_s)

        try:
            with ThreadPoolExecutor(max_workers=max(1, opts.jobs)) as pool:
                futures = {
                    pool.submit(one, m, run, t): (i, m, run, key) for i, m, run, key, t in todo
                }
                try:
                    record(futures)
                except BaseException:
                    # Stopped (SIGTERM, Ctrl-C): leaving the pool would otherwise wait for every
                    # queued mutant to run; none starts, and the running tests are stopped.
                    pool.shutdown(wait=False, cancel_futures=True)
                    _stop_running()
                    raise
        finally:
            for server in list(servers.values()):
                server.close()
    cache["mutants"] = outcomes
    if opts.cache:
        _write_json(cache_path, cache)
    return _save(module, tests, results, saved_path, opts, final=True, base_s=base_s)


def _fork_servers(
    module: str, paths: list[Path], tests: list[str], tests_digest: str, out_dir: Path
) -> dict[Path, ForkServer]:
    """A fork server per copy, or none when forked runs of the module's tests do not pass
    unmutated (checked once per tree, tests and preloaded modules; the result is cached)."""
    first = paths[0]
    env = _pytest_env(first)
    t0 = time.monotonic()
    preload = shared_modules(first, _pytest_args(first, tests), env, timeout=600)
    server = ForkServer(first, env, preload)
    if not server.ok:
        print(f"{module}: no fork server (threads after preloading: {server.threads}); plain runs")
        return {}
    key = hashlib.sha256(
        json.dumps([hash_tree(REPO), tests, tests_digest, preload]).encode()
    ).hexdigest()
    known_path = out_dir / "cache" / "fork-baselines.json"
    known = _load_json(known_path)
    if key not in known:
        base = _forked_pytest(server, first, tests, timeout=3600)
        if base is None or base[0] != "survived":
            server.close()
            print(f"{module}: the tests fail in a forked run unmutated; plain runs")
            return {}
        known[key] = round(base[1], 1)
        _write_json(known_path, known)
    servers = {first: server}
    for where in paths[1:]:
        other = ForkServer(where, _pytest_env(where), preload)
        if other.ok:
            servers[where] = other
    print(
        f"{module}: forked runs, {len(preload)} modules preloaded "
        f"({time.monotonic() - t0:.1f}s to start)",
        flush=True,
    )
    return servers


def _with_always(module: str, chosen: list[str], cover: CoverMap) -> list[str]:
    """``chosen`` and the module's ALWAYS tests, in collection order."""
    files = tuple(f + "::" for f in ALWAYS.get(module, []))
    if not files:
        return chosen
    keep = set(chosen)
    return [i["id"] for i in cover.items if i["id"] in keep or i["id"].startswith(files)]


def _compiles(text: str, module: str) -> bool:
    try:
        compile(text, module, "exec")
    except SyntaxError:
        return False
    return True


def _outcome(module: str, r: dict[str, Any]) -> str:
    """A survivor listed in EQUIVALENT counts as equivalent (the cache keeps the raw outcome)."""
    if r["outcome"] == "survived" and (module, r["source"], r["mutation"]) in EQUIVALENT:
        return "equivalent"
    return str(r["outcome"])


def _save(
    module: str,
    tests: list[str],
    results: list[dict[str, Any]],
    saved_path: Path,
    opts: Options,
    *,
    final: bool,
    base_s: float,
) -> dict[str, Any]:
    """Write the results so far (after every mutant: an interrupted run keeps its work)."""
    for r in results:
        r["outcome"] = _outcome(module, r)
    count = {k: sum(r["outcome"] == k for r in results) for k in ("equivalent", "not-run")}
    killed = sum(str(r["outcome"]).startswith("killed") for r in results)
    survived = [r for r in results if r["outcome"] == "survived"]
    scored = killed + len(survived)
    summary = {
        "module": module,
        "tests": tests,
        "complete": final and not count["not-run"],
        "selection": opts.select,
        "mutants": len(results),
        "killed": killed,
        "equivalent": count["equivalent"],
        "survived": len(survived),
        "not_run": count["not-run"],
        "uncovered": sum(r.get("why") == "uncovered" for r in survived),
        # kills that only the run of every mapped test found, after the selected tests passed
        "selection_missed": sum(bool(r.get("missed")) for r in results),
        "score": round(100 * killed / scored, 1) if scored else 100.0,
        # what a cold run costs: the baseline (coverage) pass plus every mutant's own time
        "cold_seconds": round(base_s + sum(float(r["seconds"]) for r in results), 1),
        "survivors": [
            {"line": r["line"], "source": r["source"], "mutation": r["mutation"], "why": r["why"]}
            for r in survived
        ],
        "results": results,
    }
    _write_json(saved_path, summary)
    if final:
        print(
            f"{module}: {killed} killed, {count['equivalent']} equivalent, {len(survived)} "
            f"survived, {count['not-run']} not run: score {summary['score']}%"
        )
    return summary


def report(out_dir: Path) -> None:
    print("| module | mutants | killed | equivalent | survived | not run | score | cold run |")
    print("|---|---|---|---|---|---|---|---|")
    loaded = [_load_json(p) for p in sorted(out_dir.glob("*.json"))]
    loaded = [r for r in loaded if r.get("module") in MODULES]
    for r in loaded:
        print(
            f"| `{r['module']}` | {r['mutants']} | {r['killed']} | {r['equivalent']} "
            f"| {r['survived']} | {r.get('not_run', 0)} | {r['score']}% "
            f"| {float(r.get('cold_seconds', 0)) / 60:.1f} min |"
        )
    total = sum(float(r.get("cold_seconds", 0)) for r in loaded)
    print(f"\ncold run of these modules: {total / 60:.1f} min (sum of the measured times)")
    for r in loaded:
        for x in r["results"]:
            if _outcome(r["module"], x) == "equivalent":
                reason = EQUIVALENT[(r["module"], x["source"], x["mutation"])]
                print(f"- equivalent `{r['module']}:{x['line']}` {x['mutation']}: {reason}")
        for x in r["survivors"]:
            tag = " (no test covers it)" if x.get("why") == "uncovered" else ""
            print(f"- SURVIVED `{r['module']}:{x['line']}` {x['mutation']}{tag}")


def _stop(signum: int, _frame: object) -> None:
    raise SystemExit(128 + signum)  # unwinds: the running tests are stopped, the copy removed


def parse_budget(text: str) -> float:
    """``30m``, ``90s``, ``1h`` or plain seconds."""
    units = {"s": 1, "m": 60, "h": 3600}
    try:
        if text and text[-1] in units:
            return float(text[:-1]) * units[text[-1]]
        return float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"not a duration: {text!r} (try 30m)") from None


def main() -> None:
    signal.signal(signal.SIGTERM, _stop)
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("modules", nargs="*", help="modules to mutate (default: all in MODULES)")
    parser.add_argument("--list", action="store_true", help="print the mutants; run nothing")
    parser.add_argument(
        "--report", action="store_true", help="print the saved results as a Markdown table"
    )
    parser.add_argument(
        "--recheck", action="store_true", help="rerun the cached survivors (after new tests)"
    )
    parser.add_argument(
        "--budget",
        type=parse_budget,
        default=None,
        help="start no mutant after this long (30m, 1h); the rest is reported as not run "
        "and a later run resumes from the cache",
    )
    parser.add_argument(
        "--no-select",
        "--full",
        dest="select",
        action="store_false",
        help="run every mapped test for each mutant, not only the tests that cover it",
    )
    parser.add_argument(
        "--no-cache", dest="cache", action="store_false", help="ignore and keep no cached results"
    )
    parser.add_argument(
        "--jobs",
        "-j",
        type=int,
        default=1,
        help="mutants run at once, each in its own copy of the checkout (default 1)",
    )
    parser.add_argument(
        "--no-fork",
        dest="fork",
        action="store_false",
        help="start a fresh python -m pytest for each mutant instead of forking a warm server",
    )
    parser.add_argument(
        "--tests",
        nargs="+",
        metavar="TEST",
        help="run these tests instead of the mapped ones (a quick first look at a module)",
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
    start = time.monotonic()
    deadline = start + args.budget if args.budget is not None else float("inf")
    opts = Options(
        select=args.select,
        cache=args.cache,
        recheck=args.recheck,
        deadline=deadline,
        jobs=args.jobs,
        tests=args.tests,
        fork=args.fork,
    )
    not_run = 0
    for module in modules:
        summary = run_module(module, out_dir=REPO / "mutation-results", opts=opts)
        not_run += int(summary["not_run"])
    print(f"mutation: {(time.monotonic() - start) / 60:.1f} min")
    if not_run:
        print(
            f"mutation: the budget ran out: {not_run} mutants not run; run again to resume "
            "(finished results are cached)"
        )


if __name__ == "__main__":
    main()
