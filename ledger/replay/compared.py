"""What a bitwise or tolerance verdict compared: metric values, files, stdout, the exit status.

A verdict is only as strong as what it looked at. A program whose result is its printed text
has no metrics and no output files; one that prints nothing and writes nothing can only show
that its exit status came back. The verdict stores the counts (``settings.compared``) and says
them in its summary, so "reproduced" never stands alone.
"""

from __future__ import annotations

from typing import Any

from .._hashing import hash_bytes

__all__ = [
    "EMPTY_OID",
    "compared_counts",
    "compared_nothing_but_exit",
    "compared_text",
    "is_compared_file",
]

EMPTY_OID = hash_bytes(b"")  # the captured stdout of a program that printed nothing

_LOGS = ("<stdout>", "<stderr>")


def is_compared_file(row: dict[str, Any]) -> bool:
    """An output file or checkpoint that was compared (not a captured log, not ignored)."""
    return row.get("status") != "ignored" and row.get("path") not in _LOGS


def compared_counts(metric_values: int, files: list[dict[str, Any]]) -> dict[str, Any]:
    """``settings.compared`` of a verdict: ``{metric_values, files, stdout, stderr,
    exit_status}``; the exit status is always compared."""
    logs = {f["path"] for f in files if f.get("status") != "ignored"}
    return {
        "metric_values": metric_values,
        "files": sum(1 for f in files if is_compared_file(f)),
        "stdout": "<stdout>" in logs,
        "stderr": "<stderr>" in logs,
        "exit_status": True,
    }


def compared_nothing_but_exit(compared: dict[str, Any]) -> bool:
    return not (
        compared.get("metric_values")
        or compared.get("files")
        or compared.get("stdout")
        or compared.get("stderr")
    )


def compared_text(compared: dict[str, Any]) -> str:
    """``12 metric values, 2 files, stdout and the exit status``; ``the exit status only``."""
    parts = []
    n = int(compared.get("metric_values") or 0)
    if n:
        parts.append(f"{n} metric value{'s' if n != 1 else ''}")
    n = int(compared.get("files") or 0)
    if n:
        parts.append(f"{n} file{'s' if n != 1 else ''}")
    parts += [s for s in ("stdout", "stderr") if compared.get(s)]
    if not parts:
        return "the exit status only"
    return ", ".join(parts) + " and the exit status"
