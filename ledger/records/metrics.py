"""Metric series: one record per (metric, source, rank), columns of equal length.

x-axes: ``step`` (training step, or the match count for stdout metrics without a step group),
``samples`` (samples or tokens seen, when known) and ``wall`` (seconds since the run started).
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Literal

from pydantic import BaseModel, ConfigDict, model_validator

from .base import JsonFloat, Oid, Record
from .plain import series_columns, summary_fields

__all__ = ["MetricPoint", "MetricSeries", "MetricSummary", "build_series", "summarize"]

Source = Literal["api", "stdout", "tensorboard", "combined"]


class MetricSeries(Record):
    KIND = "metric-series"
    SCHEMA = 1

    kind: Literal["metric-series"] = "metric-series"
    name: str
    source: Source
    rank: int | None = None  # None: single process, or combined over ranks
    step: list[int | None]
    samples: list[int | None]
    wall: list[float | None]
    value: list[JsonFloat]

    @model_validator(mode="after")
    def _same_length(self) -> MetricSeries:
        n = len(self.value)
        if not (len(self.step) == len(self.samples) == len(self.wall) == n):
            raise ValueError("metric series columns must have equal lengths")
        return self


class MetricSummary(BaseModel):
    """What a run record says about one series, without loading it."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    name: str
    source: Source
    rank: int | None = None
    series: Oid
    count: int
    last: JsonFloat | None = None
    last_step: int | None = None
    last_finite: float | None = None
    last_finite_step: int | None = None
    first_nonfinite_step: int | None = None
    nonfinite_count: int = 0
    min: float | None = None
    max: float | None = None


MetricPoint = tuple[int | None, int | None, float | None, float]  # step, samples, wall, value


def build_series(
    name: str, source: Source, points: Iterable[MetricPoint], rank: int | None = None
) -> MetricSeries:
    steps, samples, wall, values = series_columns(points)
    return MetricSeries(
        name=name, source=source, rank=rank, step=steps, samples=samples, wall=wall, value=values
    )


def summarize(series: MetricSeries, oid: str) -> MetricSummary:
    return MetricSummary(
        name=series.name,
        source=series.source,
        rank=series.rank,
        series=oid,
        **summary_fields(series.step, series.value),
    )
