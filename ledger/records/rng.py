"""RNG states as JSON: every generator's actual state, never a pickle."""

from __future__ import annotations

from typing import Any

from pydantic import BaseModel, ConfigDict, Field

__all__ = ["PythonRandomState", "RngState"]


class PythonRandomState(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    version: int
    internal: list[int]  # 625 words of the Mersenne Twister (624 + position)
    gauss_next: float | None


class RngState(BaseModel):
    """States of every generator in one process. Tensors' byte states are base64 strings."""

    model_config = ConfigDict(extra="forbid", frozen=True, defer_build=True)

    python: PythonRandomState | None = None
    # numpy.random.get_state(legacy=False) of the global RandomState: a bit_generator state dict.
    numpy_global: dict[str, Any] | None = None
    # bit_generator.state of each registered numpy.random.Generator, by name.
    numpy_generators: dict[str, dict[str, Any]] = Field(default_factory=dict)
    torch_cpu: str | None = None  # base64 of torch.get_rng_state()
    torch_cuda: list[str] = Field(default_factory=list)  # base64, one per visible device
    torch_generators: dict[str, str] = Field(default_factory=dict)  # base64 of Generator.get_state
