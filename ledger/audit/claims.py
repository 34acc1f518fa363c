"""The claims file: what a paper says, in a form ``ledger audit`` can check.

Validation is per claim so that one mistake does not hide the verdicts of the others.
Fields a paper may simply not state (``n_seeds``, ``spread``, ``split``) are optional here on
purpose: a claim that lacks them is judged *not reproducible*, which is a finding, not a typo.
"""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Annotated, Any, Literal

from pydantic import BaseModel, ConfigDict, Discriminator, Field, Tag, model_validator

__all__ = [
    "AnyClaim",
    "Claim",
    "ClaimSource",
    "ClaimsFile",
    "ComparisonClaim",
    "RunSelector",
    "claims_json_schema",
    "write_claims_schema",
]

SpreadType = Literal["std", "sem", "ci", "range", "unspecified"]
Aggregate = Literal["mean", "median", "iqm", "max"]
Split = Literal["val", "test"]
Checkpoint = Literal["final", "best-val", "best-test"]
Direction = Literal["better", "worse"]

_STRICT = ConfigDict(extra="forbid", frozen=True)


class RunSelector(BaseModel):
    """Which recorded runs stand behind a claim. Criteria combine with AND; list entries with OR."""

    model_config = _STRICT

    ids: list[str] = Field(default_factory=list, description="Run ids or unique id prefixes.")
    names: list[str] = Field(
        default_factory=list, description="Run names; shell wildcards (*, ?) allowed."
    )
    tags: dict[str, str] = Field(default_factory=dict, description="Every tag must match.")
    contract: str | None = Field(None, description="Prefix of the runs' contract digest.")
    include_replays: bool = Field(
        False, description="Also use runs that replay another run (off: replays are not seeds)."
    )

    @model_validator(mode="after")
    def _not_everything(self) -> RunSelector:
        if not (self.ids or self.names or self.tags or self.contract):
            raise ValueError("give at least one of ids, names, tags, contract")
        return self

    def describe(self) -> str:
        parts = []
        if self.ids:
            parts.append("ids " + ", ".join(self.ids))
        if self.names:
            parts.append("names " + ", ".join(self.names))
        if self.tags:
            parts.append("tags " + ", ".join(f"{k}={v}" for k, v in self.tags.items()))
        if self.contract:
            parts.append(f"contract {self.contract}")
        return "; ".join(parts)


class ClaimSource(BaseModel):
    model_config = _STRICT

    paper: str | None = None
    table: str | None = None
    row: str | None = None

    def describe(self) -> str:
        return ", ".join(f"{k} {v}" for k, v in self.model_dump().items() if v is not None)


class Claim(BaseModel):
    """One reported number, e.g. "93.1 ± 0.2 top-1 (std over 5 seeds)"."""

    model_config = _STRICT

    id: str = Field(description="Short unique name; defaults to claim-<position>.")
    kind: Literal["value"] = Field("value", description="A reported number (the default).")
    metric: str = Field(description="Name of the recorded metric series holding the number.")
    higher_is_better: bool = True
    value: float | None = Field(
        None, description="The number as printed in the paper (or give `below` / `above`)."
    )
    below: float | None = Field(
        None, description="A bound claim: the value is below this (strictly), e.g. loss < 3.0."
    )
    above: float | None = Field(
        None, description="A bound claim: the value is above this (strictly), e.g. acc > 90."
    )
    decimals: int = Field(
        ge=0,
        le=12,
        description="Digits after the point as printed; inferred from `value` when omitted.",
    )
    spread: float | None = Field(None, ge=0, description="The number after ±, if any.")
    spread_type: SpreadType | None = Field(
        None, description="What ± means; `unspecified` if the paper does not say."
    )
    level: float = Field(0.95, gt=0, lt=1, description="Coverage of a `ci` spread.")
    spread_decimals: int | None = Field(None, ge=0, le=12)
    n_seeds: int | None = Field(None, ge=1, description="Number of runs the paper averaged.")
    aggregate: Aggregate = "mean"
    split: Split | None = Field(None, description="Split the number is measured on.")
    checkpoint: Checkpoint = Field("final", description="Which checkpoint the number is from.")
    selection_metric: str | None = Field(
        None, description="Series that picks the best checkpoint (default: metric on that split)."
    )
    varied_sources: list[str] = Field(
        default_factory=list, description="What varied between runs: seed, data order, init..."
    )
    runs: RunSelector
    source: ClaimSource = Field(default_factory=ClaimSource)
    margin: float | None = Field(
        None, gt=0, description="Equivalence margin in metric units (default: the claimed sd)."
    )
    require_gate: bool = Field(
        False,
        description="Every run's latest checkpoint must have a passing `ledger gate` record.",
    )

    @model_validator(mode="after")
    def _spread_needs_type(self) -> Claim:
        given = [k for k in ("value", "below", "above") if getattr(self, k) is not None]
        if len(given) != 1:
            raise ValueError(
                "give exactly one of value (a number as printed), below or above (a bound), "
                f"got {', '.join(given) or 'none'}"
            )
        if self.bound is not None and (self.spread is not None or self.margin is not None):
            raise ValueError(
                f"`{given[0]}` makes a bound claim, which takes no spread and no margin "
                "(the runs' own spread decides; see docs/how-to/audit-claims.md)"
            )
        if self.spread is not None and self.spread_type is None:
            raise ValueError(
                "spread is given without spread_type; say std, sem, ci, range, or "
                "unspecified if the paper does not say"
            )
        return self

    @property
    def bound(self) -> tuple[Literal["below", "above"], float] | None:
        """``("below", 3.0)`` for a bound claim, None for a value claim."""
        if self.below is not None:
            return ("below", self.below)
        if self.above is not None:
            return ("above", self.above)
        return None


class ComparisonClaim(BaseModel):
    """One comparative statement, e.g. "ours beats PPO" or "ours is 1.5 points above PPO"."""

    model_config = _STRICT

    id: str = Field(description="Short unique name; defaults to claim-<position>.")
    kind: Literal["comparison"]
    metric: str = Field(description="Name of the recorded metric series compared.")
    higher_is_better: bool = True
    a: str = Field(description="The method claimed better (or worse): a key of `methods`.")
    b: str = Field(description="The method it is compared with: a key of `methods`.")
    direction: Direction = Field(
        "better", description="`better`: a beats b (per higher_is_better); `worse`: b beats a."
    )
    difference: float | None = Field(
        None, description="Claimed mean(a) - mean(b) in metric units, as printed (signed)."
    )
    difference_decimals: int | None = Field(
        None, ge=0, le=12, description="Digits of `difference` as printed; read off it if omitted."
    )
    alpha: float = Field(0.05, gt=0, lt=0.5, description="Significance level of the test.")
    checkpoint: Checkpoint = Field("final", description="Which checkpoint each value is from.")
    selection_metric: str | None = Field(
        None, description="Series that picks the best checkpoint (default: metric on that split)."
    )
    split: Split | None = Field(None, description="Split the metric is measured on.")
    task_tag: str | None = Field(
        None, description="Run tag naming the task (game, dataset): makes a multi-task claim."
    )
    tasks: list[str] = Field(
        default_factory=list, description="Tasks to compare on (default: every task found)."
    )
    aggregate: Literal["iqm", "mean"] = Field(
        "iqm", description="Across tasks: interquartile mean (rliable) or mean of all runs."
    )
    normalize: dict[str, tuple[float, float]] = Field(
        default_factory=dict,
        description="Per task [low, high]: scores become (x - low) / (high - low).",
    )
    include_replays: bool = Field(
        False, description="Also use runs that replay another run (off: replays are not seeds)."
    )
    source: ClaimSource = Field(default_factory=ClaimSource)

    @model_validator(mode="after")
    def _consistent(self) -> ComparisonClaim:
        if self.a == self.b:
            raise ValueError(f"a and b name the same method {self.a!r}; compare two methods")
        if self.difference is not None and self.difference != 0:
            up = self.difference > 0
            claims_better = up == self.higher_is_better
            if claims_better != (self.direction == "better"):
                raise ValueError(
                    f"difference {self.difference:g} says {self.a} is "
                    f"{'better' if claims_better else 'worse'} than {self.b} "
                    f"(higher_is_better: {str(self.higher_is_better).lower()}), but direction "
                    f"is {self.direction}; difference is mean(a) - mean(b), signed"
                )
        if self.tasks and self.task_tag is None:
            raise ValueError("tasks are given without task_tag: name the run tag holding the task")
        if self.normalize and self.task_tag is None:
            raise ValueError("normalize is per task: give task_tag too")
        for task, (low, high) in self.normalize.items():
            # high - low must be finite too: an infinite range scales every score to 0.
            if not (high > low and math.isfinite(high - low)):
                raise ValueError(
                    f"normalize[{task}]: high must exceed low, both finite, got [{low}, {high}]"
                )
        return self


def _claim_kind(value: Any) -> str:
    if isinstance(value, dict):
        return str(value.get("kind", "value"))
    return str(getattr(value, "kind", "value"))


AnyClaim = Annotated[
    Annotated[Claim, Tag("value")] | Annotated[ComparisonClaim, Tag("comparison")],
    Discriminator(_claim_kind),
]


class ClaimsFile(BaseModel):
    """The whole file: an optional default paper, named methods, and the list of claims."""

    model_config = _STRICT

    version: Literal[1] = 1
    paper: str | None = Field(None, description="Default for every claim's source.paper.")
    methods: dict[str, RunSelector] = Field(
        default_factory=dict,
        description="Named run selections that comparison claims refer to as `a` and `b`.",
    )
    claims: list[AnyClaim] = Field(min_length=1)


def claims_json_schema() -> dict[str, Any]:
    """JSON Schema of the claims file (editors use it to complete and check claims.yaml)."""
    schema = ClaimsFile.model_json_schema()
    schema["$id"] = "https://ledger.invalid/schemas/claims.schema.json"
    schema["title"] = "ledger claims file"
    # `id` and `decimals` have defaults filled in by the loader, so authors may omit them.
    claim = schema["$defs"]["Claim"]
    claim["required"] = [r for r in claim.get("required", []) if r not in {"id", "decimals"}]
    # A number as printed, or a bound: exactly one (the model's validator says so too).
    claim["oneOf"] = [{"required": [k]} for k in ("value", "below", "above")]
    comparison = schema["$defs"]["ComparisonClaim"]
    comparison["required"] = [r for r in comparison.get("required", []) if r != "id"]
    return schema


def write_claims_schema(path: Path) -> Path:
    path.write_text(json.dumps(claims_json_schema(), indent=2, sort_keys=True) + "\n", "utf-8")
    return path
