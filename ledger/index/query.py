"""``ls --where 'params.lr > 0.01' --columns name,metrics.loss.last``: filters and columns.

A filter is ``FIELD OP VALUE`` with OP one of ``= == != < <= > >=``. FIELD is a run field
(``name``, ``status``, ``exit_code``, ``started``, ``wall_seconds``...), ``params.<key>`` (the
flattened resolved config), ``metrics.<name>.<stat>`` (stat: first, last, min, max, count, best,
last_step), ``tags.<key>`` or ``job.<field>`` (the Slurm job the run was recorded in:
``job.job_id``, ``job.partition``, ``job.rendezvous.master_addr``...; the index holds no job
column, so every run is a candidate and its record decides). Numbers compare as numbers,
anything else as text.

The index answers the filter in SQL (fast, it picks the candidates); each candidate is then
checked again against the values read from its hashed record (``run_tables.run_values``), so an
edited index can hide a run but never show one that does not match.
"""

from __future__ import annotations

import re
from dataclasses import dataclass
from typing import Any

from ..errors import UsageError
from .tables import METRIC_STATS

__all__ = ["MAX_FILTERS", "Filter", "column_value", "parse_columns", "parse_where"]

MAX_FILTERS = 100

RUN_FIELDS = {
    "run_id": "run_id",
    "name": "name",
    "status": "status",
    "exit_code": "exit_code",
    "started": "started",
    "ended": "ended",
    "wall_seconds": "wall_seconds",
    "contract": "contract_digest",
    "replay_of": "replay_of",
}
_OPS = {"=": "=", "==": "=", "!=": "!=", "<": "<", "<=": "<=", ">": ">", ">=": ">="}
_WHERE = re.compile(r"^\s*(?P<field>[^\s=!<>]+)\s*(?P<op>==|!=|<=|>=|=|<|>)\s*(?P<value>.*?)\s*$")
_HINT = (
    "write FIELD OP VALUE, e.g. 'params.lr > 0.01', 'metrics.loss.last <= 0.5', "
    "'tags.dataset = cifar10', 'status != failed'"
)


def _number(text: Any) -> float | None:
    if isinstance(text, bool) or text is None:
        return None
    if isinstance(text, int | float):
        return float(text)
    try:
        return float(str(text))
    except ValueError:
        return None


def _check_field(field: str, what: str) -> None:
    if field in RUN_FIELDS:
        return
    head, _, rest = field.partition(".")
    if head in ("params", "tags", "job") and rest:
        return
    if head == "metrics" and "." in rest:
        name, _, stat = rest.rpartition(".")
        if name and stat in METRIC_STATS:
            return
        raise UsageError(
            f"{what} {field!r}: a metric field ends in one of {', '.join(METRIC_STATS)}",
            hint="e.g. metrics.train/loss.last",
        )
    raise UsageError(
        f"{what} {field!r} is not a field",
        hint="fields: "
        + ", ".join(RUN_FIELDS)
        + ", params.KEY, metrics.NAME.STAT, tags.KEY, job.FIELD",
    )


@dataclass(frozen=True)
class Filter:
    field: str
    op: str  # SQL operator
    value: str

    def sql(self) -> tuple[str, list[Any]]:
        """A condition on ``runs`` (aliased r) that the index answers."""
        num = _number(self.value)
        head, _, rest = self.field.partition(".")
        if self.field == "name":  # the recorded name, or the one ``ledger rename`` gave
            return (
                f"(r.name {self.op} ? OR r.run_id IN "
                f"(SELECT run_id FROM curation WHERE name {self.op} ?))",
                [self.value, self.value],
            )
        if self.field in RUN_FIELDS:
            col = RUN_FIELDS[self.field]
            return f"r.{col} {self.op} ?", [num if num is not None else self.value]
        if head == "params":
            col = "num" if num is not None else "value"
            return (
                f"r.run_id IN (SELECT run_id FROM params WHERE key = ? AND {col} {self.op} ?)",
                [rest, num if num is not None else self.value],
            )
        if head == "job":  # not in the index: the record's values decide (``matches``)
            return "1 = 1", []
        if head == "tags":  # recorded with the run, or given by ``ledger tag``
            return (
                f"(r.run_id IN (SELECT run_id FROM tags WHERE key = ? AND value {self.op} ?) "
                f"OR r.run_id IN (SELECT run_id FROM curated_tags WHERE key = ? "
                f"AND value {self.op} ?))",
                [rest, self.value, rest, self.value],
            )
        name, _, stat = rest.rpartition(".")
        return (
            f"r.run_id IN (SELECT run_id FROM metrics WHERE name = ? AND main = 1 "
            f"AND {stat} {self.op} ?)",
            [name, num if num is not None else self.value],
        )

    def matches(self, values: dict[str, Any]) -> bool:
        """The same test on the values read from a record."""
        if self.field not in values or values[self.field] is None:
            return False
        have = values[self.field]
        want_num, have_num = _number(self.value), _number(have)
        if want_num is not None and have_num is not None and not isinstance(have, str | bool):
            a: Any = have_num
            b: Any = want_num
        else:
            a = have if isinstance(have, str) else _text(have)
            b = self.value
        return bool(
            {
                "=": a == b,
                "!=": a != b,
                "<": a < b,
                "<=": a <= b,
                ">": a > b,
                ">=": a >= b,
            }[self.op]
        )


def _text(value: Any) -> str:
    import json

    return json.dumps(value) if not isinstance(value, str) else value


def parse_where(texts: list[str]) -> list[Filter]:
    if len(texts) > MAX_FILTERS:
        # Each filter is a join and a test in one SQL expression: SQLite refuses a tree deeper
        # than 1,000, and no one reads a query of hundreds of filters.
        raise UsageError(
            f"{len(texts)} --where filters given; at most {MAX_FILTERS} are taken",
            hint="narrow the runs with fewer filters (--name, --status, --tag also filter)",
        )
    out = []
    for text in texts:
        m = _WHERE.match(text)
        if m is None or not m.group("value"):
            raise UsageError(f"--where {text!r} is not FIELD OP VALUE", hint=_HINT)
        value = m.group("value")
        if len(value) >= 2 and value[0] == value[-1] and value[0] in "'\"":
            value = value[1:-1]
        _check_field(m.group("field"), "--where field")
        out.append(Filter(m.group("field"), _OPS[m.group("op")], value))
    return out


def parse_columns(text: str | None) -> list[str] | None:
    if text is None:
        return None
    cols = [c.strip() for c in text.split(",") if c.strip()]
    if not cols:
        raise UsageError("--columns is empty", hint="e.g. --columns name,metrics.loss.last")
    for c in cols:
        _check_field(c, "--columns")
    return cols


def column_value(values: dict[str, Any], column: str) -> Any:
    return values.get(column)
