"""The run record: what was run (the contract) and what happened (status, metrics, outputs)."""

from __future__ import annotations

from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, model_validator

from .base import Oid, Record, Timestamp
from .metrics import MetricSummary

__all__ = [
    "CheckpointEvent",
    "Imported",
    "InputCheck",
    "JobContext",
    "OutputCapture",
    "Rendezvous",
    "Run",
    "RunStatus",
]

RunStatus = Literal["running", "succeeded", "failed", "killed", "interrupted"]


class OutputCapture(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    path: str  # as given on the command line
    tree: Oid | None = None  # Tree record of the captured files: those the run wrote
    files: int = 0
    bytes: int = 0
    missing: bool = False
    # Files that were there before the run and that it did not write: not its outputs. Names
    # relative to the tree's base, sorted, at most 1000 of them; the count is exact.
    preexisting: list[str] = Field(default_factory=list)
    n_preexisting: int = Field(default=0, ge=0)


class InputCheck(BaseModel):
    """The re-digest of one --input after the run."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    path: str
    before_digest: str
    after_digest: str | None  # None: the input vanished
    changed: bool
    detail: list[str] = Field(default_factory=list)
    # Whether the store held all of the input's content when the run was sealed (copied, or
    # already there): replay can restore it, and ``ledger verify`` reports it if it goes
    # missing. False: recorded with --no-store-inputs. None: a record from before this field.
    stored: bool | None = None


class CheckpointEvent(BaseModel):
    """A checkpoint saved or loaded inside the run: one line of ``checkpoints.jsonl``.

    ``run_id`` is the run the checkpoint belongs to: a warm start may load another run's.
    ``checkpoint_digest`` is the checkpoint's id, deliberately not a link: retention
    (``keep_last``) decides how long a checkpoint is kept, not the run record that mentions it.
    """

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    event: Literal["save", "load"]
    checkpoint_digest: Oid
    step: int | None = None
    mode: Literal["resume", "warm-start"] | None = None
    rank: int | None = None
    run_id: str | None = None
    world_size: int | None = None
    bytes_total: int | None = None  # saves: tensor bytes, and those this save wrote
    bytes_new: int | None = None
    time: Timestamp | None = None
    # Loads: the file the program named to find the checkpoint (a Lightning pointer), as it
    # named it, and its bytes, stored so that a replay rebuilds it where the workspace lacks it.
    source: str | None = None
    source_digest: Oid | None = None
    # Resumes: "exact" (each rank read its own saved pieces, same world size) or "warm" (resharded
    # to another world size or layout: reductions reorder), and the world size of the save.
    # Absent, not null, when unset, so events recorded before these keys keep their encoding.
    continuation: Literal["exact", "warm"] | None = Field(
        default=None, exclude_if=lambda v: v is None
    )
    saved_world_size: int | None = Field(default=None, exclude_if=lambda v: v is None)


class Imported(BaseModel):
    """Where an imported run came from (``ledger import mlflow``). An imported run has no
    contract: ledger never saw its code, environment or data, so it cannot be replayed."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    source: Literal["mlflow"]
    tracking_uri: str  # credentials removed
    experiment_id: str
    experiment: str  # the experiment's name
    run_id: str  # MLflow's run id
    status: str  # MLflow's own status (FINISHED, FAILED, KILLED, RUNNING, SCHEDULED)
    artifact_uri: str = ""  # where MLflow kept the artifacts (credentials removed)
    params: dict[str, str] = Field(default_factory=dict)  # verbatim, as MLflow stores them
    tags: dict[str, str] = Field(default_factory=dict)  # the mlflow.* system tags
    # mlflow.source.git.commit: where the code came from, as MLflow was told. Provenance
    # only: no snapshot of that code is in the ledger.
    git_commit: str | None = None


class Rendezvous(BaseModel):
    """torchrun's rendezvous, from the variables it sets in each worker (world size, rank and
    local rank are in the environment record's ``determinism``)."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    master_addr: str | None = None  # MASTER_ADDR
    master_port: int | None = None  # MASTER_PORT
    node_rank: int | None = None  # GROUP_RANK: this node among the job's nodes
    local_world_size: int | None = None  # LOCAL_WORLD_SIZE: workers on this node
    run_id: str | None = None  # TORCHELASTIC_RUN_ID (--rdzv-id)


class JobContext(BaseModel):
    """The scheduler job the recorder ran in (``ledger.capture.scheduler`` reads it from the
    job's variables; never a secret). Numbers Slurm did not set are null."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    scheduler: Literal["slurm"] | None = None  # None: only a torchrun rendezvous
    job_id: str | None = None  # SLURM_JOB_ID
    array_job_id: str | None = None  # SLURM_ARRAY_JOB_ID
    array_task_id: int | None = None  # SLURM_ARRAY_TASK_ID
    cluster: str | None = None  # SLURM_CLUSTER_NAME
    partition: str | None = None  # SLURM_JOB_PARTITION
    job_name: str | None = None  # SLURM_JOB_NAME
    step_id: str | None = None  # SLURM_STEP_ID: set under srun
    nodes: str | None = None  # SLURM_JOB_NODELIST, as Slurm writes it ("gpu[01-04]")
    num_nodes: int | None = None  # SLURM_JOB_NUM_NODES
    ntasks: int | None = None  # SLURM_NTASKS
    task_rank: int | None = None  # SLURM_PROCID
    node_rank: int | None = None  # SLURM_NODEID
    cpus_per_task: int | None = None  # SLURM_CPUS_PER_TASK
    gpus_per_task: str | None = None  # SLURM_GPUS_PER_TASK ("1", "a100:1")
    gpus: str | None = None  # SLURM_GPUS_ON_NODE or SLURM_GPUS
    time_limit_min: int | None = None  # the job's time limit (squeue), minutes
    rendezvous: Rendezvous | None = None


class Run(Record):
    """Schema 2 adds ``imported`` and ``reads``; a run record without them is written as
    schema 1, so readers of schema 1 still read those runs."""

    KIND = "run"
    SCHEMA = 2

    kind: Literal["run"] = "run"
    run_id: str
    name: str | None = None
    tags: dict[str, str] = Field(default_factory=dict)
    status: RunStatus
    exit_code: int | None = None
    signal: int | None = None
    interrupted_by: int | None = None  # a signal ledger received and forwarded
    started: Timestamp
    ended: Timestamp | None = None
    wall_seconds: float | None = None
    cpu_user_seconds: float | None = None
    cpu_system_seconds: float | None = None
    peak_rss_bytes: int | None = None
    host: str
    pid: int  # of the recorder, to tell abandoned runs from live ones

    # The frozen Contract record; None only for an imported run (schema 2), which has none.
    contract: Oid | None
    contract_digest: str | None  # groups runs with identical code, config, data, env, seeds
    resolved_config: Oid | None = None  # config captured during the run (argparse, files)

    stdout: Oid | None = None
    stderr: Oid | None = None
    metrics: list[MetricSummary] = Field(default_factory=list)
    outputs: list[OutputCapture] = Field(default_factory=list)
    inputs_after: list[InputCheck] = Field(default_factory=list)
    inputs_changed: bool = False
    runtime: dict[str, Any] | None = None  # what `import ledger` captured in the process
    checkpoints: list[CheckpointEvent] = Field(default_factory=list)
    replay_of: str | None = None  # run id this run replays
    ledger_version: str
    notes: list[str] = Field(default_factory=list)
    imported: Imported | None = None  # schema 2: a run imported from another tracker
    # The Reads record: the files the program opened for reading (absent: none were seen,
    # or a run recorded before ledger looked)
    reads: Oid | None = None
    # Schema 2: the Slurm job (or torchrun rendezvous) the run was recorded in; absent outside.
    job: JobContext | None = None

    @model_validator(mode="after")
    def _imported_shape(self) -> Run:
        if self.imported is not None and self.schema_version < 2:
            raise ValueError("an imported run record must declare schema 2")
        if self.reads is not None and self.schema_version < 2:
            raise ValueError("a run record with reads must declare schema 2")
        if self.job is not None and self.schema_version < 2:
            raise ValueError("a run record with a job context must declare schema 2")
        if self.imported is None and (self.contract is None or self.contract_digest is None):
            raise ValueError("a run record needs a contract unless it was imported")
        return self

    def to_json(self) -> dict[str, Any]:
        out = super().to_json()
        if self.imported is None:
            out.pop("imported", None)  # schema-1 records keep their exact bytes
        if self.reads is None:
            out.pop("reads", None)
        if self.job is None:
            out.pop("job", None)
        return out
