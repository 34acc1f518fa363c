"""What a replay cannot keep equal by construction (ledger/replay/compare/volatile.py): which
names are timings, how the working tree's paths map to the workspace's, and how the
comparators use both (issue #32, point 9). Each decision has a case on either side of it."""

from __future__ import annotations

import csv
import json
from pathlib import Path

import pytest

from ledger.replay.compare import CompareSettings, compare_files
from ledger.replay.compare._common import ValueTally
from ledger.replay.compare.structured import walk
from ledger.replay.compare.volatile import (
    PathMap,
    not_compared_text,
    volatile_names,
    volatile_reason,
)

BITWISE = CompareSettings(mode="bitwise")


@pytest.mark.parametrize(
    "name",
    [
        "train_runtime",  # transformers, by name
        "eval_samples_per_second",
        "time_elapsed",  # Lightning's Timer
        "my_runtime",  # a timing part anywhere
        "throughput/items",
        "device/mfu",
        "step_elapsed",
        "walltime",
        "timestamp",
        "epoch_duration",
        "epoch_time",  # "time" as the last part
        "time",
        "step_time_ms",  # ... before a unit
        "fwd-time-s",
        "tokens_per_sec",  # per second, in any spelling
        "img_per_second",
        "it_per_s",
        "Train/Runtime",  # case and separators do not matter
    ],
)
def test_timing_names(name: str) -> None:
    assert volatile_reason(name) == "timing"


@pytest.mark.parametrize(
    "name",
    [
        "loss",
        "train_loss_step",
        "time_steps",  # "time" not last
        "timestep",
        "lifetime",
        "ms",  # a unit alone is not a timing
        "s",
        "per_sample_loss",  # "per" without a unit of time
        "seconds_budget",
        "epoch",
        "",
    ],
)
def test_names_that_stay_compared(name: str) -> None:
    assert volatile_reason(name) is None


@pytest.mark.parametrize("name", ["pid", "PID", "hostname", "host_name", "node-name", "ppid"])
def test_process_names(name: str) -> None:
    assert volatile_reason(name) == "process"


def test_process_names_are_whole_names() -> None:
    assert volatile_reason("pid_loss") is None and volatile_reason("hostname_hash") is None


def test_declared_names_exact_or_glob() -> None:
    assert volatile_reason("eval_wall", ["eval_wall"]) == "timing"
    assert volatile_reason("gpu0/clock", ["gpu*/clock"]) == "timing"
    assert volatile_reason("gpu0/clock", ["gpu1/*"]) is None
    assert volatile_reason("loss", ["eval_wall"]) is None


def test_volatile_names_and_the_text() -> None:
    names = ["loss", "train_runtime", "pid", "train_runtime", "eval_wall"]
    found = volatile_names(names, ["eval_wall"])
    assert found == {"eval_wall": "timing", "pid": "process", "train_runtime": "timing"}
    assert list(found) == sorted(found)
    assert (
        not_compared_text(found) == "not compared: eval_wall, train_runtime (timing); pid (process)"
    )
    many = {f"t{i}_runtime": "timing" for i in range(10)}
    text = not_compared_text(many, limit=3)
    assert text == "not compared: t0_runtime, t1_runtime, t2_runtime and 7 more (timing)"
    assert not_compared_text({"a_time": "timing"}, limit=1) == "not compared: a_time (timing)"


ROOTS = [(["/home/u/proj"], ["/tmp/ws/code", "/private/tmp/ws/code"])]


def test_paths_under_the_root_map_in_both_spellings() -> None:
    m = PathMap.of(ROOTS)
    assert m.same("/home/u/proj/ckpt/a.ckpt", "/tmp/ws/code/ckpt/a.ckpt")
    assert m.same("/home/u/proj/ckpt/a.ckpt", "/private/tmp/ws/code/ckpt/a.ckpt")
    assert m.same("/home/u/proj", "/tmp/ws/code")
    assert m.same("saved to '/home/u/proj/x' (ok)", "saved to '/tmp/ws/code/x' (ok)")
    assert m.same("a=/home/u/proj/x,b", "a=/tmp/ws/code/x,b")


def test_paths_that_differ_after_mapping() -> None:
    m = PathMap.of(ROOTS)
    assert not m.same("/home/u/proj/ckpt/a.ckpt", "/tmp/ws/code/ckpt/b.ckpt")
    assert not m.same("/home/u/proj2/x", "/tmp/ws/code2/x")  # a whole path, not a prefix
    assert not m.same("/x/home/u/proj/a", "/x/tmp/ws/code/a")  # nor inside another path
    assert not m.same("/tmp/ws/code/a", "/home/u/proj/a")  # each side maps its own root


def test_shared_paths_are_kept_even_inside_the_root() -> None:
    m = PathMap.of(ROOTS, keep=["/home/u/proj/.ledger"])
    assert m.same("/home/u/proj/.ledger/objects/x", "/home/u/proj/.ledger/objects/x")
    assert not m.same("/home/u/proj/.ledger/objects/x", "/tmp/ws/code/.ledger/objects/x")
    assert m.same("/home/u/proj/.ledgerx", "/tmp/ws/code/.ledgerx")


def test_no_roots_maps_nothing() -> None:
    assert not PathMap.of([]).same("/a", "/b")
    assert not PathMap.of([(["/"], ["/tmp/ws"])]).same("/a", "/tmp/ws/a")  # "/" is dropped
    assert not PathMap.of([([""], ["/tmp/ws"])]).same("x", "/tmp/ws")
    assert PathMap.of([(["/a/"], ["/b/"])]).same("/a/x", "/b/x")  # a trailing slash is one path


def test_describe_names_both_roots() -> None:
    assert PathMap.of(ROOTS).describe() == (
        "paths under /home/u/proj read as under the replay's /tmp/ws/code"
    )


MAPPED = CompareSettings(mode="bitwise", path_roots=ROOTS, shared_paths=[], skip_volatile=True)


def _json_pair(tmp_path: Path, a: object, b: object) -> tuple[Path, Path]:
    (tmp_path / "a").mkdir()
    (tmp_path / "b").mkdir()
    (tmp_path / "a" / "s.json").write_text(json.dumps(a))
    (tmp_path / "b" / "s.json").write_text(json.dumps(b))
    return tmp_path / "a" / "s.json", tmp_path / "b" / "s.json"


def test_a_document_compares_paths_after_mapping(tmp_path: Path) -> None:
    a, b = _json_pair(
        tmp_path,
        {"best": "/home/u/proj/ckpt/e0.ckpt", "n": 1},
        {"best": "/tmp/ws/code/ckpt/e0.ckpt", "n": 1},
    )
    r = compare_files(a, b, MAPPED)
    assert (r.status, r.mismatches, r.total) == ("identical", 0, 2)
    assert r.notes == [
        "1 path(s) equal once mapped: paths under /home/u/proj read as under the replay's "
        "/tmp/ws/code"
    ]
    assert compare_files(a, b, BITWISE).status == "different"  # no roots: compared as written


def test_timings_in_a_document_are_listed_not_compared(tmp_path: Path) -> None:
    a, b = _json_pair(
        tmp_path,
        {"log": [{"loss": 1.5, "train_runtime": 3.2}], "pid": 10},
        {"log": [{"loss": 1.5, "train_runtime": 0.4}], "pid": 11},
    )
    r = compare_files(a, b, MAPPED)
    assert (r.status, r.total) == ("identical", 1)
    assert r.notes == ["not compared: log[0].train_runtime (timing); pid (process)"]
    plain = compare_files(a, b, BITWISE)  # skip_volatile is off by default
    assert plain.status == "different" and plain.mismatches == 2


def test_a_declared_timing_in_a_document(tmp_path: Path) -> None:
    a, b = _json_pair(tmp_path, {"wall": 1.0}, {"wall": 2.0})
    declared = MAPPED.model_copy(update={"timing": ["wall"]})
    assert compare_files(a, b, declared).status == "identical"
    assert compare_files(a, b, MAPPED).status == "different"


def test_a_repr_key_is_shortened_where_a_person_reads_it() -> None:
    """Lightning keys a callback's state by the repr of its settings; the first difference
    reads ``callbacks["ModelCheckpoint{…}"].best_model_path``, with both values."""
    key = "ModelCheckpoint{'monitor': None, 'mode': 'min', 'every_n_train_steps': 0}"
    tally = ValueTally(BITWISE)
    walk(
        tally,
        {"callbacks": {key: {"best_model_path": "/a/e0.ckpt"}}},
        {"callbacks": {key: {"best_model_path": "/b/e0.ckpt"}}},
        "state",
    )
    d = tally.first
    assert d is not None and tally.mismatches == 1
    assert d.description == (
        "state.callbacks[\"ModelCheckpoint{…}\"].best_model_path: '/a/e0.ckpt' != '/b/e0.ckpt'"
    )
    assert d.key == f"state.callbacks[{json.dumps(key)}].best_model_path"  # the full name


@pytest.mark.parametrize(
    ("key", "shown"),
    [
        ("Timer(interval=1)", '["Timer(…)"]'),
        ("a b[1]", '["a b[…]"]'),
        ("x " * 20, '["' + "x " * 20 + '"]'),
        ("x " * 20 + "y", '["' + ("x " * 20)[:39] + '…"]'),
        ("{a}", '["{a}"]'),  # an opening bracket first: nothing before it to keep
    ],
)
def test_short_keys(key: str, shown: str) -> None:
    tally = ValueTally(BITWISE)
    walk(tally, {key: 1}, {key: 2})
    assert tally.first is not None
    assert tally.first.description.startswith(shown + ": 1 != 2")


def test_a_key_in_one_side_only_is_shown_short() -> None:
    tally = ValueTally(BITWISE)
    walk(tally, {"ModelCheckpoint{'a': 1}": 1}, {}, "s")
    assert tally.first is not None
    assert tally.first.description == (
        's["ModelCheckpoint{…}"] is in the original but missing in the replay'
    )
    tally = ValueTally(BITWISE)
    walk(tally, {}, {"Timer{'a': 1}": [1]}, "s")
    assert tally.first is not None and tally.first.description.startswith('s["Timer{…}"] is in')
    tally = ValueTally(BITWISE)
    walk(tally, {"k{x}": [1]}, {"k{x}": [1, 2]}, "s")
    assert tally.first is not None
    assert tally.first.description == 's["k{…}"][1] is in the replay but missing in the original'


def test_a_table_timing_column(tmp_path: Path) -> None:
    for side, t in (("a", "0.5"), ("b", "0.7")):
        (tmp_path / side).mkdir()
        with open(tmp_path / side / "m.csv", "w", newline="") as f:
            csv.writer(f).writerows([["step", "loss", "epoch_time"], [1, "0.25", t]])
    a, b = tmp_path / "a" / "m.csv", tmp_path / "b" / "m.csv"
    r = compare_files(a, b, MAPPED)
    assert r.status == "identical" and r.notes[-1] == "not compared: column 'epoch_time' (timing)"
    assert compare_files(a, b, BITWISE).status == "different"


def test_a_log_line_naming_the_working_tree(tmp_path: Path) -> None:
    for side, root in (("a", "/home/u/proj"), ("b", "/tmp/ws/code")):
        (tmp_path / side).mkdir()
        (tmp_path / side / "train.log").write_text(f"start\nsaved {root}/ckpt/e0.ckpt\n")
    a, b = tmp_path / "a" / "train.log", tmp_path / "b" / "train.log"
    logs = MAPPED.model_copy(update={"include_logs": True})
    r = compare_files(a, b, logs)
    assert (r.status, r.total) == ("identical", 2) and "1 path(s) equal" in r.notes[0]
    r = compare_files(a, b, BITWISE.model_copy(update={"include_logs": True}))
    assert r.status == "different"


def test_a_torch_file_maps_paths_and_leaves_timings_out(tmp_path: Path) -> None:
    """A Lightning ``.ckpt`` written by Lightning itself: tensors, and beside them callback
    state holding a path under the working tree and the Timer's elapsed time."""
    torch = pytest.importorskip("torch")
    for side, root, elapsed in (("a", "/home/u/proj", 1.5), ("b", "/tmp/ws/code", 2.5)):
        (tmp_path / side).mkdir()
        state = {
            "w": torch.ones(2),
            "callbacks": {"best_model_path": f"{root}/ckpt/e0.ckpt", "time_elapsed": elapsed},
        }
        torch.save(state, tmp_path / side / "e0.ckpt")
    a, b = tmp_path / "a" / "e0.ckpt", tmp_path / "b" / "e0.ckpt"
    r = compare_files(a, b, MAPPED)
    assert r.status == "identical", r
    assert "not compared: callbacks.time_elapsed (timing)" in r.notes
    assert any(n.startswith("1 path(s) equal once mapped") for n in r.notes)
    plain = compare_files(a, b, BITWISE)
    assert plain.status == "different" and plain.mismatches == 2
