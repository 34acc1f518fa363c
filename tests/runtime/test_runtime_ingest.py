"""collect_runtime: per-rank series, the sample-weighted combined series, and damaged input."""

from __future__ import annotations

import json
from collections.abc import Iterator
from pathlib import Path

import pytest

from ledger.records.metrics import MetricSeries, MetricSummary
from ledger.runtime import RankInfo, Run, _warn, set_current_run
from ledger.runtime.ingest import collect_runtime
from ledger.store import Store


@pytest.fixture(autouse=True)
def fresh(monkeypatch: pytest.MonkeyPatch) -> Iterator[None]:
    for k in ("LEDGER_RUN_DIR", "LEDGER_RUN_ID", "LEDGER_SEED_ROOT", "RANK", "WORLD_SIZE"):
        monkeypatch.delenv(k, raising=False)
    _warn.reset_warnings()
    set_current_run(None)
    yield
    set_current_run(None)


def _series(
    store: Store, cap_metrics: list[MetricSummary], name: str, source: str, rank: int | None
) -> MetricSeries:
    (s,) = [m for m in cap_metrics if m.name == name and m.source == source and m.rank == rank]
    return MetricSeries.model_validate(store.get_json(s.series))


def test_combined_series_is_weighted_by_real_sample_counts(tmp_path: Path, store: Store) -> None:
    r0 = Run(run_dir=tmp_path, rank=RankInfo(0, 0, 2))
    r1 = Run(run_dir=tmp_path, rank=RankInfo(1, 1, 2))
    # rank 0: batches of 3, rank 1: batches of 1 (an uneven last shard)
    r0.log(step=0, samples=3, n=3, loss=1.0)
    r1.log(step=0, samples=1, n=1, loss=5.0)
    r0.log(step=1, samples=6, n=3, loss=2.0)
    r1.log(step=1, samples=2, n=1, loss=4.0)
    r0.log(step=2, samples=9, loss=0.5)  # rank 1 missed step 2; n from samples growth: 3
    r1.log(step=3, samples=4, loss=1.0)  # n from samples growth: 2 (rank 1 skipped 3)
    r0.log(step=3, samples=12, loss=2.0)
    r0.close()
    r1.close()
    cap = collect_runtime(tmp_path, store)
    assert cap.ranks == [0, 1] and cap.world_size == 2
    combined = _series(store, cap.metrics, "loss", "combined", None)
    assert combined.step == [0, 1, 2, 3]
    # Σ v·n / Σ n, by hand; a mean of means would give 3.0, 3.0, 0.5, 1.5
    assert combined.value == [
        (1.0 * 3 + 5.0 * 1) / 4,
        (2.0 * 3 + 4.0 * 1) / 4,
        0.5,
        (2.0 * 3 + 1.0 * 2) / 5,
    ]
    assert combined.samples == [4, 8, 9, 16]
    per_rank = _series(store, cap.metrics, "loss", "api", 1)
    assert per_rank.value == [5.0, 4.0, 1.0] and per_rank.rank == 1


def test_unweighted_points_are_combined_by_plain_mean_and_noted(
    tmp_path: Path, store: Store
) -> None:
    for r, v in ((0, 1.0), (1, 3.0)):
        run = Run(run_dir=tmp_path, rank=RankInfo(r, r, 2))
        run.log(step=0, acc=v)
        run.close()
    cap = collect_runtime(tmp_path, store)
    assert _series(store, cap.metrics, "acc", "combined", None).value == [2.0]
    assert any("combined unweighted" in n for n in cap.notes)


def test_wall_axis_starts_at_the_earliest_process(tmp_path: Path, store: Store) -> None:
    run = Run(run_dir=tmp_path, rank=RankInfo())
    run.log(step=0, loss=1.0)
    run.close()
    cap = collect_runtime(tmp_path, store, started_at=run.started_at - 10.0)
    (wall,) = _series(store, cap.metrics, "loss", "api", None).wall
    assert wall is not None and 10.0 <= wall < 11.0


def test_damaged_staging_dir_gives_notes_not_exceptions(tmp_path: Path, store: Store) -> None:
    run = Run(run_dir=tmp_path, rank=RankInfo())
    run.log(step=0, loss=1.0)
    run.close()
    metrics = tmp_path / "metrics" / "rank-0.jsonl"
    with metrics.open("ab") as f:
        f.write(
            b"not json\n[1,2]\n"
            + json.dumps({"t": 1, "s": 1, "v": {"loss": "x", "\x07": 1}}).encode()
            + b"\n"
        )
    (tmp_path / "metrics" / "stray.txt").write_text("hello")
    (tmp_path / "rng").mkdir()
    (tmp_path / "rng" / ".rank-0-x.json.123.tmp").write_text("{")
    (tmp_path / "rng" / "rank-0-bad.json").write_text('{"state": {"python": 3}}')
    (tmp_path / "seeds").mkdir()
    (tmp_path / "seeds" / "rank-0.json").write_text("{")
    (tmp_path / "determinism").mkdir()
    (tmp_path / "determinism" / "rank-0.json").write_text('{"rank": 0}')
    (tmp_path / "alerts").mkdir()
    (tmp_path / "alerts" / "rank-0.jsonl").write_text(
        '{"kind": 1}\n{"rank": 0, "kind": "nonfinite-loss", "step": 4, "message": "m"}\n'
    )
    cap = collect_runtime(tmp_path, store)
    assert cap.metrics[0].count == 1
    assert [a.step for a in cap.alerts] == [4]
    text = "\n".join(cap.notes)
    for expected in (
        "unreadable line",
        "not an object",
        "2 metric values",
        "stray.txt",
        "unfinished temp",
        "rng/rank-0-bad.json: invalid",
        "seeds/rank-0.json: unreadable",
        "determinism/rank-0.json",
        "an invalid alert",
    ):
        assert expected in text, expected


def test_empty_staging_dir(tmp_path: Path, store: Store) -> None:
    cap = collect_runtime(tmp_path, store)
    assert cap.ranks == [] and cap.metrics == [] and cap.notes == []


def test_a_flood_of_damaged_lines_is_counted_not_copied_into_the_notes(
    tmp_path: Path, store: Store
) -> None:
    """A metrics file with 100,000 junk lines (a program writing into ledger's staging file, a
    disk filled with garbage) still gives its points, names the first ten damaged lines, and
    counts the rest in one note, instead of copying one note per line into the run record."""
    run = Run(run_dir=tmp_path, rank=RankInfo())
    run.log(step=0, loss=1.0)
    run.close()
    metrics = tmp_path / "metrics" / "rank-0.jsonl"
    with metrics.open("ab") as f:
        f.write(b"[1]\n" + b"junk\n" * 99_999)
    cap = collect_runtime(tmp_path, store)
    assert cap.metrics[0].count == 1
    mine = [n for n in cap.notes if n.startswith("metrics/rank-0.jsonl")]
    assert len(mine) == 11, mine[:3]
    assert "not an object" in mine[0] and all("unreadable line" in n for n in mine[1:10])
    first_counted = int(mine[9].split(":")[1]) + 1
    assert mine[10] == (
        f"metrics/rank-0.jsonl: skipped 99990 more lines"
        f" (lines {first_counted}-{first_counted + 99_989})"
    )
