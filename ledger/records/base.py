"""The base of every stored record: a kind, a schema version, canonical JSON, an id."""

from __future__ import annotations

import math
from datetime import datetime
from typing import Annotated, Any, ClassVar, TypeVar, overload

from pydantic import AfterValidator, BaseModel, BeforeValidator, ConfigDict, Field, PlainSerializer

from .._canonical import canonical_json, format_datetime
from .._hashing import OID_RE, hash_bytes
from .plain import json_float

__all__ = [
    "RECORD_TYPES",
    "JsonFloat",
    "Oid",
    "Record",
    "Timestamp",
    "record_from_json",
]


def _aware(value: datetime) -> datetime:
    if value.tzinfo is None:
        raise ValueError("timestamps must carry a timezone")
    return value


Timestamp = Annotated[
    datetime, AfterValidator(_aware), PlainSerializer(format_datetime, return_type=str)
]


def _check_oid(value: str) -> str:
    if not OID_RE.match(value):
        raise ValueError(f"{value!r} is not an object id (b3:<64 hex>)")
    return value


Oid = Annotated[str, AfterValidator(_check_oid)]

_SPECIAL = {"nan": math.nan, "inf": math.inf, "-inf": -math.inf}


def _float_in(value: Any) -> Any:
    if isinstance(value, str) and value in _SPECIAL:
        return _SPECIAL[value]
    return value


# A float that may be NaN or infinite: stored as "nan", "inf", "-inf" (canonical JSON has none).
JsonFloat = Annotated[float, BeforeValidator(_float_in), PlainSerializer(json_float)]

RECORD_TYPES: dict[str, type[Record]] = {}

R = TypeVar("R", bound="Record")


class Record(BaseModel):
    """Subclasses set ``KIND`` and ``SCHEMA`` and a ``kind: Literal[KIND]`` field."""

    # defer_build (here and on every part model): a model's validator and serializer are built
    # at its first use, not at import; building all ~60 cost every `ledger record` ~20 ms.
    model_config = ConfigDict(extra="forbid", frozen=True, populate_by_name=True, defer_build=True)

    KIND: ClassVar[str] = ""
    SCHEMA: ClassVar[int] = 1

    kind: str
    schema_version: int = Field(default=1, alias="schema", ge=1)

    def __init_subclass__(cls, **kwargs: Any) -> None:
        super().__init_subclass__(**kwargs)
        if cls.KIND:
            RECORD_TYPES[cls.KIND] = cls

    def to_json(self) -> dict[str, Any]:
        return self.model_dump(mode="json", by_alias=True)

    def canonical(self) -> bytes:
        return canonical_json(self.to_json())

    def digest(self) -> str:
        """The id this record gets when stored."""
        return hash_bytes(self.canonical())


def _load_kind(kind: str) -> type[Record] | None:
    """A kind whose module is not imported yet: every record module registers its kinds when
    imported, and ``ledger.records`` loads its names lazily (so that ``ledger record`` can run
    without pydantic), so a reader may meet a kind before anything imported its module."""
    import importlib
    import pkgutil
    from pathlib import Path

    for mod in pkgutil.iter_modules([str(Path(__file__).parent)]):
        if not mod.name.startswith("_"):
            importlib.import_module(f"{__package__}.{mod.name}")
    return RECORD_TYPES.get(kind)


@overload
def record_from_json(value: Any, expect: type[R]) -> R: ...
@overload
def record_from_json(value: Any, expect: None = None) -> Record: ...
def record_from_json(value: Any, expect: type[R] | None = None) -> Record:
    """Parse a stored record into its model, refusing schema versions newer than this code
    and, with ``expect``, a record of another kind (typed as ``expect``: no caller needs an
    ``isinstance`` check after it)."""
    from pydantic import ValidationError

    from ..errors import FormatVersionError, MalformedRecordError, UsageError

    if not isinstance(value, dict) or "kind" not in value:
        raise UsageError("not a ledger record: a JSON object with a 'kind' field was expected")
    kind = value["kind"]
    cls = RECORD_TYPES.get(kind) or _load_kind(kind)
    if cls is None:
        raise FormatVersionError(
            f"unknown record kind {kind!r}", hint="upgrade ledger to read records of this kind"
        )
    if expect is not None and not issubclass(cls, expect):
        raise UsageError(f"expected a {expect.KIND} record, found a {kind} record")
    version = value.get("schema", 1)
    if isinstance(version, int) and version > cls.SCHEMA:
        raise FormatVersionError(
            f"{kind} record has schema version {version}; this ledger reads up to {cls.SCHEMA}",
            hint="upgrade ledger to read it",
        )
    try:
        return cls.model_validate(value)
    except ValidationError as e:
        first = e.errors()[0]
        where = ".".join(str(p) for p in first["loc"]) or "(the record)"
        raise MalformedRecordError(str(kind), where, first["msg"]) from None


def malformed_reason(value: dict[str, Any]) -> str | None:
    """Why a stored record does not fit its kind's model (``where: reason``, as
    ``record_from_json`` would refuse it), or None: also for a kind this ledger does not know,
    or a newer schema, which are not malformed."""
    from ..errors import FormatVersionError, MalformedRecordError, UsageError

    try:
        record_from_json(value)
    except MalformedRecordError as e:
        return f"{e.where}: {e.reason}"
    except (FormatVersionError, UsageError):
        return None
    return None
