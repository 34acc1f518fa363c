"""The one function captured data passes through on its way into the store: :func:`for_store`.

Every capture that stores a command line, environment variables or config values calls it: the
contract's ``argv`` and ``env_vars``, the environment fingerprint's variables, config files, the
argparse namespaces and Hydra configs the child processes parsed, ``ledger.start(config=...)``.
Each kind gets the same two passes, in one order per kind, wherever it comes from:

* the values of the secrets known at launch (a ``Scrubber`` from ``ledger.capture.secrets``):
  each becomes ``[REDACTED:NAME]``, a marker replay fills in from the environment again;
* the name and format rules of ``ledger.capture.redact`` (``--api-key X``, ``HF_TOKEN=...``,
  URLs with passwords, known token formats).

A command line takes the known values first, so that a secret taken from ``$NAME`` keeps its
restorable marker; variables and JSON take the name rules first (a value under a secret name is
gone whatever it was), then the known values. Log streams and file bytes are scrubbed by the
``Scrubber`` itself (``ledger.capture.secrets``), which works on bytes as they arrive.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any, Literal, overload

from .redact import redact_argv, redact_env, redact_json

if TYPE_CHECKING:
    from .secrets import Scrubber

__all__ = ["for_store"]


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
    kind: Literal["json"], value: Any, scrubber: Scrubber | None = ..., where: str = ...
) -> Any: ...
def for_store(
    kind: Literal["argv", "env", "json"],
    value: Any,
    scrubber: Scrubber | None = None,
    where: str = "",
) -> Any:
    """``value`` as it may be stored: a command line (``argv``), variables (``env``) or JSON-like
    data (``json``) without the secrets the scrubber knows and those the rules recognise.
    ``where`` names the place for the scrubber's notes (``the environment record``)."""
    where = where or kind
    if kind == "argv":
        args = [str(a) for a in value]
        if scrubber is not None:
            args = [scrubber.text(a, where) for a in args]
        return redact_argv(args)
    out = redact_env(value) if kind == "env" else redact_json(value)
    return out if scrubber is None else scrubber.json(out, where)
