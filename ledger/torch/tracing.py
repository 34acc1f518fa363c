"""Traces: exact digests of what a training step computed, to say where a replay diverged.

    tr = ledger.torch.trace(model, optimizer, every=10)
    for ids, x, y in loader:
        tr.batch(x, y, ids=ids)   # optional: the batch and its sample ids (else the model's input)
        loss = loss_fn(model(x), y)
        tr.loss(loss)             # optional: the loss, its own phase of the step
        loss.backward()
        optimizer.step()          # a post-hook ends the step (tr.step() without an optimizer)
        optimizer.zero_grad()

On a traced step (every ``every``-th, from step 0) it records, in this order: the RNG states
at the start of the step (and those of the DataLoader worker that made the batch, when the
loader is iterated through ``tr.loader(loader)``), the batch, each module's input and output
digest in order of completion (input digest taken as the module is entered), the loss, each
parameter's gradient when backward accumulates it (in backward's order), and each parameter
after the optimizer's step with the optimizer's hyperparameters (lr, eps, betas, ...).
Digests are exact (``ledger.torch.digest``); ``values=N`` also keeps the values of tensors of
at most N elements, so a report can give max |Δ| and how many values differ.

Between traced steps nothing is hooked but one forward pre-hook on the model (it starts a
step) and the optimizer's post-hook (it ends one): the hooks of a traced step are added when
it starts and removed when it ends. Each traced step is one JSON line of
``traces/rank-<r>.jsonl`` in the run's staging dir, after a header naming the modules and
parameters; the recorder stores it as one object per rank (``runtime.traces``).
"""

from __future__ import annotations

import base64
from typing import Any

from ..runtime._files import append_line
from ..runtime._warn import warn_once
from ..runtime.run import Run, current_run
from .digest import digest_bytes, finish_device_digest, rng_digests, tensor_bytes, tensor_digest

__all__ = ["FORMAT", "OPTIMIZER_KEYS", "Trace", "trace"]

FORMAT = 1
MEMORY_STEPS = 10_000  # traced steps a detached run keeps
OPTIMIZER_KEYS = ("lr", "eps", "betas", "weight_decay", "momentum", "dampening", "alpha")


class _Pending:
    """A digest of values some of which are on a device: resolved at the step's end, with one
    device sync for the whole step."""

    __slots__ = ("parts",)

    def __init__(self, parts: list[Any]) -> None:
        self.parts = parts  # str (a CPU digest) or (header, int64 tensor of two sums)


class Trace:
    def __init__(
        self,
        model: Any,
        optimizer: Any = None,
        *,
        every: int = 1,
        values: int = 0,
        run: Run | None = None,
    ) -> None:
        if every < 1:
            raise ValueError(f"every must be >= 1, got {every}")
        if values < 0:
            raise ValueError(f"values must be >= 0, got {values}")
        import torch

        self.model = model
        self.optimizer = optimizer
        self.every = every
        self.values = values
        self.run = run or current_run()
        self.modules = [(n or "<model>", m) for n, m in model.named_modules()]
        self.params = [(n, p) for n, p in model.named_parameters()]
        self._param_index = {id(p): i for i, (_, p) in enumerate(self.params)}
        self.calls = 0  # steps begun
        self.records: list[dict[str, Any]] = []  # header and steps, when the run is detached
        self.header = {
            "format": FORMAT,
            "rank": self.run.rank.rank,
            "world_size": self.run.rank.world_size,
            "every": every,
            "values": values,
            "modules": [
                [n, type(m).__name__, not any(True for _ in m.children())] for n, m in self.modules
            ],
            "params": [n for n, _ in self.params],
            "device": next((p.device.type for _, p in self.params), "cpu"),
            "torch": torch.__version__,
            "threads": torch.get_num_threads(),
            "interop_threads": torch.get_num_interop_threads(),
            "deterministic": torch.are_deterministic_algorithms_enabled(),
        }
        self._wrote_header = False
        self._step: dict[str, Any] | None = None  # the open step
        self._traced = False
        self._ran = False  # the model ran forward in the open step
        self._cache: dict[tuple[int, int], tuple[Any, Any]] = {}
        self._stacks: dict[int, list[Any]] = {}
        self._open: list[int] = []  # modules whose forward began and has not returned
        self._step_hooks: list[Any] = []
        self._hooks = [model.register_forward_pre_hook(self._root_pre, with_kwargs=True)]
        if optimizer is not None:
            self._hooks.append(optimizer.register_step_post_hook(self._after_optimizer))
        self.closed = False
        self._loaders: list[Any] = []  # trace_workers.LoaderTap, from loader()

    # -- the public calls ---------------------------------------------------------------------
    def batch(self, *tensors: Any, ids: Any = None) -> None:
        """Start a step with this batch (and its sample ids, e.g. the indices a sampler drew)."""
        if self.optimizer is None and self._ran:
            self.step()  # no optimizer to end the previous step: it ends here
        self._begin()
        if not self._traced or self._step is None:
            return
        digest = self._digest(list(tensors))
        if "batch" in self._step and self._ran:  # gradient accumulation: one more batch
            before = self._step["batch"]
            self._step["batch"] = [*(before if isinstance(before, list) else [before]), digest]
            self._step.setdefault("ids", []).extend(_plain_ids(ids) if ids is not None else [])
            return
        self._step["batch"] = digest
        if ids is not None:
            self._step["ids"] = _plain_ids(ids)

    def loader(self, loader: Any) -> Any:
        """Iterate ``loader`` through this: the same batches, and each traced step records the
        RNG state digests of the DataLoader worker that made its batch (``trace_workers``)."""
        from .trace_workers import LoaderTap

        tap = LoaderTap(loader)
        self._loaders.append(tap)
        return tap

    def loss(self, loss: Any) -> None:
        """Record the loss (call before ``backward``)."""
        if self._traced and self._step is not None:
            self._step["loss"] = self._digest([loss])
            self._keep("loss", loss)

    def step(self) -> None:
        """End the step: parameters are digested now. The optimizer's post-hook calls this."""
        if self._step is None:
            return
        try:
            if self._traced:
                self._finish()
        except Exception as e:  # a trace must never stop training
            warn_once("trace", f"trace could not record step {self._step.get('s')}: {e}")
        finally:
            self._end()

    def close(self) -> None:
        self.step()
        for h in self._hooks:
            h.remove()
        self._hooks = []
        self.closed = True

    def running(self) -> tuple[str, str] | None:
        """(name, class) of the innermost module whose forward is running on a traced step:
        where an exception raised in a forward came from, while it propagates."""
        if not self._open:
            return None
        name, module = self.modules[self._open[-1]]
        return name, type(module).__name__

    def __enter__(self) -> Trace:
        return self

    def __exit__(self, *exc: Any) -> None:
        self.close()

    # -- step boundaries ----------------------------------------------------------------------
    def _root_pre(self, module: Any, args: Any, kwargs: Any) -> None:
        import torch

        if self._step is not None:
            self._ran = True
        elif torch.is_grad_enabled() and module.training:
            self._ran = True
            self._begin()
            if self._traced and self._step is not None:
                try:
                    inputs = self._digest([args, kwargs] if kwargs else list(args))
                except Exception as e:
                    warn_once("trace", f"trace could not digest the model's inputs: {e}")
                    return
                self._step["batch"] = inputs
                # The model's own pre-hook, added just now, runs from its next call on.
                self._stacks.setdefault(0, []).append(inputs)

    def _begin(self) -> None:
        if self._step is not None:
            return
        s = self.calls
        self.calls += 1
        self._traced = s % self.every == 0
        self._step = {"s": s}
        if not self._traced:
            return
        self._step.update(rng=rng_digests(), fwd=[], grad=[], vals={})
        workers: dict[str, Any] = {}
        for tap in self._loaders:
            workers.update(tap.rng() or {})
        if workers:
            self._step["workers"] = workers
        self._install()

    def _end(self) -> None:
        for h in self._step_hooks:
            h.remove()
        self._step_hooks = []
        self._cache.clear()
        self._stacks.clear()
        self._open.clear()
        self._step = None
        self._traced = False
        self._ran = False

    def _after_optimizer(self, optimizer: Any, args: Any, kwargs: Any) -> None:
        self.step()

    def _install(self) -> None:
        add = self._step_hooks.append
        for i, (_, m) in enumerate(self.modules):
            add(m.register_forward_pre_hook(self._pre_hook(i), with_kwargs=True))
            add(m.register_forward_hook(self._post_hook(i), with_kwargs=True))
        for i, (_, p) in enumerate(self.params):
            if p.requires_grad:
                add(p.register_post_accumulate_grad_hook(self._grad_hook(i)))

    # -- hooks of a traced step ---------------------------------------------------------------
    # Each hook body is guarded: a trace must never stop training (a warning says what failed).
    def _pre_hook(self, index: int) -> Any:
        def pre(module: Any, args: Any, kwargs: Any) -> None:
            self._open.append(index)
            try:
                inputs = [args, kwargs] if kwargs else list(args)
                self._stacks.setdefault(index, []).append(self._digest(inputs))
            except Exception as e:
                warn_once("trace", f"trace could not digest the inputs of a module: {e}")

        return pre

    def _post_hook(self, index: int) -> Any:
        def post(module: Any, args: Any, kwargs: Any, output: Any) -> None:
            if index in self._open:
                del self._open[len(self._open) - 1 - self._open[::-1].index(index)]
            step = self._step
            if step is None:
                return
            try:
                stack = self._stacks.get(index)
                inputs = (
                    stack.pop() if stack else self._digest([args, kwargs] if kwargs else list(args))
                )
                step["fwd"].append([index, inputs, self._digest([output])])
                self._keep(f"f{len(step['fwd']) - 1}", output)
            except Exception as e:
                warn_once("trace", f"trace could not digest the output of a module: {e}")

        return post

    def _grad_hook(self, index: int) -> Any:
        def hook(p: Any) -> None:
            step = self._step
            if step is None or p.grad is None:
                return
            try:
                step["grad"].append([index, self._digest([p.grad])])
                self._keep(f"g{len(step['grad']) - 1}", p.grad)
            except Exception as e:
                warn_once("trace", f"trace could not digest a gradient: {e}")

        return hook

    def _finish(self) -> None:
        step = self._step
        if step is None:
            return
        import torch

        with torch.no_grad():
            step["param"] = [[i, self._digest([p])] for i, (_, p) in enumerate(self.params)]
            for i, (_, p) in enumerate(self.params):
                self._keep(f"p{i}", p)
        if self.optimizer is not None:
            step["opt"] = [_hyper(g) for g in self.optimizer.param_groups]
        self._resolve()
        if not step["vals"]:
            del step["vals"]
        self._write(step)

    # -- digests ------------------------------------------------------------------------------
    def _digest(self, values: list[Any]) -> Any:
        """One digest of several values (tensors found inside tuples, lists and dicts)."""
        import torch

        leaves: list[Any] = []
        _flatten(values, leaves)
        parts: list[Any] = []
        on_device = False
        for v in leaves:
            if isinstance(v, torch.Tensor):
                key = (id(v), v._version)
                hit = self._cache.get(key)
                if hit is not None and hit[0] is v:
                    d = hit[1]
                else:
                    d = tensor_digest(v)
                    self._cache[key] = (v, d)
                on_device = on_device or not isinstance(d, str)
                parts.append(d)
            else:
                parts.append(digest_bytes(b"repr|" + _short_repr(v)))
        if len(parts) == 1 and isinstance(parts[0], str):
            return parts[0]
        if not on_device:
            return digest_bytes("|".join(parts).encode())
        return _Pending(parts)

    def _resolve(self) -> None:
        """Replace every pending digest in the step by its text: one device read per step."""
        import torch

        found: list[tuple[Any, Any]] = []  # (container, key)

        def scan(container: Any, key: Any) -> None:
            v = container[key]
            if isinstance(v, _Pending):
                found.append((container, key))
            elif isinstance(v, list):
                for k in range(len(v)):
                    scan(v, k)

        step = self._step
        if step is None:
            return
        for k in ("batch", "loss", "fwd", "grad", "param"):
            if k in step:
                scan(step, k)
        if not found:
            return
        tensors = [p[1] for c, k in found for p in c[k].parts if not isinstance(p, str)]
        try:  # one read for the whole step
            sums = iter(torch.stack(tensors).tolist())
        except RuntimeError:  # on several devices: one read per tensor
            sums = iter([t.tolist() for t in tensors])
        for c, k in found:
            texts = [
                p if isinstance(p, str) else finish_device_digest(p[0], next(sums))
                for p in c[k].parts
            ]
            c[k] = texts[0] if len(texts) == 1 else digest_bytes("|".join(texts).encode())

    def _keep(self, key: str, value: Any) -> None:
        import torch

        if (
            self.values
            and isinstance(value, torch.Tensor)
            and value.numel() <= self.values
            and value.is_floating_point()
            and self._step is not None
        ):
            t = value.detach().to("cpu")
            self._step["vals"][key] = [
                str(t.dtype).removeprefix("torch."),
                list(t.shape),
                base64.b64encode(bytes(tensor_bytes(t))).decode("ascii"),
            ]

    # -- output -------------------------------------------------------------------------------
    def _write(self, step: dict[str, Any]) -> None:
        run = self.run
        if run.run_dir is None:
            if not self.records:
                self.records.append({"header": self.header})
            if len(self.records) <= MEMORY_STEPS:
                self.records.append(step)
            return
        try:
            path = run.file("traces", ".jsonl")
            if not self._wrote_header:
                append_line(path, {"header": self.header})
                self._wrote_header = True
            append_line(path, step)
        except (OSError, TypeError, ValueError) as e:
            warn_once("trace-write", f"could not write a trace step: {e}")


def _flatten(value: Any, out: list[Any]) -> None:
    if isinstance(value, list | tuple):
        for v in value:
            _flatten(v, out)
    elif isinstance(value, dict):
        for k in sorted(value, key=str):
            out.append(k)
            _flatten(value[k], out)
    elif hasattr(value, "to_tuple") and callable(value.to_tuple):  # transformers' outputs
        _flatten(list(value.to_tuple()), out)
    else:
        out.append(value)


def _short_repr(v: Any) -> bytes:
    if v is None or isinstance(v, bool | int | float | str):
        return repr(v).encode("utf-8", "backslashreplace")
    return type(v).__name__.encode()  # an object's repr may hold its address


def _plain_ids(ids: Any) -> list[Any]:
    tolist = getattr(ids, "tolist", None)
    if callable(tolist):
        ids = tolist()
    if isinstance(ids, int | str):
        return [ids]
    return [i if isinstance(i, int | str) else repr(i) for i in ids]


def _hyper(group: dict[str, Any]) -> dict[str, Any]:
    out: dict[str, Any] = {}
    for k in OPTIMIZER_KEYS:
        v = group.get(k)
        if v is None:
            continue
        try:
            out[k] = [float(x) for x in v] if isinstance(v, list | tuple) else float(v)
        except (TypeError, ValueError):
            continue
    return out


def trace(
    model: Any,
    optimizer: Any = None,
    *,
    every: int = 1,
    values: int = 0,
    run: Run | None = None,
) -> Trace:
    """Trace ``model`` (and ``optimizer``) every ``every`` steps; see the module doc."""
    return Trace(model, optimizer, every=every, values=values, run=run)
