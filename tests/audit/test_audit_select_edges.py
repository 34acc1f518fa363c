"""Which recorded number a claim is judged on: the series chosen when a run holds several of the
same metric (combined over ranks, the API, TensorBoard, stdout; rank 0 before the others), the
best step when the selection series ties or records steps of its own, and test-split
selection found deep in a config or a long list, and not where it is not."""

from __future__ import annotations

from collections.abc import Sequence
from datetime import UTC, datetime
from typing import Any

import pytest
from _audit_lab import Lab
from test_audit_evidence import SEEDS, claim, run_claims

from ledger.records.metrics import build_series, summarize
from ledger.records.run import Run

# (source, rank, final value), in the order the run record lists them.
Series = tuple[str, int | None, float]


def _add(
    lab: Lab,
    run_id: str,
    series: dict[str, Sequence[tuple[str, int | None, Sequence[tuple[int | None, float]]]]],
    **fields: Any,
) -> None:
    """A run record as `ledger record` writes one, with each metric's series as given:
    (source, rank, points)."""
    store = lab.store
    contract = store.put_json({"kind": "contract-stub", "schema": 1, "name": "exp"})
    summaries = []
    for metric, sources in series.items():
        for source, rank, points in sources:
            s = build_series(
                metric,
                source,
                [(st, None, 0.0, v) for st, v in points],
                rank=rank,  # type: ignore[arg-type]
            )
            summaries.append(summarize(s, store.put_json(s.to_json())))
    run = Run.model_validate(
        {
            "run_id": run_id,
            "name": "exp",
            "tags": fields.pop("tags", {}),
            "status": "succeeded",
            "exit_code": 0,
            "started": datetime(2026, 11, 30, 6, 0, tzinfo=UTC),
            "host": "test-host",
            "pid": 1,
            "contract": contract,
            "contract_digest": contract,
            "resolved_config": None,
            "metrics": summaries,
            "ledger_version": "0.1.0",
            **fields,
        }
    )
    store.set_ref(f"runs/{run_id}", store.put_json(run.to_json()), op="seal", status="succeeded")


CHOICES: dict[str, tuple[list[Series], float]] = {
    # combined over ranks first, whatever the record lists before it
    "combined-over-api": ([("api", None, 3.0), ("combined", None, 4.0)], 4.0),
    "combined-over-rank-0": ([("api", 0, 5.0), ("combined", None, 6.0)], 6.0),
    "api-over-tensorboard": ([("tensorboard", None, 2.0), ("api", None, 3.0)], 3.0),
    "tensorboard-over-stdout": ([("stdout", None, 1.0), ("tensorboard", None, 2.0)], 2.0),
    "rank-0-over-rank-1": ([("api", 1, 7.0), ("api", 0, 5.0)], 5.0),
    # a process-wide stdout series and an API one from rank 0: the source decides
    "rank-0-api-over-stdout": ([("stdout", None, 1.0), ("api", 0, 5.0)], 5.0),
}


@pytest.mark.parametrize("case", sorted(CHOICES))
def test_a_run_with_several_series_of_a_metric_is_judged_on_one(lab: Lab, case: str) -> None:
    series, want = CHOICES[case]
    _add(
        lab, "r-00", {"test/acc": [(src, rank, [(0, v - 1.0), (1, v)]) for src, rank, v in series]}
    )
    got = run_claims(lab, claim("c", value=str(want), spread=None, n_seeds=1))["c"]
    assert [e.value for e in got.runs] == [want], got.runs


def _best_val_run(lab: Lab, run_id: str, steps: list[int | None], val: list[float]) -> None:
    test = [91.0 + i for i in range(len(val))]
    _add(
        lab,
        run_id,
        {
            "test/acc": [("api", None, list(zip(steps, test, strict=True)))],
            "val/acc": [("api", None, list(zip(steps, val, strict=True)))],
        },
    )


def test_a_best_val_tie_takes_the_first_step_that_reached_it(lab: Lab) -> None:
    _best_val_run(lab, "r-00", [0, 1, 2, 3], [80.0, 85.0, 84.0, 85.0])
    got = run_claims(lab, claim("c", value="92", spread=None, n_seeds=1, checkpoint="best-val"))
    (e,) = got["c"].runs
    assert (e.step, e.value) == (1, 92.0), e


def test_a_lower_is_better_selection_takes_the_smallest(lab: Lab) -> None:
    _add(
        lab,
        "r-00",
        {
            "test/loss": [("api", None, [(0, 0.9), (1, 0.5), (2, 0.7)])],
            "val/loss": [("api", None, [(0, 0.8), (1, 0.4), (2, 0.6)])],
        },
    )
    got = run_claims(
        lab,
        claim(
            "c",
            metric="test/loss",
            value="0.5",
            spread=None,
            n_seeds=1,
            checkpoint="best-val",
            higher_is_better="false",
        ),
    )
    (e,) = got["c"].runs
    assert (e.step, e.value) == (1, 0.5), e
    assert e.note == "step 1: best val/loss 0.4"


@pytest.mark.parametrize("steps", [[100, 200, 300], [None, None, None]])
def test_the_best_step_is_the_recorded_one_or_the_index(lab: Lab, steps: list[int | None]) -> None:
    """Series recorded every 100 steps, and stdout series without steps (their index is the
    step): the test value is read where the validation was best."""
    _best_val_run(lab, "r-00", steps, [80.0, 85.0, 84.0])
    got = run_claims(lab, claim("c", value="92", spread=None, n_seeds=1, checkpoint="best-val"))
    (e,) = got["c"].runs
    want_step = 200 if steps[0] is not None else 1
    assert (e.step, e.value, e.used) == (want_step, 92.0, True), e
    assert e.note == f"step {want_step}: best val/acc 85"


def _nested(depth: int) -> dict[str, Any]:
    """A config whose ``early_stopping: test`` sits in a mapping ``depth`` levels down."""
    inner: dict[str, Any] = {"early_stopping": "test"}
    for i in range(depth):
        inner = {f"level{depth - i}": inner}
    return inner


def _marks(lab: Lab, config: Any, tags: dict[str, str] | None = None) -> list[str]:
    for i, v in enumerate(SEEDS):
        lab.add(f"exp-{i}", {"test/acc": [(0, v)]}, name="exp", config=config, tags=tags)
    got = run_claims(lab, claim("cfg"))["cfg"]
    check = next(c for c in got.checks if c.name == "no_test_selection")
    return [] if check.passed else check.detail.split("; ")


@pytest.mark.parametrize("depth", [8, 9])
def test_test_selection_is_found_eight_mappings_deep_and_no_deeper(lab: Lab, depth: int) -> None:
    marks = _marks(lab, _nested(depth))
    if depth == 8:
        path = ".".join(f"level{i}" for i in range(1, 9)) + ".early_stopping"
        assert marks == [f"config {path}=test on 8 runs (exp-0, exp-1, exp-2, ...)"], marks
    else:
        assert marks == [], marks


@pytest.mark.parametrize("lists", [7, 8])
def test_a_list_counts_as_a_level_of_the_eight(lab: Lab, lists: int) -> None:
    """Lists nested in a config are levels as mappings are: the mapping that names the test
    split, inside 7 lists under ``a`` (its ninth level), is found, inside 8 it is not."""
    inner: Any = {"early_stopping": "test"}
    for _ in range(lists):
        inner = [inner]
    marks = _marks(lab, {"a": inner})
    if lists == 7:
        path = "a" + "[0]" * 7 + ".early_stopping"
        assert marks == [f"config {path}=test on 8 runs (exp-0, exp-1, exp-2, ...)"], marks
    else:
        assert marks == [], marks


@pytest.mark.parametrize("at", [999, 1000])
def test_a_list_is_searched_to_its_thousandth_item(lab: Lab, at: int) -> None:
    items: list[Any] = [{"name": f"cb{i}"} for i in range(1001)]
    items[at] = {"name": "stopper", "selection_split": "test"}
    marks = _marks(lab, {"callbacks": items})
    if at < 1000:
        assert marks == [
            f"config callbacks[{at}].selection_split=test on 8 runs (exp-0, exp-1, exp-2, ...)"
        ], marks
    else:
        assert marks == [], marks


@pytest.mark.parametrize(
    ("tags", "marked"),
    [
        ({"early_stopping": " Test "}, True),
        ({"early_stopping": "val"}, False),
        ({"split": "test"}, False),
    ],
)
def test_tags_mark_test_selection_only_under_a_selection_key_naming_test(
    lab: Lab, tags: dict[str, str], marked: bool
) -> None:
    marks = _marks(lab, None, tags)
    if marked:
        assert marks == ["tag early_stopping= Test  on 8 runs (exp-0, exp-1, exp-2, ...)"], marks
    else:
        assert marks == [], marks


def test_a_selected_run_and_its_value_cannot_be_changed_afterwards(lab: Lab) -> None:
    """The audit hands the same RecordedRun and RunValue to every claim: they are frozen."""
    import dataclasses

    from ledger.audit.select import RecordedRun, RunValue, load_runs

    lab.add("exp-0", {"test/acc": [(0, 1.0)]}, name="exp")
    (run,) = load_runs(lab.store)
    assert isinstance(run, RecordedRun)
    with pytest.raises(dataclasses.FrozenInstanceError):
        run.run_id = "another"  # type: ignore[misc]
    with pytest.raises(dataclasses.FrozenInstanceError):
        RunValue(1.0, 0).value = 2.0  # type: ignore[misc]


def test_an_unreadable_run_record_is_skipped_and_the_runs_after_it_are_audited(lab: Lab) -> None:
    """A `runs/` ref whose object is no run record (`ledger verify`'s business) sorts first:
    the audit leaves it out and still reads every run after it."""
    bad = lab.store.put_json({"kind": "note", "schema": 1, "text": "not a run"})
    lab.store.set_ref("runs/0-not-a-run", bad, op="seal", status="succeeded")
    lab.seeds("exp", SEEDS)
    got = run_claims(lab, claim("c"))["c"]
    assert got.verdict == "supported", got.reasons
    assert len(got.values) == 8 and "0-not-a-run" not in {e.run_id for e in got.runs}


def _three_steps(lab: Lab, metrics: dict[str, list[float]]) -> None:
    _add(lab, "r-00", {k: [("api", None, list(enumerate(v)))] for k, v in metrics.items()})


def _best(lab: Lab, **fields: str) -> Any:
    got = run_claims(lab, claim("c", spread=None, n_seeds=1, **fields))["c"]
    (e,) = got.runs
    return e


def test_a_best_val_claim_finds_the_series_spelled_valid(lab: Lab) -> None:
    """The selection series is the metric with its split word swapped, in whichever spelling
    the run recorded (val, valid, validation)."""
    _three_steps(lab, {"test/acc": [91.0, 92.0, 93.0], "valid/acc": [80.0, 85.0, 84.0]})
    e = _best(lab, value="92", checkpoint="best-val")
    assert (e.step, e.value, e.note) == (1, 92.0, "step 1: best valid/acc 85"), e


def test_only_the_first_split_word_of_a_metric_is_swapped(lab: Lab) -> None:
    _three_steps(
        lab,
        {
            "test_acc_at_best_val": [91.0, 92.0, 93.0],
            "val_acc_at_best_val": [80.0, 85.0, 84.0],
        },
    )
    e = _best(lab, metric="test_acc_at_best_val", value="92", checkpoint="best-val")
    assert (e.step, e.value) == (1, 92.0), e
    assert e.note == "step 1: best val_acc_at_best_val 85", e


@pytest.mark.parametrize("split", ["test", "val"])
def test_a_metric_without_a_split_word_selects_on_itself_for_its_own_split(
    lab: Lab, split: str
) -> None:
    """`accuracy`, claimed on the test split with checkpoint best-test, is its own selection
    series (the best step is its maximum); claimed on val, best-test has no series to use."""
    _three_steps(lab, {"accuracy": [91.0, 93.0, 92.0]})
    e = _best(lab, metric="accuracy", value="93", checkpoint="best-test", split=split)
    if split == "test":
        assert (e.step, e.value, e.note) == (1, 93.0, None), e
    else:
        assert e.value is None and e.note is not None, e
        assert "checkpoint best-test needs a selection series; 'none' is not recorded" in e.note


def test_a_selection_series_not_recorded_is_named_as_the_claim_would_spell_it(lab: Lab) -> None:
    _three_steps(lab, {"test_acc_at_best_val": [91.0, 92.0, 93.0]})
    e = _best(lab, metric="test_acc_at_best_val", value="92", checkpoint="best-val")
    assert e.value is None and e.note is not None, e
    assert "'val_acc_at_best_val' is not recorded (set selection_metric)" in e.note, e.note


@pytest.mark.parametrize("runs", ["{ids: [z-]}", "{tags: {arch: resnet}}"])
def test_runs_that_do_not_match_do_not_stop_the_selection(lab: Lab, runs: str) -> None:
    """Runs are read oldest id first: the ones a selector skips (another id, another tag)
    come before the ones it takes."""
    lab.seeds("a", SEEDS, tags={"arch": "vit"})
    lab.seeds("z", SEEDS, tags={"arch": "resnet"})
    got = run_claims(lab, claim("c", runs=runs))["c"]
    assert got.verdict == "supported", got.reasons
    assert {e.run_id for e in got.runs} == {f"z-{i:02d}" for i in range(8)}


def test_a_given_selection_metric_is_the_series_used(lab: Lab) -> None:
    _three_steps(lab, {"test/acc": [91.0, 92.0, 93.0], "dev/acc": [80.0, 85.0, 84.0]})
    e = _best(lab, value="92", checkpoint="best-val", selection_metric="dev/acc")
    assert (e.step, e.value, e.note) == (1, 92.0, "step 1: best dev/acc 85"), e


def test_a_run_without_the_metric_names_what_it_recorded(lab: Lab) -> None:
    _three_steps(lab, {"val/acc": [1.0, 2.0, 3.0], "test/loss": [3.0, 2.0, 1.0]})
    _add(lab, "r-01", {"test/acc": [("api", None, [(0, 91.0)])]})
    got = run_claims(lab, claim("c", value="91", spread=None, n_seeds=1))["c"]
    notes = {e.run_id: e.note for e in got.runs}
    assert notes["r-00"] == "no metric 'test/acc' (recorded: test/loss, val/acc)", notes


def test_an_empty_series_and_a_selection_without_a_finite_value_are_said(lab: Lab) -> None:
    nan = float("nan")
    _add(lab, "r-00", {"test/acc": [("api", None, [])], "val/acc": [("api", None, [(0, 1.0)])]})
    _add(
        lab,
        "r-01",
        {
            "test/acc": [("api", None, [(0, 92.0), (1, 92.0)])],
            "val/acc": [("api", None, [(0, nan), (1, nan)])],
        },
    )
    final = run_claims(lab, claim("f", value="92", spread=None, n_seeds=None))["f"]
    assert {e.run_id: e.note for e in final.runs}["r-00"] == "metric 'test/acc' has no values"
    best = run_claims(lab, claim("b", value="92", spread=None, checkpoint="best-val"))["b"]
    notes = {e.run_id: e.note for e in best.runs}
    assert notes["r-01"] == "selection series 'val/acc' has no finite value", notes


def test_a_metric_without_a_value_at_the_best_step_says_so(lab: Lab) -> None:
    _add(
        lab,
        "r-00",
        {
            "test/acc": [("api", None, [(0, 91.0), (2, 93.0)])],
            "val/acc": [("api", None, [(0, 80.0), (1, 85.0), (2, 84.0)])],
        },
    )
    e = _best(lab, value="92", checkpoint="best-val")
    assert (e.value, e.step) == (None, 1), e
    assert e.note == "test/acc has no value at step 1, where val/acc is best", e.note
