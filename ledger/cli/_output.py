"""Where the CLI's output goes and how it looks: consoles, JSON, progress, error lines.

Rules every command follows through this module:

- On a terminal, output is rich (colour, tables sized to the window) and long lines are left to
  the terminal to wrap, so rich never puts a line break inside an id. Anywhere else (a pipe, a
  file, a CI log) nothing is wrapped: a line holding an id is never split, tables take their
  natural width, and there is no colour or progress.
- With ``--json``, standard output holds exactly one JSON document; anything else the command
  or the program it runs prints goes to standard error (``json_stdout_guard``).
- Errors are ``ledger: error: …`` plus an optional ``ledger: hint: …`` on standard error.
- Control characters in printed text (ESC, BEL, backspace, C1 codes: anything but newline and
  tab) are shown as ``\x1b``-style escapes, never sent raw: a run name, tag or metric name holding
  ``\x1b[31m`` or ``\x1b]0;…\x07`` must not restyle, retitle or rewrite the reader's terminal.
"""

from __future__ import annotations

import contextlib
import functools
import json
import os
import sys
from collections.abc import Callable, Iterator
from typing import IO, TYPE_CHECKING, Any

from .._columns import UNBOUNDED
from .._units import CONTROLS_BUT_LINES, escape_controls, human_bytes

if TYPE_CHECKING:
    from rich.console import Console

__all__ = [
    "VisibleWriter",
    "console",
    "is_tty",
    "json_stdout_guard",
    "print_json",
    "print_warnings",
    "progress",
    "progress_stages",
    "report_error",
    "strip_trailing_blanks",
    "visible",
]

# Width a console takes when it is not a terminal: wide enough that rich never wraps a line,
# and tables (which are not expanded) only take the width their content needs.
_UNWRAPPED = UNBOUNDED


def visible(text: str) -> str:
    """``text`` with each control character but newline and tab written as its ``\\xNN``
    escape."""
    return escape_controls(text, keep_lines=True)


def strip_trailing_blanks(text: str) -> str:
    """``text`` without blanks or tabs at the end of any line. Line by line, in linear time: a
    regex that looks ahead from every blank of a run took quadratic time, minutes for a cell
    padded to 64 Ki blanks."""
    return "\n".join(line.rstrip(" \t") for line in text.split("\n"))


class VisibleWriter:
    """Bytes in, ``visible`` text out: what a captured log shows on a terminal. The bytes are
    read as UTF-8 (a character split between two writes is kept whole; bytes that are not UTF-8
    show as U+FFFD), and every control character but newline and tab is escaped."""

    def __init__(self, stream: IO[str]) -> None:
        import codecs

        self._stream = stream
        self._decoder = codecs.getincrementaldecoder("utf-8")(errors="replace")

    def write(self, data: bytes) -> int:
        self._stream.write(visible(self._decoder.decode(data)))
        return len(data)

    def close(self) -> None:
        self._stream.write(visible(self._decoder.decode(b"", final=True)))
        self._stream.flush()


def is_tty(stream: IO[str]) -> bool:
    try:
        return stream.isatty()
    except (AttributeError, ValueError):
        return False


@functools.cache
def _console_class() -> type[Console]:
    from rich.console import Console

    class _Console(Console):
        def on_broken_pipe(self) -> None:
            # rich exits 1 here, which reads as "a check failed"; the CLI's entry point turns
            # a BrokenPipeError into the quiet 141 every command gives when its reader leaves.
            self.quiet = True
            raise BrokenPipeError

        def _render_buffer(self, buffer: Any) -> str:
            from rich.segment import Segment

            # rich's own cursor moves are control segments; everything else is printed text.
            buffer = [
                Segment(visible(seg.text), seg.style, seg.control)
                if seg.control is None and CONTROLS_BUT_LINES.search(seg.text)
                else seg
                for seg in buffer
            ]
            text = super()._render_buffer(buffer)
            if self.is_terminal:
                return text
            # Tables pad every cell to its column's width: no trailing blanks in a log or file.
            return strip_trailing_blanks(text)

    return _Console


def console(*, stderr: bool = False) -> Console:
    """A rich console for stdout (or stderr) that never wraps when it is not a terminal."""
    Console = _console_class()
    stream = sys.stderr if stderr else sys.stdout
    if is_tty(stream):
        # The terminal wraps long lines itself (soft wrap), so a copied id stays whole;
        # tables still fit the window.
        return Console(file=stream, highlight=False, soft_wrap=True)
    from .._columns import env_width

    return Console(
        file=stream,
        highlight=False,
        soft_wrap=True,
        # COLUMNS, when set, is the width tables fit, piped or not (``ledger._columns``).
        width=env_width() or _UNWRAPPED,
        no_color=True,
        force_terminal=False,
        emoji=False,
    )


def print_json(value: Any) -> None:
    sys.stdout.write(json.dumps(value, indent=2, sort_keys=True, default=str) + "\n")
    sys.stdout.flush()


def print_warnings(warnings: list[str], hint: str | None = None) -> None:
    """One ``ledger: warning:`` line each, then the hint once, on stderr (stdout stays clean
    for --json)."""
    for w in dict.fromkeys(warnings):
        sys.stderr.write(f"ledger: warning: {w}\n")
    if warnings and hint:
        sys.stderr.write(f"ledger: hint: {hint}\n")


@contextlib.contextmanager
def json_stdout_guard(active: bool) -> Iterator[None]:
    """While ``active``, send everything written to stdout — by Python code and by child
    processes, which inherit file descriptor 1 — to stderr, so the JSON printed afterwards is
    the only thing on stdout."""
    if not active:
        yield
        return
    sys.stdout.flush()
    try:
        fd_out, fd_err = sys.__stdout__.fileno(), sys.__stderr__.fileno()  # type: ignore[union-attr]
        saved = os.dup(fd_out)
    except (AttributeError, OSError, ValueError):  # no real descriptors (embedded use)
        saved = None
    try:
        if saved is not None:
            os.dup2(fd_err, fd_out)
        with contextlib.redirect_stdout(sys.stderr):
            yield
    finally:
        sys.stderr.flush()
        if saved is not None:
            os.dup2(saved, fd_out)
            os.close(saved)


class _NoProgress:
    def update(self, advance: float = 1, description: str | None = None) -> None:
        pass

    def log(self, message: str) -> None:
        pass


class _RichProgress:
    def __init__(self, progress: Any, task: Any) -> None:
        self._progress = progress
        self._task = task

    def update(self, advance: float = 1, description: str | None = None) -> None:
        kwargs: dict[str, Any] = {"advance": advance}
        if description is not None:
            kwargs["description"] = description
        self._progress.update(self._task, **kwargs)

    def log(self, message: str) -> None:
        self._progress.console.print(message, markup=False, highlight=False)


@contextlib.contextmanager
def progress(
    description: str, total: float | None = None, *, enabled: bool = True
) -> Iterator[_NoProgress | _RichProgress]:
    """A progress display on stderr while work runs — only when stderr is a terminal. Elsewhere
    the returned handle does nothing, so logs and pipes stay free of progress noise."""
    if not enabled or not is_tty(sys.stderr) or os.environ.get("LEDGER_NO_PROGRESS"):
        yield _NoProgress()
        return
    from rich.progress import (
        BarColumn,
        Progress,
        SpinnerColumn,
        TextColumn,
        TimeElapsedColumn,
    )

    columns: list[Any] = [SpinnerColumn(), TextColumn("{task.description}")]
    if total is not None:
        columns.append(BarColumn())
        columns.append(TextColumn("{task.completed:.0f}/{task.total:.0f}"))
    columns.append(TimeElapsedColumn())
    with Progress(*columns, console=console(stderr=True), transient=True) as bar:
        task = bar.add_task(description, total=total)
        yield _RichProgress(bar, task)


@contextlib.contextmanager
def _stage_bar(what: str, total: int | None) -> Iterator[Callable[[int, int], None]]:
    with progress(what, total) as bar:
        done = [0, 0]

        def count(files: int, nbytes: int) -> None:
            done[0] += files
            done[1] += nbytes
            files_done = f"{done[0]} file{'' if done[0] == 1 else 's'}"
            bar.update(files, description=f"{what}: {files_done}, {human_bytes(done[1])}")

        yield count


@contextlib.contextmanager
def progress_stages(enabled: bool = True) -> Iterator[None]:
    """Show the library's long stages (ledger._progress: digesting and storing inputs, storing
    outputs, building a replay workspace) while the block runs, on a terminal only."""
    if not enabled or not is_tty(sys.stderr) or os.environ.get("LEDGER_NO_PROGRESS"):
        yield
        return
    from .._progress import listen

    with listen(_stage_bar):
        yield


def report_error(message: str, hint: str | None) -> None:
    sys.stderr.write(f"ledger: error: {visible(message)}\n")
    if hint:
        sys.stderr.write(f"ledger: hint: {visible(hint)}\n")
    sys.stderr.flush()
