"""Environment and hardware fingerprint, taken before launch without importing torch.

torch, CUDA and cuDNN versions come from installed files (torch's ``version.py``, the
``nvidia-*`` wheels), GPU models from ``nvidia-smi``: importing torch in the wrapper would cost
seconds and could initialise CUDA in a process that is about to fork the training job.
"""

from __future__ import annotations

import ast
import fnmatch
import os
import platform
import re
import socket
import sys
from collections.abc import Mapping, Sequence
from importlib.machinery import PathFinder
from pathlib import Path
from typing import TYPE_CHECKING, Any

from .._canonical import canonical_json
from .._hashing import hash_bytes
from ..records.plain import plain
from .boundary import for_store
from .rawbytes import is_utf8

if TYPE_CHECKING:
    from ..records.env import EnvDifference, Environment, GpuInfo
    from .secrets import Scrubber

__all__ = [
    "NUMERICS_ENV",
    "compare_environments",
    "env_digest",
    "fingerprint",
    "fingerprint_json",
    "import_path",
    "installed_packages",
]

# Variables that change numerics or determinism when set. Names ending in "*" are prefixes.
NUMERICS_ENV: tuple[str, ...] = (
    "PYTHONHASHSEED",
    "CUBLAS_WORKSPACE_CONFIG",
    "CUDA_VISIBLE_DEVICES",
    "CUDA_LAUNCH_BLOCKING",
    "NVIDIA_TF32_OVERRIDE",
    "OMP_*",
    "MKL_*",
    "KMP_*",
    "OPENBLAS_*",
    "NCCL_*",
    "TORCH_*",
    "PYTORCH_*",
    "CUDNN_*",
    "XLA_*",
)
_WORLD = {"WORLD_SIZE": "world_size", "RANK": "rank", "LOCAL_RANK": "local_rank"}

# Fields whose differences cannot change what a run computes. Everything else is treated as
# able to: a conservative default, since a replay report that hides a cause is worse.
_COSMETIC_FIELDS = ("hostname", "python.executable", "os.release", "memory_total")
# Tools that never run inside a training step.
_COSMETIC_PACKAGES = frozenset(
    {"pip", "setuptools", "wheel", "ledger-repro", "pytest", "ruff", "mypy", "hypothesis"}
)


def _canonical_name(name: str) -> str:
    return re.sub(r"[-_.]+", "-", name).lower()


def installed_packages(path: Sequence[str] | None = None) -> dict[str, str]:
    """Every installed distribution -> version, the first on ``sys.path`` winning (as imports do).

    Reads ``*.dist-info`` directory names instead of parsing every METADATA file: ~10x faster
    for a few hundred packages; egg-info and unusual names fall back to the metadata.
    """
    found: dict[str, str] = {}
    for entry in sys.path if path is None else path:
        try:
            names = sorted(os.listdir(entry or "."))
        except OSError:
            continue
        for name in names:
            stem, dot, suffix = name.rpartition(".")
            if not dot or suffix not in {"dist-info", "egg-info"}:
                continue
            dist_name, sep, version = stem.partition("-")
            if suffix == "egg-info" or not sep or "-" in version:
                from importlib.metadata import PathDistribution  # ~20 ms: only when needed

                meta = PathDistribution(Path(entry or ".", name)).metadata
                if meta is None or not meta["Name"]:
                    continue
                dist_name, version = meta["Name"], meta["Version"] or ""
            found.setdefault(_canonical_name(dist_name), version)
    return dict(sorted(found.items()))


def _torch_info(packages: Mapping[str, str]) -> dict[str, Any] | None:
    if "torch" not in packages:
        return None
    spec = PathFinder.find_spec("torch")  # locates the package without executing it
    if spec is None or not spec.submodule_search_locations:
        return None
    attrs: dict[str, str | None] = {}
    for location in spec.submodule_search_locations:
        version_py = Path(location, "version.py")
        if version_py.is_file():
            attrs = _parse_assignments(version_py.read_text(encoding="utf-8", errors="replace"))
            break

    def first(prefix: str) -> str | None:
        hits = [v for k, v in packages.items() if k.startswith(prefix)]
        return sorted(hits)[-1] if hits else None

    return plain(
        "torch",
        version=attrs.get("__version__") or packages["torch"],
        cuda=attrs.get("cuda"),
        hip=attrs.get("hip"),
        git_version=attrs.get("git_version"),
        cudnn=first("nvidia-cudnn-"),
        nccl=first("nvidia-nccl-"),
    )


def _parse_assignments(source: str) -> dict[str, str | None]:
    """Module-level ``name = "literal"`` assignments of a file, without executing it."""
    out: dict[str, str | None] = {}
    try:
        tree = ast.parse(source)
    except SyntaxError:
        return out
    for node in tree.body:
        target: ast.expr | None = None
        if isinstance(node, ast.Assign) and len(node.targets) == 1:
            target, value = node.targets[0], node.value
        elif isinstance(node, ast.AnnAssign) and node.value is not None:
            target, value = node.target, node.value
        if (
            isinstance(target, ast.Name)
            and isinstance(value, ast.Constant)
            and (value.value is None or isinstance(value.value, str))
        ):
            out[target.id] = value.value
    return out


def _gpus() -> list[dict[str, Any]]:
    from .gpus import answer  # asked early by `ledger record` (gpus.prefetch)

    text = answer()
    return _nvidia_smi_json(text) if text is not None else []


def _nvidia_smi_json(text: str) -> list[dict[str, Any]]:
    gpus = []
    for line in text.splitlines():
        parts = [p.strip() for p in line.split(",")]
        if parts and parts[0]:
            parts += [""] * (3 - len(parts))
            gpus.append(plain("gpu", name=parts[0], driver_version=parts[1], memory_total=parts[2]))
    return gpus


def parse_nvidia_smi(text: str) -> list[GpuInfo]:
    from ..records.env import GpuInfo

    return [GpuInfo.model_validate(g) for g in _nvidia_smi_json(text)]


def _cpu_model() -> str:
    try:
        text = Path("/proc/cpuinfo").read_text(encoding="utf-8", errors="replace")
    except OSError:
        text = ""
    for key in ("model name", "Hardware", "Processor", "cpu model", "cpu"):
        m = re.search(rf"^{key}\s*:\s*(.+)$", text, re.M)
        if m:
            return m[1].strip()
    return platform.processor() or platform.machine()


def _memory_total() -> int:
    try:
        return int(os.sysconf("SC_PAGE_SIZE") * os.sysconf("SC_PHYS_PAGES"))
    except (ValueError, OSError, AttributeError):
        return 0


def _selected_env(
    environ: Mapping[str, str], patterns: Sequence[str], scrubber: Scrubber | None
) -> dict[str, str]:
    exact = {p for p in patterns if not p.endswith("*")}
    prefixes = tuple(p[:-1] for p in patterns if p.endswith("*"))
    picked = {
        k: v
        for k, v in environ.items()
        if (k in exact or k.startswith(prefixes) or any(fnmatch.fnmatchcase(k, p) for p in exact))
        and is_utf8(k)  # records hold UTF-8: a variable that is not is left out
        and is_utf8(v)
    }
    return for_store("env", dict(sorted(picked.items())), scrubber, "the environment record")


def _int_or_none(value: str | None) -> int | None:
    try:
        return int(value) if value is not None else None
    except ValueError:
        return None


def import_path(
    environ: Mapping[str, str],
    cwd: str,
    base: Sequence[str] | None = None,
    current: Mapping[str, str] | None = None,
) -> list[str]:
    """The import path of a Python started with ``environ`` in ``cwd``: this process's
    (``base``, default ``sys.path``) with the ``PYTHONPATH`` entries it was started with
    (``current``, default ``os.environ``) replaced by those of ``environ``. A replay restores
    the recorded ``PYTHONPATH`` (``--env PYTHONPATH``) for its command: the packages that
    command sees are found there, not where the replaying process looks."""

    def entries(env: Mapping[str, str], where: str) -> list[str]:
        text = env.get("PYTHONPATH", "")
        return [os.path.normpath(os.path.join(where, e)) for e in text.split(os.pathsep) if e]

    path = list(sys.path if base is None else base)
    own = set(entries(os.environ if current is None else current, os.getcwd()))
    rest = [p for p in path if not p or os.path.normpath(p) not in own]
    # PYTHONPATH comes right after the script's directory (sys.path[0]), as Python puts it.
    return [*rest[:1], *entries(environ, cwd), *rest[1:]]


def fingerprint(
    extra_env: Sequence[str] = (),
    environ: Mapping[str, str] | None = None,
    scrubber: Scrubber | None = None,
    path: Sequence[str] | None = None,
) -> Environment:
    """Fingerprint this machine and Python; ``extra_env`` names (or ``PREFIX*``) more
    variables to keep. ``environ`` defaults to ``os.environ`` (the child inherits it), and
    ``path``, where packages are looked for, to ``sys.path``. The variables kept are
    redacted for the store (``ledger.capture.boundary``), ``scrubber``'s known secret values
    included."""
    from ..records.env import Environment

    return Environment.model_validate(fingerprint_json(extra_env, environ, scrubber, path))


def fingerprint_json(
    extra_env: Sequence[str] = (),
    environ: Mapping[str, str] | None = None,
    scrubber: Scrubber | None = None,
    path: Sequence[str] | None = None,
) -> dict[str, Any]:
    """``fingerprint``'s record as JSON, without pydantic (ledger/records/plain.py)."""
    environ = os.environ if environ is None else environ
    packages = installed_packages(path)
    libc_name, libc_version = platform.libc_ver()
    try:
        affinity = len(os.sched_getaffinity(0))
    except (AttributeError, OSError):
        affinity = os.cpu_count() or 0
    uname = platform.uname()
    return plain(
        "environment",
        python=plain(
            "python",
            version=platform.python_version(),
            implementation=platform.python_implementation(),
            executable=sys.executable,
        ),
        os=plain(
            "os",
            system=uname.system,
            release=uname.release,
            machine=uname.machine,
            libc=f"{libc_name} {libc_version}".strip(),
        ),
        hostname=socket.gethostname(),
        cpu=plain(
            "cpu",
            model=_cpu_model(),
            logical_count=os.cpu_count() or 0,
            affinity_count=affinity,
        ),
        memory_total=_memory_total(),
        packages=packages,
        determinism=plain(
            "determinism",
            env=_selected_env(environ, (*NUMERICS_ENV, *extra_env), scrubber),
            torch=_torch_info(packages),
            gpus=_gpus(),
            **{field: _int_or_none(environ.get(var)) for var, field in _WORLD.items()},
        ),
    )


# --- comparison and digest ---------------------------------------------------------------------


def _flatten(value: Any, prefix: str, out: dict[str, Any]) -> None:
    if isinstance(value, dict):
        for k, v in value.items():
            _flatten(v, f"{prefix}.{k}" if prefix else k, out)
    elif isinstance(value, list):
        for i, v in enumerate(value):
            _flatten(v, f"{prefix}[{i}]", out)
    else:
        out[prefix] = value


def _fields(env: Environment | dict[str, Any]) -> dict[str, Any]:
    data = dict(env) if isinstance(env, dict) else env.to_json()
    for key in ("kind", "schema"):
        data.pop(key, None)
    out: dict[str, Any] = {}
    _flatten(data, "", out)
    return out


def affects_numerics(field: str) -> bool:
    """Whether a difference in ``field`` (a dotted path) can change what a run computes."""
    if field in _COSMETIC_FIELDS:
        return False
    if field.startswith("packages."):
        return field.removeprefix("packages.") not in _COSMETIC_PACKAGES
    # Same GPU model, same numerics: its memory size only decides whether a run fits.
    return not (field.startswith("determinism.gpus[") and field.endswith(".memory_total"))


def compare_environments(a: Environment, b: Environment) -> list[EnvDifference]:
    """Every differing field between an original (``a``) and a current (``b``) fingerprint,
    numerics-relevant differences first."""
    from ..records.env import EnvDifference

    fa, fb = _fields(a), _fields(b)
    diffs = [
        EnvDifference(
            field=k, original=fa.get(k), current=fb.get(k), affects_numerics=affects_numerics(k)
        )
        for k in sorted(set(fa) | set(fb))
        if fa.get(k) != fb.get(k)
    ]
    return sorted(diffs, key=lambda d: not d.affects_numerics)


def env_digest(env: Environment | dict[str, Any]) -> str:
    """Digest of the numerics-relevant fields only (for the run contract): two machines that
    differ only in hostname, paths, kernel release or memory size get the same digest."""
    kept = {k: v for k, v in _fields(env).items() if affects_numerics(k)}
    return hash_bytes(canonical_json(kept))
