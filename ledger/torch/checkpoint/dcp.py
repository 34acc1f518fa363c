"""``torch.distributed.checkpoint`` (DCP) folders: import one as a ledger checkpoint, write one
that ``dcp.load`` reads (into FSDP2 models too: DCP reshards what it loads).

Nothing untrusted is unpickled with the general unpickler:

- DCP's ``.metadata`` is a pickle. ``read_metadata`` reads it with ``_MetadataUnpickler``,
  whose ``find_class`` hands out only DCP's metadata dataclasses and enum, ``torch.Size``,
  torch dtypes, torch's layout lookup and path classes (building those runs no other code);
  any other global (``os.system``, ``builtins.eval``, ``copyreg._reconstructor``, ...) is
  refused before it is called. The result is then checked: the types DCP writes, chunks
  inside their tensor, every data location a plain file name in the folder, no transforms.
- Tensor data and non-tensor values are ``torch.save`` blobs: read with
  ``torch.load(weights_only=True)`` (torch's restricted unpickler, as DCP itself reads them).

An import assembles each tensor whole from its chunks and stores it with ``save_checkpoint``
(content-addressed, no RNG state); nested keys come back from DCP's ``planner_data``.
"""

from __future__ import annotations

import io
import os
import pickle
import shutil
import warnings
from pathlib import Path
from typing import Any

import torch

from ...errors import UsageError
from ...store import Store
from ...store.atomic import fsync_dir
from ...store.safe_read import NotRegularError, open_regular
from .common import CheckpointInfo
from .save import save_checkpoint

__all__ = ["import_dcp", "read_metadata", "write_dcp"]

METADATA_MAX = 256 << 20  # a DCP .metadata of a large model is tens of MB

_META = "torch.distributed.checkpoint.metadata"
_ALLOWED = {
    (_META, "Metadata"),
    (_META, "TensorStorageMetadata"),
    (_META, "BytesStorageMetadata"),
    (_META, "TensorProperties"),
    (_META, "ChunkStorageMetadata"),
    (_META, "MetadataIndex"),
    (_META, "StorageMeta"),
    (_META, "_MEM_FORMAT_ENCODING"),
    ("torch.distributed.checkpoint.filesystem", "_StorageInfo"),
    ("torch", "Size"),
    ("torch.serialization", "_get_layout"),
    ("pathlib", "PosixPath"),
    ("pathlib", "PurePosixPath"),
    ("pathlib", "WindowsPath"),
    ("pathlib", "PureWindowsPath"),
    ("collections", "OrderedDict"),
}


class _MetadataUnpickler(pickle.Unpickler):
    def find_class(self, module: str, name: str) -> Any:
        if module == "torch" and isinstance(getattr(torch, name, None), torch.dtype):
            return getattr(torch, name)
        if (module, name) in _ALLOWED:
            return super().find_class(module, name)
        raise pickle.UnpicklingError(f"{module}.{name} is not part of DCP metadata")


def _refuse(path: Path, why: str) -> UsageError:
    return UsageError(
        f"{path} is not a DCP checkpoint ledger can read: {why}",
        hint="point at a folder written by torch.distributed.checkpoint (FileSystemWriter)",
    )


def read_metadata(folder: Path) -> Any:
    """The folder's ``.metadata``, unpickled with DCP's types only, and checked."""
    from torch.distributed.checkpoint.filesystem import _StorageInfo
    from torch.distributed.checkpoint.metadata import (
        BytesStorageMetadata,
        Metadata,
        MetadataIndex,
        TensorStorageMetadata,
    )

    path = folder / ".metadata"
    try:
        with open_regular(path) as f:
            data = f.read(METADATA_MAX + 1)
    except FileNotFoundError:
        raise _refuse(folder, "it has no .metadata file") from None
    except (NotRegularError, IsADirectoryError, NotADirectoryError) as e:
        raise _refuse(folder, str(e)) from None
    if len(data) > METADATA_MAX:
        raise _refuse(folder, f".metadata is larger than {METADATA_MAX} bytes")
    try:
        md = _MetadataUnpickler(io.BytesIO(data)).load()
    except Exception as e:  # a refused global, or a damaged pickle
        raise _refuse(folder, f".metadata: {type(e).__name__}: {e}") from None
    if not isinstance(md, Metadata) or not isinstance(md.state_dict_metadata, dict):
        raise _refuse(folder, ".metadata does not hold DCP Metadata")
    for fqn, item in md.state_dict_metadata.items():
        if not isinstance(fqn, str):
            raise _refuse(folder, f"key {fqn!r} is not a string")
        if isinstance(item, TensorStorageMetadata):
            _check_tensor(folder, fqn, item)
        elif not isinstance(item, BytesStorageMetadata):
            raise _refuse(folder, f"{fqn}: unknown entry {type(item).__name__}")
    if not isinstance(md.storage_data, dict):
        raise _refuse(folder, ".metadata has no storage locations")
    for index, info in md.storage_data.items():
        if not isinstance(index, MetadataIndex) or not isinstance(info, _StorageInfo):
            raise _refuse(folder, "a storage location is not DCP's")
        name = info.relative_path
        if not isinstance(name, str) or name in ("", ".", "..") or Path(name).name != name:
            raise _refuse(folder, f"{index.fqn}: data file {name!r} is not a file in the folder")
        if not all(isinstance(n, int) and n >= 0 for n in (info.offset, info.length)):
            raise _refuse(folder, f"{index.fqn}: bad offset or length")
        if info.transform_descriptors:
            raise _refuse(
                folder, f"{index.fqn} is stored with transforms {info.transform_descriptors}"
            )
    return md


def _check_tensor(folder: Path, fqn: str, item: Any) -> None:
    size = item.size
    dtype = getattr(item.properties, "dtype", None)
    if not isinstance(size, torch.Size) or not isinstance(dtype, torch.dtype):
        raise _refuse(folder, f"{fqn}: bad size or dtype")
    for c in item.chunks:
        off, sizes = c.offsets, c.sizes
        if len(off) != len(size) or len(sizes) != len(size):
            raise _refuse(folder, f"{fqn}: a chunk does not match the tensor's rank")
        if any(o < 0 or n < 0 or o + n > d for o, n, d in zip(off, sizes, size, strict=True)):
            raise _refuse(folder, f"{fqn}: chunk at {list(off)} lies outside {list(size)}")


class _Blobs:
    """Reads ``(file, offset, length)`` slices of the folder's data files, each opened once."""

    def __init__(self, folder: Path) -> None:
        self.folder = folder
        self.files: dict[str, Any] = {}

    def load(self, info: Any, what: str) -> Any:
        f = self.files.get(info.relative_path)
        if f is None:
            try:
                f = open_regular(self.folder / info.relative_path)
            except (FileNotFoundError, NotRegularError) as e:
                raise _refuse(self.folder, f"{what}: {e}") from None
            self.files[info.relative_path] = f
        f.seek(info.offset)
        data = f.read(info.length)
        if len(data) != info.length:
            raise _refuse(self.folder, f"{what}: {info.relative_path} is cut short")
        try:
            return torch.load(io.BytesIO(data), map_location="cpu", weights_only=True)
        except Exception as e:
            raise _refuse(self.folder, f"{what} cannot be read safely: {e}") from None

    def close(self) -> None:
        for f in self.files.values():
            f.close()


def _read_state(folder: Path, md: Any) -> dict[str, Any]:
    from torch.distributed.checkpoint.metadata import TensorStorageMetadata

    where = {(i.fqn, tuple(i.offset) if i.offset is not None else None): s for i, s in
             md.storage_data.items()}  # fmt: skip
    blobs = _Blobs(folder)
    flat: dict[str, Any] = {}
    try:
        for fqn, item in md.state_dict_metadata.items():
            if not isinstance(item, TensorStorageMetadata):
                info = where.get((fqn, None))
                if info is None:
                    raise _refuse(folder, f"{fqn}: no data location")
                flat[fqn] = blobs.load(info, fqn)
                continue
            out = torch.empty(item.size, dtype=item.properties.dtype)
            filled = 0
            for c in item.chunks:
                info = where.get((fqn, tuple(c.offsets)))
                if info is None:
                    raise _refuse(folder, f"{fqn}: chunk at {list(c.offsets)} has no location")
                t = blobs.load(info, fqn)
                if not isinstance(t, torch.Tensor) or t.shape != c.sizes or t.dtype != out.dtype:
                    raise _refuse(folder, f"{fqn}: chunk at {list(c.offsets)} is not as listed")
                box = tuple(slice(o, o + n) for o, n in zip(c.offsets, c.sizes, strict=True))
                out[box].copy_(t)
                filled += t.numel()
            if filled != out.numel():
                raise _refuse(folder, f"{fqn}: its chunks fill {filled} of {out.numel()} elements")
            flat[fqn] = out
    finally:
        blobs.close()
    return _nest(folder, flat, md.planner_data)


def _nest(folder: Path, flat: dict[str, Any], paths: Any) -> dict[str, Any]:
    """DCP's flat keys back to the nested state it flattened (``planner_data``)."""
    state: dict[Any, Any] = {}
    for fqn, value in flat.items():
        path = paths.get(fqn) if isinstance(paths, dict) else None
        if not (isinstance(path, tuple) and path and all(isinstance(p, str | int) for p in path)):
            path = (fqn,)
        node = state
        for p in path[:-1]:
            node = node.setdefault(p, {})
            if not isinstance(node, dict):
                raise _refuse(folder, f"{fqn}: key {p!r} is both a value and a container")
        if path[-1] in node:
            raise _refuse(folder, f"{fqn}: key {path!r} appears twice")
        node[path[-1]] = value
    return state


def import_dcp(
    folder: str | Path,
    *,
    step: int = 0,
    store: Store | str | Path | None = None,
    run_id: str | None = None,
) -> CheckpointInfo:
    """Store the DCP checkpoint in ``folder`` as checkpoint ``step`` of ``run_id``."""
    folder = Path(folder)
    if not folder.is_dir():
        raise UsageError(f"{folder} is not a folder", hint="pass a DCP checkpoint folder")
    state = _read_state(folder, read_metadata(folder))
    note = f"imported from the DCP checkpoint {folder.name} (tensors whole); no RNG state"
    return save_checkpoint(state, step=step, store=store, run_id=run_id, note=note, rng=False)


def write_dcp(out: Path, state: dict[str, Any]) -> None:
    """Write ``state`` as a DCP folder at ``out`` (new), all at once: a temp folder, every
    file fsynced, then renamed."""
    from torch.distributed.checkpoint.filesystem import FileSystemWriter
    from torch.distributed.checkpoint.state_dict_saver import save

    if out.exists() or out.is_symlink():
        raise UsageError(f"{out} exists", hint="remove it or choose another --out")
    tmp = out.with_name(f".{out.name}.tmp-{os.getpid()}")
    try:
        with warnings.catch_warnings():  # DCP's own deprecation and single-process notes
            warnings.simplefilter("ignore")
            writer = FileSystemWriter(str(tmp), sync_files=True)
            save(state, storage_writer=writer, no_dist=True)
        for p in tmp.iterdir():  # .metadata is written after sync_files' data files
            with open(p, "rb") as f:
                os.fsync(f.fileno())
        fsync_dir(tmp)
        os.rename(tmp, out)
    finally:
        shutil.rmtree(tmp, ignore_errors=True)
    fsync_dir(out.absolute().parent)
