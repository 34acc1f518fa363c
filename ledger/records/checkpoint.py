"""Checkpoint manifests: one ``checkpoint-shard`` per rank, one ``checkpoint`` per save.

A shard lists every tensor of one rank (dtype, shape, chunk object ids) plus the object id of
the canonical-JSON skeleton holding everything that is not a tensor, and that rank's RNG states.
The ``checkpoint`` record links the shards; its id is what ``checkpoints/<run>/latest`` names.
No checkpoint links an older checkpoint: retention could otherwise never free one.
"""

from __future__ import annotations

from typing import Literal, get_args

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .base import Oid, Record, Timestamp
from .rng import RngState

__all__ = ["DTYPES", "Checkpoint", "CheckpointShard", "ShardLayout", "ShardSummary", "TensorEntry"]

# Dtype names as written in manifests (torch.<name>); readers refuse anything else.
DtypeName = Literal[
    "float64",
    "float32",
    "float16",
    "bfloat16",
    "complex128",
    "complex64",
    "int64",
    "int32",
    "int16",
    "int8",
    "uint8",
    "uint16",
    "uint32",
    "uint64",
    "bool",
    "float8_e4m3fn",
    "float8_e5m2",
]
DTYPES: tuple[str, ...] = get_args(DtypeName)


class ShardLayout(BaseModel):
    """Where one rank's piece of a sharded tensor (a DTensor) sits in the whole tensor.

    The piece is the box ``[offset, offset + local shape)`` of a tensor of ``shape``; the
    ``placements`` (per mesh dimension: ``"S(d)"`` sharded along tensor dim ``d``, ``"R"``
    replicated) and the ``mesh`` shape are what the saving job used, kept for the reader.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    shape: list[int]
    offset: list[int]
    placements: list[str]
    mesh: list[int]

    @model_validator(mode="after")
    def _consistent(self) -> ShardLayout:
        if len(self.offset) != len(self.shape) or any(d < 0 for d in [*self.shape, *self.offset]):
            raise ValueError(f"layout offset {self.offset} does not fit shape {self.shape}")
        if len(self.placements) != len(self.mesh) or any(d < 1 for d in self.mesh):
            raise ValueError(f"layout placements {self.placements} do not fit mesh {self.mesh}")
        return self


class TensorEntry(BaseModel):
    """One tensor: raw little-endian bytes, C order, split into ``chunk_size`` objects.

    For a DTensor the bytes are this rank's local piece (``shape`` is the piece's) and
    ``layout`` places it in the whole tensor; a plain tensor has no ``layout`` key at all, so
    its entry (and the shard's id) is what it was before layouts existed.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    key: str  # key path in the state, "/"-joined: "model/fc.weight", "optimizer/state/0/exp_avg"
    dtype: DtypeName
    shape: list[int]
    nbytes: int = Field(ge=0)
    chunks: list[Oid]
    # absent, not null, on a plain tensor's entry: its bytes (and the shard's id) stay as before
    layout: ShardLayout | None = Field(default=None, exclude_if=lambda v: v is None)

    @model_validator(mode="after")
    def _shape_fits(self) -> TensorEntry:
        if any(d < 0 for d in self.shape):
            raise ValueError(f"tensor {self.key}: negative dimension in {self.shape}")
        lay = self.layout
        if lay is not None and (
            len(lay.shape) != len(self.shape)
            or any(o + n > g for o, n, g in zip(lay.offset, self.shape, lay.shape, strict=True))
        ):
            raise ValueError(
                f"tensor {self.key}: piece {self.shape} at {lay.offset} lies outside {lay.shape}"
            )
        return self


class CheckpointShard(Record):
    KIND = "checkpoint-shard"
    SCHEMA = 1

    kind: Literal["checkpoint-shard"] = "checkpoint-shard"
    run_id: str
    step: int
    rank: int = Field(ge=0)
    world_size: int = Field(ge=1)
    chunk_size: int = Field(ge=1)
    tensors: list[TensorEntry]
    state: Oid  # canonical JSON skeleton; tensors appear as {"$tensor": <index into tensors>}
    rng: RngState | None = None
    created: Timestamp
    bytes_total: int = Field(ge=0)
    bytes_new: int = Field(ge=0)  # bytes of objects this save had to write (not deduplicated)


class ShardSummary(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    rank: int = Field(ge=0)
    manifest: Oid
    tensors: int = Field(ge=0)
    bytes_total: int = Field(ge=0)
    bytes_new: int = Field(ge=0)


class Checkpoint(Record):
    KIND = "checkpoint"
    SCHEMA = 1

    kind: Literal["checkpoint"] = "checkpoint"
    run_id: str
    step: int
    world_size: int = Field(ge=1)
    shards: list[ShardSummary]
    created: Timestamp
    bytes_total: int = Field(ge=0)
    bytes_new: int = Field(ge=0)
    note: str = ""

    @model_validator(mode="after")
    def _one_shard_per_rank(self) -> Checkpoint:
        if [s.rank for s in self.shards] != list(range(self.world_size)):
            raise ValueError("a checkpoint needs exactly one shard per rank, in rank order")
        return self
