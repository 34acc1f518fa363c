"""The one function captured data passes through on its way into the store: :func:`for_store`.

Every string of a run that came from the user passes it: the contract's ``argv`` and
``env_vars``, the environment fingerprint's variables, config files' parsed values, the argparse
namespaces and Hydra configs the child processes parsed, ``ledger.start(config=...)``, the run's
name, tags and notes, and the names of the untracked files. Each kind gets the same passes, in
one order per kind, wherever it comes from:

* the values of the secrets known at launch (a ``Scrubber`` from ``ledger.capture.secrets``):
  each becomes ``[REDACTED:NAME]``, a marker replay fills in from the environment again;
* the name and format rules of ``ledger.capture.redact`` (``--api-key X``, ``HF_TOKEN=...``,
  URLs with passwords, known token formats);
* the content detector (``ledger.capture.secrets.judge``: detect-secrets' plugins, which know
  formats the rules do not, such as Slack webhooks): a string it flags is replaced whole by
  ``[REDACTED:<detector>]``. It judges the value alone, never ``key: value``, so a quoted
  high-entropy or keyword line in a file is its business, not a config value's.

A command line takes the known values first, so that a secret taken from ``$NAME`` keeps its
restorable marker (its arguments were judged by the detector at launch, and the flagged ones
are known values); variables and JSON take the name rules first (a value under a secret name is
gone whatever it was), then the known values. A file name (``path``) is not changed but
refused: the caller leaves the file out, since a file stored under another name is another
file. Byte streams (logs, the code patch, file contents) are scrubbed by the ``Scrubber``
itself and ``redact_lines`` / ``redact_patch`` (``ledger.capture.secrets``), line by line.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, overload

from .redact import redact_argv, redact_env, redact_json, redact_text

if TYPE_CHECKING:
    from .secrets import Scrubber

__all__ = ["for_store", "holds_secret"]


@overload
def for_store(
    kind: Literal["argv"], value: Sequence[str], scrubber: Scrubber | None = ..., where: str = ...
) -> list[str]: ...
@overload
def for_store(
    kind: Literal["env"],
    value: Mapping[str, str],
    scrubber: Scrubber | None = ...,
    where: str = ...,
) -> dict[str, str]: ...
@overload
def for_store(
    kind: Literal["text"], value: str, scrubber: Scrubber | None = ..., where: str = ...
) -> str: ...
@overload
def for_store(
    kind: Literal["json"], value: Any, scrubber: Scrubber | None = ..., where: str = ...
) -> Any: ...
def for_store(
    kind: Literal["argv", "env", "json", "text"],
    value: Any,
    scrubber: Scrubber | None = None,
    where: str = "",
) -> Any:
    """``value`` as it may be stored: a command line (``argv``), variables (``env``), one
    string (``text``: a name, a tag, a note) or JSON-like data (``json``) without the secrets
    the scrubber knows and those the rules and the detector recognise. ``where`` names the
    place for the scrubber's notes (``the environment record``)."""
    where = where or kind
    if kind == "argv":
        args = [str(a) for a in value]
        if scrubber is not None:
            args = [scrubber.text(a, where) for a in args]
        return redact_argv(args)
    if kind == "text":
        text = redact_text(value if scrubber is None else scrubber.text(value, where))
        return _judged(text, scrubber)
    out = redact_env(value) if kind == "env" else redact_json(value)
    out = out if scrubber is None else scrubber.json(out, where)
    return _judged_json(out, scrubber) if kind == "json" else out


def holds_secret(name: str, scrubber: Scrubber | None = None) -> bool:
    """Whether a file name (a relative path) holds a secret: a known value, a token the rules
    or the detector recognise. Such a file is left out, never stored under another name."""
    if scrubber is not None and scrubber.text(name, "a file name") != name:
        return True
    return redact_text(name) != name or _kind(name, scrubber) is not None


def _kind(text: str, scrubber: Scrubber | None) -> str | None:
    from .secrets import judge, may_hold_secret

    if not may_hold_secret(text):  # most strings; and the memo keeps only those that could
        return None
    return judge(text, None if scrubber is None else scrubber.memo)


def _judged(text: str, scrubber: Scrubber | None) -> str:
    kind = _kind(text, scrubber)
    return text if kind is None else f"[REDACTED:{kind}]"


def _judged_json(value: Any, scrubber: Scrubber | None) -> Any:
    if isinstance(value, Mapping):
        out: dict[str, Any] = {}
        for k, v in value.items():
            key = _judged(k, scrubber) if isinstance(k, str) else k
            while key in out:  # two keys that were secrets: both kept, apart
                key += "'"
            out[key] = _judged_json(v, scrubber)
        return out
    if isinstance(value, list | tuple):
        return [_judged_json(v, scrubber) for v in value]
    if isinstance(value, str):
        return _judged(value, scrubber)
    return value
