"""Reading a claims file with line numbers, so every mistake points at FILE:LINE and a field.

A broken file as a whole (YAML syntax, no ``claims`` list, unknown top-level keys) raises
``UsageError``. A broken claim does not: it comes back with its problems, so the other claims
are still judged.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import yaml
from pydantic import ValidationError

from .._parse import LimitError, ParseError, load_yaml_node, read_bounded
from ..errors import UsageError
from ..records.audit import ClaimProblem
from .claims import Claim, ComparisonClaim, RunSelector

__all__ = ["LoadedClaim", "LoadedClaims", "load_claims", "parse_claims"]

Loc = tuple[str | int, ...]
_TOP_KEYS = {"version", "paper", "methods", "claims"}
_KINDS: dict[str, type[Claim] | type[ComparisonClaim]] = {
    "value": Claim,
    "comparison": ComparisonClaim,
}
# A claims file is a few hundred nodes; aliases may repeat a selector, not expand a file into
# millions of nodes ("billion laughs"): ``ledger._parse`` counts each alias as what it repeats.
_MAX_NODES = 100_000
_MAX_BYTES = 16 * 2**20
_PLAIN_DECIMAL = re.compile(r"^[+-]?(\d+)(?:\.(\d*))?$")


@dataclass(frozen=True)
class LoadedClaim:
    index: int
    id: str
    line: int | None
    claim: Claim | ComparisonClaim | None  # None when the claim did not validate
    problems: tuple[ClaimProblem, ...]
    raw: Any


@dataclass(frozen=True)
class LoadedClaims:
    path: str
    raw: bytes
    paper: str | None
    claims: tuple[LoadedClaim, ...]
    methods: dict[str, RunSelector] = field(default_factory=dict)

    @property
    def problems(self) -> list[ClaimProblem]:
        return [p for c in self.claims for p in c.problems]


def load_claims(path: str | Path) -> LoadedClaims:
    p = Path(path)
    try:
        raw = read_bounded(p, _MAX_BYTES)
    except LimitError as e:
        raise UsageError(
            f"claims file {p} {e.message}", hint="a claims file is a few kilobytes of YAML"
        ) from None
    except OSError as e:
        raise UsageError(
            f"cannot read claims file {p}: {e.strerror or e}",
            hint="give the path of a YAML claims file (see docs/how-to/audit-claims.md)",
        ) from None
    return parse_claims(raw, str(p))


def parse_claims(raw: bytes, name: str = "<claims>") -> LoadedClaims:
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError as e:
        raise UsageError(f"{name}: not UTF-8 text (byte {e.start})") from None
    node, data = _compose(text, name)
    lines: dict[Loc, tuple[int, int]] = {}
    dupes: dict[Loc, tuple[int, str]] = {}
    if node is not None:
        _walk(node, (), lines, dupes)
    if not isinstance(data, dict):
        raise UsageError(
            f"{name}:1: the claims file must be a mapping with a `claims:` list",
            hint="start the file with `claims:` followed by `- metric: ...` items",
        )
    top_dupes = [d for loc, d in dupes.items() if len(loc) == 1 or loc[0] == "methods"]
    unknown = sorted(str(k) for k in data if k not in _TOP_KEYS)
    if top_dupes or unknown:
        line, first = (
            top_dupes[0]
            if top_dupes
            else (
                _line(lines, (unknown[0],)),
                f"unknown top-level key {unknown[0]!r}",
            )
        )
        raise UsageError(
            f"{name}:{line}: {first}",
            hint="each key appears once; the top level holds only version, paper, methods "
            "and claims",
        )
    claims = data.get("claims")
    if not isinstance(claims, list) or not claims:
        raise UsageError(
            f"{name}:{_line(lines, ('claims',))}: `claims` must be a non-empty list of claims"
        )
    paper = data.get("paper")
    if paper is not None and not isinstance(paper, str):
        raise UsageError(f"{name}:{_line(lines, ('paper',))}: `paper` must be a string")
    if data.get("version", 1) != 1:
        raise UsageError(
            f"{name}:{_line(lines, ('version',))}: unsupported claims file version "
            f"{data.get('version')!r}",
            hint="this ledger reads version 1",
        )
    methods = _methods(data.get("methods"), name, lines)
    loaded: list[LoadedClaim] = []
    seen: dict[str, int] = {}
    for i, item in enumerate(claims):
        one = _load_one(i, item, paper, node, lines, dupes, methods)
        if one.id in seen:
            problem = ClaimProblem(
                line=_line_or_none(lines, ("claims", i, "id")) or one.line,
                field="id",
                message=f"duplicate claim id {one.id!r} (first used by claim {seen[one.id] + 1})",
            )
            one = LoadedClaim(one.index, one.id, one.line, None, (*one.problems, problem), item)
        seen.setdefault(one.id, i)
        loaded.append(one)
    return LoadedClaims(path=name, raw=raw, paper=paper, claims=tuple(loaded), methods=methods)


def _methods(value: Any, name: str, lines: dict[Loc, tuple[int, int]]) -> dict[str, RunSelector]:
    """The top-level ``methods``: method name -> run selector. A mistake here breaks the file."""
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise UsageError(
            f"{name}:{_line(lines, ('methods',))}: `methods` must be a mapping of method names "
            "to run selectors",
            hint="e.g. methods: {ours: {names: [ours-*]}, ppo: {tags: {algo: ppo}}}",
        )
    out: dict[str, RunSelector] = {}
    for key, selector in value.items():
        try:
            out[str(key)] = RunSelector.model_validate(selector)
        except ValidationError as e:
            err = e.errors(include_url=False)[0]
            loc: Loc = ("methods", str(key), *err["loc"])
            where = ".".join(str(p) for p in loc)
            raise UsageError(
                f"{name}:{_line(lines, loc)}: {where}: {_message(err, loc)}",
                hint="a method is a run selector: ids, names, tags, contract, include_replays",
            ) from None
    return out


def _compose(text: str, name: str) -> tuple[yaml.Node | None, Any]:
    try:
        return load_yaml_node(text, max_nodes=_MAX_NODES)
    except LimitError as e:
        raise UsageError(
            f"{name}{e.where}: the claims file {e.message}",
            hint="write the claims out, or use an alias only for a small repeated part",
        ) from None
    except ParseError as e:
        raise UsageError(
            f"{name}{e.where or ':1'}: malformed YAML: {e.message}",
            hint="fix the YAML syntax; every claim is a `- key: value` item under `claims:`",
        ) from None


def _walk(
    node: yaml.Node,
    loc: Loc,
    lines: dict[Loc, tuple[int, int]],
    dupes: dict[Loc, tuple[int, str]],
) -> None:
    """Record where every mapping key and sequence item starts; note duplicate keys."""
    lines.setdefault(loc, (node.start_mark.line + 1, node.start_mark.column + 1))
    if isinstance(node, yaml.MappingNode):
        for key_node, value_node in node.value:
            key = str(key_node.value)
            sub = (*loc, key)
            if sub in lines:
                message = f"duplicate key {key!r} (first at line {lines[sub][0]})"
                dupes.setdefault(sub, (key_node.start_mark.line + 1, message))
                continue
            lines[sub] = (key_node.start_mark.line + 1, key_node.start_mark.column + 1)
            _walk(value_node, sub, lines, dupes)
    elif isinstance(node, yaml.SequenceNode):
        for i, item in enumerate(node.value):
            _walk(item, (*loc, i), lines, dupes)


def _line_or_none(lines: dict[Loc, tuple[int, int]], loc: Loc) -> int | None:
    """Line of ``loc`` or of its nearest enclosing node that exists in the file."""
    for k in range(len(loc), -1, -1):
        hit = lines.get(loc[:k])
        if hit is not None:
            return hit[0]
    return None


def _line(lines: dict[Loc, tuple[int, int]], loc: Loc) -> int:
    return _line_or_none(lines, loc) or 1


def _value_text(root: yaml.Node | None, loc: Loc) -> str | None:
    """The literal text of a scalar, e.g. "93.10" — YAML's float would drop the trailing 0."""
    node = root
    for part in loc:
        if isinstance(node, yaml.MappingNode) and isinstance(part, str):
            node = next((v for k, v in node.value if k.value == part), None)
        elif isinstance(node, yaml.SequenceNode) and isinstance(part, int):
            node = node.value[part] if part < len(node.value) else None
        else:
            return None
    return str(node.value) if isinstance(node, yaml.ScalarNode) else None


def _load_one(
    i: int,
    item: Any,
    paper: str | None,
    root: yaml.Node | None,
    lines: dict[Loc, tuple[int, int]],
    dupes: dict[Loc, tuple[int, str]],
    methods: dict[str, RunSelector] | None = None,
) -> LoadedClaim:
    base: Loc = ("claims", i)
    line = _line_or_none(lines, base)
    if not isinstance(item, dict):
        problem = ClaimProblem(line=line, field="", message="a claim must be a mapping of fields")
        return LoadedClaim(i, f"claim-{i + 1}", line, None, (problem,), item)
    claim_id = str(item.get("id") or f"claim-{i + 1}")
    problems = [
        ClaimProblem(line=line_no, field=".".join(map(str, loc[2:])), message=msg)
        for loc, (line_no, msg) in dupes.items()
        if loc[:2] == base and len(loc) > 2
    ]
    data = dict(item)
    data.setdefault("id", claim_id)
    kind = data.get("kind", "value")
    model = _KINDS.get(kind) if isinstance(kind, str) else None
    if model is None:
        problems.append(
            ClaimProblem(
                line=_line_or_none(lines, (*base, "kind")),
                field="kind",
                message=f"unknown claim kind {kind!r}: use value (the default) or comparison",
            )
        )
        return LoadedClaim(i, claim_id, line, None, tuple(problems), item)
    if model is Claim and "kind" not in data and {"a", "b"} & set(data):
        problems.append(
            ClaimProblem(
                line=line,
                field="kind",
                message="a and b name methods of a comparative claim: add `kind: comparison`",
            )
        )
    if model is Claim and "decimals" not in data:
        data.update(_claim_decimals(data, root, base))
    if model is ComparisonClaim and "difference_decimals" not in data and "difference" in data:
        digits = _decimals_of(_value_text(root, (*base, "difference")))
        if digits is not None:
            data["difference_decimals"] = digits
    if paper is not None:
        source = data.get("source")
        if source is None:
            data["source"] = {"paper": paper}
        elif isinstance(source, dict):
            data["source"] = {"paper": paper, **source}
    claim: Claim | ComparisonClaim | None = None
    try:
        claim = model.model_validate(data)
    except ValidationError as e:
        found = _problems(e, base, lines)
        if any(p.field == "value" for p in found):  # decimals could not be read off a bad value
            found = [p for p in found if p.field != "decimals"]
        problems.extend(found)
    if isinstance(claim, ComparisonClaim):
        problems.extend(_unknown_methods(claim, methods or {}, base, lines))
    if problems:
        claim = None
    return LoadedClaim(i, claim_id, line, claim, tuple(problems), item)


def _unknown_methods(
    claim: ComparisonClaim,
    methods: dict[str, RunSelector],
    base: Loc,
    lines: dict[Loc, tuple[int, int]],
) -> list[ClaimProblem]:
    defined = ", ".join(sorted(methods)) or "none (add a top-level `methods:` mapping)"
    return [
        ClaimProblem(
            line=_line_or_none(lines, (*base, side)),
            field=side,
            message=f"unknown method {name!r}; methods defined: {defined}",
        )
        for side, name in (("a", claim.a), ("b", claim.b))
        if name not in methods
    ]


def _claim_decimals(data: dict[str, Any], root: yaml.Node | None, base: Loc) -> dict[str, int]:
    """``{"decimals": d}`` read off the number as written: a value's digits are its rounding;
    a bound is exact, its digits only show it (0 if unreadable, e.g. ``3e0``). A claim with
    neither gets 0, so that the missing value is what its problem names. Empty when a value
    is written in a form whose digits cannot be read (its own problem, or ``decimals:``)."""
    if "value" in data:
        digits = _decimals_of(_value_text(root, (*base, "value")))
        return {} if digits is None else {"decimals": digits}
    for side in ("below", "above"):
        if side in data:
            return {"decimals": _decimals_of(_value_text(root, (*base, side))) or 0}
    return {"decimals": 0}


def _decimals_of(text: str | None) -> int | None:
    if text is None:
        return None
    m = _PLAIN_DECIMAL.match(text.strip())
    if m is None:
        return None
    # Digits past the 12th are below what the claims' rounding resolves (decimals <= 12): a
    # value written with more is read at 12, not refused for a field its author never wrote.
    return min(len(m.group(2) or ""), 12)


def _problems(
    error: ValidationError, base: Loc, lines: dict[Loc, tuple[int, int]]
) -> list[ClaimProblem]:
    out = []
    for err in error.errors(include_url=False):
        loc: Loc = tuple(err["loc"])
        field = ".".join(str(p) for p in loc)
        message = _message(err, loc)
        out.append(
            ClaimProblem(line=_line_or_none(lines, (*base, *loc)), field=field, message=message)
        )
    return out


def _message(err: Any, loc: Sequence[str | int]) -> str:
    kind = err.get("type", "")
    field = str(loc[-1]) if loc else "claim"
    if kind == "missing":
        if field == "decimals":
            return "decimals is missing and cannot be read off `value`; add `decimals:`"
        return f"required field {field!r} is missing"
    if kind == "extra_forbidden":
        return f"unknown field {field!r}"
    msg = str(err.get("msg", "invalid value"))
    msg = msg.removeprefix("Value error, ")
    if "input" in err and kind not in {"model_type", "dict_type"}:
        return f"{msg} (got {err['input']!r})"
    return msg
