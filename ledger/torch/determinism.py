"""Make torch deterministic, and record exactly which settings a run had.

``deterministic()`` applies and records: deterministic algorithms, cuDNN deterministic/benchmark,
``CUBLAS_WORKSPACE_CONFIG=:4096:8`` (read by cuBLAS when CUDA starts, so call it first), TF32
off (TF32 results differ between GPU generations), and optionally thread counts.
``determinism_settings()`` only reads them (environment fingerprint, replay comparison).
"""

from __future__ import annotations

import os
from typing import Any

from ..records.runtime import DeterminismSettings
from ..runtime._files import write_json_atomic
from ..runtime._warn import warn_once
from ..runtime.run import current_run

__all__ = ["determinism_differences", "determinism_settings", "deterministic"]

_CUBLAS_OK = (":4096:8", ":16:8")


def determinism_settings() -> DeterminismSettings:
    """The current settings of this process (imports torch)."""
    import torch

    cudnn: Any = torch.backends.cudnn
    cuda_ok = torch.cuda.is_available()
    return DeterminismSettings(
        torch_version=str(torch.__version__),
        deterministic_algorithms=torch.are_deterministic_algorithms_enabled(),
        deterministic_warn_only=torch.is_deterministic_algorithms_warn_only_enabled(),
        cudnn_enabled=bool(cudnn.enabled),
        cudnn_deterministic=bool(cudnn.deterministic),
        cudnn_benchmark=bool(cudnn.benchmark),
        cudnn_version=cudnn.version() if cudnn.is_available() else None,
        cublas_workspace_config=os.environ.get("CUBLAS_WORKSPACE_CONFIG"),
        matmul_allow_tf32=bool(torch.backends.cuda.matmul.allow_tf32),
        cudnn_allow_tf32=bool(cudnn.allow_tf32),
        float32_matmul_precision=torch.get_float32_matmul_precision(),
        num_threads=torch.get_num_threads(),
        num_interop_threads=torch.get_num_interop_threads(),
        cuda_available=cuda_ok,
        cuda_initialized=bool(cuda_ok and torch.cuda.is_initialized()),  # type: ignore[no-untyped-call]
        python_hash_seed=os.environ.get("PYTHONHASHSEED"),
    )


def record_determinism(settings: DeterminismSettings) -> None:
    """Write ``settings`` to ``determinism/rank-<r>.json`` of the current run (if attached)."""
    run = current_run()
    if run.run_dir is None:
        return
    body = {"rank": run.rank.rank, "settings": settings.model_dump(mode="json")}
    try:
        write_json_atomic(run.file("determinism", ".json"), body)
    except OSError as e:
        warn_once("determinism-write", f"could not record determinism settings: {e}")


def deterministic(*, warn_only: bool = False, threads: int | None = None) -> DeterminismSettings:
    """Apply the settings bitwise replay needs, record them for this rank, and return them.

    ``warn_only``: ops without a deterministic implementation warn instead of raising.
    ``threads``: fix intra-op (and, if still possible, inter-op) thread counts; CPU reductions
    can depend on the thread count.
    """
    import torch

    if os.environ.get("CUBLAS_WORKSPACE_CONFIG") not in _CUBLAS_OK:
        os.environ["CUBLAS_WORKSPACE_CONFIG"] = ":4096:8"
    if torch.cuda.is_available() and torch.cuda.is_initialized():  # type: ignore[no-untyped-call]
        warn_once(
            "cuda-initialized",
            "CUDA was initialised before ledger.torch.deterministic(); CUBLAS_WORKSPACE_CONFIG "
            "may not apply. Call it before any CUDA work",
        )
    torch.use_deterministic_algorithms(True, warn_only=warn_only)
    torch.backends.cudnn.deterministic = True
    torch.backends.cudnn.benchmark = False
    torch.backends.cuda.matmul.allow_tf32 = False
    torch.backends.cudnn.allow_tf32 = False
    torch.set_float32_matmul_precision("highest")
    if threads is not None:
        if threads < 1:
            warn_once("bad-threads", f"threads={threads} ignored: must be >= 1")
        else:
            torch.set_num_threads(threads)
            if torch.get_num_interop_threads() != threads:
                try:
                    torch.set_num_interop_threads(threads)
                except RuntimeError as e:  # only possible before any inter-op work started
                    warn_once("interop-threads", f"inter-op threads left as they are: {e}")
    settings = determinism_settings()
    record_determinism(settings)
    return settings


def determinism_differences(
    recorded: DeterminismSettings, current: DeterminismSettings
) -> list[str]:
    """Human-readable differences (``field: recorded -> current``) for replay warnings."""
    a, b = recorded.model_dump(), current.model_dump()
    return [f"{k}: {a[k]!r} -> {b[k]!r}" for k in a if a[k] != b[k]]
