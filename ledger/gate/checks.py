"""The gate's checks: export, precision, batching and memory, serving (decoding with the KV
cache), poison inputs (imports torch).

Each check function takes the model (weights loaded, eval mode), the spec and the settings of
its group, and returns its items; a model that fails a check never makes it raise.
"""

from __future__ import annotations

import contextlib
import io
import logging
import math
import re
import statistics
import threading
import time
import warnings
from collections.abc import Iterator
from typing import Any

import torch

from ..check._tensors import as_tuple, call, compare, flat, fmt
from ..check.infer import judge, variant_outputs
from ..check.perf import rss_bytes
from ..check.spec import Spec
from ..records.check import CheckItem

__all__ = ["batching", "export", "poison", "precision", "serving"]


def _item(
    group: str, name: str, passed: bool | None, figure: str, required: bool, **d: Any
) -> CheckItem:
    return CheckItem(
        level=group, name=name, passed=passed, required=required, figure=figure, detail=d
    )


def _inputs(spec: Spec, n: int) -> tuple[Any, ...]:
    return as_tuple(spec.batch(n)[0])


@contextlib.contextmanager
def _quiet() -> Iterator[None]:
    """The exporter prints progress and logs warnings (torchvision missing): keep them out of
    the gate's own output."""
    loggers = [
        logging.getLogger(n) for n in ("torch.onnx", "torch.export", "torch._dynamo", "onnxscript")
    ]
    levels = [lg.level for lg in loggers]
    for lg in loggers:
        lg.setLevel(logging.ERROR)
    try:
        with (
            warnings.catch_warnings(),
            contextlib.redirect_stdout(io.StringIO()),
            contextlib.redirect_stderr(io.StringIO()),
        ):
            warnings.simplefilter("ignore")
            yield
    finally:
        for lg, lv in zip(loggers, levels, strict=True):
            lg.setLevel(lv)


_OP_RE = re.compile(r"aten[.:]{1,2}[A-Za-z_][\w.]*|(?<=op_type=)\w+|(?<=OpType: )\w+")


def _ops_in(e: BaseException) -> list[str]:
    text = ""
    seen: BaseException | None = e
    while seen is not None:
        text += f"{seen}\n"
        seen = seen.__cause__ or seen.__context__
    ops = sorted(
        {m.group(0).replace("::", ".").removesuffix(".default") for m in _OP_RE.finditer(text)}
    )
    return ops[:20]


def _first_line(e: BaseException) -> str:
    for line in str(e).splitlines():
        line = re.sub(r"\x1b\[[0-9;]*m", "", line).strip()
        if line:
            return f"{type(e).__name__}: {line[:300]}"
    return type(e).__name__


_WHERE_RE = re.compile(r"# File: (?P<file>\S+?:\d+) in \w+, code: (?P<code>.+)")


def _reason(e: BaseException) -> str:
    """The innermost cause's message (the exporter's outer one only says which step failed),
    and the model's own source line when the message names it."""
    inner: BaseException = e
    while inner.__cause__ is not None:
        inner = inner.__cause__
    text = _first_line(inner)
    m = _WHERE_RE.search(f"{e}\n{inner}")
    if m:
        text += f" (at {m.group('file')}: {m.group('code').strip()[:120]})"
    return text


def export(model: Any, spec: Spec, settings: dict[str, Any]) -> list[CheckItem]:
    """ONNX export (dynamo exporter) with a dynamic batch axis, run in ONNX Runtime (CPU)."""
    required = bool(settings.get("required", True))
    sizes = [int(s) for s in settings.get("batch_sizes", [1, 2, 7, 64])]
    min_cos = float(settings.get("cosine", 0.999))
    try:
        import onnxruntime as ort
    except ImportError:
        return [
            _item(
                "export",
                "onnx",
                None if not required else False,
                "onnxruntime is not installed: pip install 'ledger-repro[gate]'",
                required,
            )
        ]
    example = _inputs(spec, 4)
    batch = torch.export.Dim("batch", min=1, max=max(1024, *sizes))
    dyn = tuple(
        {0: batch} if isinstance(t, torch.Tensor) and t.dim() >= 1 else None for t in example
    )
    t0 = time.perf_counter()
    try:
        with _quiet(), torch.no_grad():
            program = torch.onnx.export(
                model, example, dynamo=True, dynamic_shapes=dyn, verbose=False
            )
        if program is None:
            raise RuntimeError("torch.onnx.export returned no program")
        proto = program.model_proto
        data = proto.SerializeToString()
    except Exception as e:
        ops = _ops_in(e)
        figure = "export failed: " + (f"operators {', '.join(ops)}; " if ops else "") + _reason(e)
        return [
            _item(
                "export",
                "onnx export",
                False,
                figure,
                required,
                operators=ops,
                error=_reason(e),
            )
        ]
    seconds = time.perf_counter() - t0
    op_types = sorted({n.op_type for n in proto.graph.node})
    opset = max((o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")), default=0)
    items = [
        _item(
            "export",
            "onnx export",
            True,
            f"{len(proto.graph.node)} nodes, {len(op_types)} op types, opset {opset}, "
            f"{len(data) / 2**20:.1f} MiB in {seconds:.1f} s",
            required,
            op_types=op_types,
            bytes=len(data),
            seconds=seconds,
        )
    ]
    try:
        session = ort.InferenceSession(data, providers=["CPUExecutionProvider"])
    except Exception as e:
        ops = _ops_in(e)
        items.append(
            _item(
                "export",
                "onnxruntime load",
                False,
                f"ONNX Runtime refused the model: {_first_line(e)}",
                required,
                operators=ops,
            )
        )
        return items
    names = [i.name for i in session.get_inputs()]
    for n in sizes:
        inputs = _inputs(spec, n)
        try:
            feed = {name: t.detach().numpy() for name, t in zip(names, inputs, strict=False)}
            got = [torch.from_numpy(a) for a in session.run(None, feed)]
        except Exception as e:
            items.append(
                _item(
                    "export",
                    f"batch {n}",
                    False,
                    f"ONNX Runtime failed: {_first_line(e)}",
                    required,
                    operators=_ops_in(e),
                )
            )
            continue
        with torch.no_grad():
            want = flat(call(model, inputs))
        c = compare(got, want, torch.float32)
        ok = c.cosine >= min_cos and c.close and c.finite
        figure = f"cosine {c.cosine:.6f}, max |diff| {fmt(c.max_abs)}" + (
            "" if c.close else ", not close"
        )
        if not ok and c.worst_sample is not None:
            figure += f"; worst sample {c.worst_sample}"
        items.append(_item("export", f"batch {n}", ok, figure, required, **c.to_json()))
    return items


def precision(model: Any, spec: Spec, settings: dict[str, Any]) -> list[CheckItem]:
    required = bool(settings.get("required", True))
    min_cos = float(settings.get("cosine", 0.999))
    n = int(settings.get("batch_size", 16))
    names = list(settings.get("dtypes", ["bf16", "fp16", "int8"]))
    inputs = _inputs(spec, n)
    with torch.no_grad():
        ref = call(model, inputs)
    items = []
    has_linear = any(isinstance(m, torch.nn.Linear) for m in model.modules())
    for name in names:
        if name == "int8" and not has_linear:
            items.append(
                _item(
                    "precision",
                    "fp32 vs int8",
                    None,
                    "no nn.Linear to quantize dynamically: skipped",
                    required,
                )
            )
            continue

        def run(name: str = name) -> tuple[Any, torch.dtype]:
            return variant_outputs(model, inputs, name)

        item = judge(
            "precision",
            f"fp32 vs {name}",
            run,
            ref,
            min_cos,
            required,
        )
        # The gate's rule is the cosine (seed 003); assert_close is reported, not required.
        cos = item.detail.get("cosine")
        if (
            item.passed is False
            and isinstance(cos, float)
            and cos >= min_cos
            and item.detail.get("finite")
        ):
            item = item.model_copy(update={"passed": True})
        items.append(item)
    return items


def _percentile(values: list[float], q: float) -> float:
    s = sorted(values)
    return s[min(len(s) - 1, math.ceil(q * len(s)) - 1)] if s else math.nan


def batching(model: Any, spec: Spec, settings: dict[str, Any]) -> list[CheckItem]:
    required = bool(settings.get("required", True))
    min_cos = float(settings.get("cosine", 0.999))
    n = int(settings.get("batch_size", 8))
    rounds = int(settings.get("rounds", 60))
    threads = int(settings.get("threads", 4))
    growth_mib = float(settings.get("growth_mib", 32))
    sizes = [int(s) for s in settings.get("batch_sizes", [1, 8, 32])]
    items = []
    inputs = _inputs(spec, n)
    with torch.no_grad():
        together = flat(call(model, inputs))
        alone = [flat(call(model, tuple(t[i : i + 1] for t in inputs))) for i in range(n)]
        perm = torch.randperm(n, generator=torch.Generator().manual_seed(0))
        shuffled = flat(call(model, tuple(t[perm] for t in inputs)))
    single = [torch.cat([a[k] for a in alone]) for k in range(len(together))]
    c1 = compare(single, together)
    c2 = compare([s[torch.argsort(perm)] for s in shuffled], together)
    worst = min(c1.cosine, c2.cosine)
    ok = c1.close and c2.close and worst >= min_cos
    figure = (
        f"{n} samples alone vs together vs shuffled: cosine {worst:.6f}, "
        f"max |diff| {fmt(max(c1.max_abs, c2.max_abs))}"
    )
    worst_i = c1.worst_sample if c1.cosine <= c2.cosine else c2.worst_sample
    if not ok:
        figure += f"; outputs depend on batch composition (worst sample {worst_i})"
    items.append(
        _item(
            "batching",
            "batch independence",
            ok,
            figure,
            required,
            alone=c1.to_json(),
            shuffled=c2.to_json(),
        )
    )

    # Concurrent requests: every thread's answer must equal the one computed alone.
    reqs = [_inputs(spec, sizes[i % len(sizes)]) for i in range(max(threads * 4, 8))]
    with torch.no_grad():
        expected = [flat(call(model, r)) for r in reqs]
    got: list[Any] = [None] * len(reqs)
    errors: list[str] = []

    def worker(k: int) -> None:
        for i in range(k, len(reqs), threads):
            try:
                with torch.no_grad():
                    got[i] = flat(call(model, reqs[i]))
            except Exception as e:  # reported as a failed check below
                errors.append(_first_line(e))

    pool = [threading.Thread(target=worker, args=(k,)) for k in range(threads)]
    for t in pool:
        t.start()
    for t in pool:
        t.join()
    bad = [
        i
        for i, (g, e) in enumerate(zip(got, expected, strict=True))
        if g is None or not compare(g, e).close
    ]
    items.append(
        _item(
            "batching",
            "concurrent requests",
            not bad and not errors,
            f"{len(reqs)} requests on {threads} threads: "
            f"{len(reqs) - len(bad)} match the sequential answers"
            + (f"; errors: {errors[0]}" if errors else ""),
            required,
            mismatched=bad,
            errors=errors[:5],
        )
    )

    # Memory and latency over many rounds, warm-up excluded.
    lat: dict[int, list[float]] = {s: [] for s in sizes}
    warm = max(3, rounds // 10)
    rss0 = 0
    pre = {s: _inputs(spec, s) for s in sizes}
    with torch.no_grad():
        for r in range(rounds + warm):
            if r == warm:
                rss0 = rss_bytes()
            s = sizes[r % len(sizes)]
            t0 = time.perf_counter()
            call(model, pre[s])
            if r >= warm:
                lat[s].append(time.perf_counter() - t0)
    growth = (rss_bytes() - rss0) / 2**20
    stats = {
        str(s): {"p50_ms": statistics.median(v) * 1e3, "p95_ms": _percentile(v, 0.95) * 1e3}
        for s, v in lat.items()
        if v
    }
    shown = ", ".join(
        f"b{s} p50 {fmt(d['p50_ms'])}/p95 {fmt(d['p95_ms'])} ms" for s, d in stats.items()
    )
    items.append(
        _item(
            "batching",
            "memory stable",
            growth <= growth_mib,
            f"RSS grew {growth:.1f} MiB over {rounds} rounds "
            f"(bound {fmt(growth_mib)} MiB); {shown}",
            required,
            rss_growth_mib=growth,
            latency=stats,
            rounds=rounds,
        )
    )
    return items


def serving(model: Any, spec: Spec, settings: dict[str, Any]) -> list[CheckItem]:
    """Token-by-token decoding with the model's KV cache (or the spec's ``decode`` hook) gives
    the full forward's logits at every position; skipped for a model with neither."""
    from ..check.kvcache import kv_cache_item

    required = bool(settings.get("required", True))
    return [
        kv_cache_item(model, spec, settings, level="serving", name="kv-cache", required=required)
    ]


def _poison_cases(spec: Spec, settings: dict[str, Any]) -> list[tuple[str, Any]]:
    base = _inputs(spec, 4)
    first = base[0]
    rest = base[1:]

    def with_first(t: torch.Tensor) -> tuple[Any, ...]:
        return (t, *(r[: t.shape[0]] if r.dim() else r for r in rest))

    cases: list[tuple[str, Any]] = [("all zeros", with_first(torch.zeros_like(first)))]
    cases.append(("empty batch", with_first(first[:0])))
    axis, max_len = spec.sequence_axis, spec.max_length
    if axis is not None:
        length = (max_len + 1) if max_len else first.shape[axis] * 4
        reps = -(-length // first.shape[axis])
        over = torch.cat([first] * reps, dim=axis).narrow(axis, 0, length)
        cases.append((f"over-length ({length})", with_first(over)))
    if first.is_floating_point():
        for name, v in (
            ("+1e4", 1e4),
            ("-1e4", -1e4),
            ("subnormal", 1e-40),
            ("NaN", math.nan),
            ("+Inf", math.inf),
            ("-Inf", -math.inf),
        ):
            cases.append((name, with_first(torch.full_like(first, v))))
    else:
        cases.append(("id -1", with_first(torch.full_like(first, -1))))
        cases.append(("id 2**31-1", with_first(torch.full_like(first, 2**31 - 1))))
    huge = int(settings.get("huge_batch", 1024))
    big = _inputs(spec, huge)
    cases.append((f"huge batch ({huge})", big))
    return cases


_NONFINITE_CASES = ("NaN", "+Inf", "-Inf")
# What a model that passes NaN/Inf inputs through should do instead (docs/how-to/
# verify-and-gate.md, "NaN and Inf inputs": the two answers, both exportable).
_NONFINITE_HINT = (
    "; the model must declare its answer to NaN/Inf inputs: sanitize them in forward "
    "(torch.nan_to_num) or reject them (raise ValueError when not torch.isfinite(x).all(), "
    "skipped while torch.compiler.is_exporting())"
)


def poison(model: Any, spec: Spec, settings: dict[str, Any]) -> list[CheckItem]:
    """Each poison input must be handled (finite output) or rejected with a clear error: a
    ValueError/TypeError (or a type listed under ``accept_errors``) with a message. A silent
    non-finite output, or any other exception (an internal error), fails."""
    required = bool(settings.get("required", True))
    accept = {"ValueError", "TypeError", *map(str, settings.get("accept_errors", []))}
    items = []
    for name, inputs in _poison_cases(spec, settings):
        try:
            with torch.no_grad():
                outs = flat(call(model, inputs))
        except Exception as e:
            msg = _first_line(e)
            clear = type(e).__name__ in accept and bool(str(e).strip())
            outcome = "rejected" if clear else "internal error"
            items.append(
                _item(
                    "poison", name, clear, f"{outcome}: {msg}", required, outcome=outcome, error=msg
                )
            )
            continue
        finite = all(bool(torch.isfinite(o).all()) for o in outs if o.is_floating_point())
        shapes = [tuple(o.shape) for o in outs]
        if finite:
            items.append(
                _item(
                    "poison",
                    name,
                    True,
                    f"handled: finite output {shapes}",
                    required,
                    outcome="handled",
                )
            )
        else:
            bad = sum(int((~torch.isfinite(o)).sum()) for o in outs if o.is_floating_point())
            items.append(
                _item(
                    "poison",
                    name,
                    False,
                    f"silent non-finite output: {bad} NaN/Inf values in {shapes}"
                    + (_NONFINITE_HINT if name in _NONFINITE_CASES else ""),
                    required,
                    outcome="silent-nonfinite",
                    nonfinite=bad,
                )
            )
    return items
