"""Secrets by value and by content, for everything a run captures from the user.

Two mechanisms complement the name rules of ``redact.py``:

* **Known values.** Every secret the run was given at launch (values of secret-named
  environment variables, secret parts of argv, values the detector flags) is scrubbed from all
  captured data, whatever its length, together with its base64, URL-encoded and hex forms.
* **Content detection.** Yelp's ``detect-secrets`` plugins (AWS, GitHub, Slack, private keys,
  high-entropy strings, basic-auth URLs, keyword assignments, ...) plus the name rules of
  ``redact.py`` are run over each line of captured text (logs, the dirty patch, untracked
  files, config files); a line that matches is replaced by a marker.

Only user data goes through here, never the ledger's own records: object ids are long hex
strings that a content detector could take for keys. ``detect-secrets`` is imported on first
use (it costs ~0.15 s).
"""

from __future__ import annotations

import base64
import codecs
import fnmatch
import os
import re
import threading
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path
from typing import TYPE_CHECKING, Any
from urllib.parse import quote, quote_plus

from .redact import is_placeholder, is_secret_name, redact_argv, redact_text

if TYPE_CHECKING:
    from .form_match import FormMatcher
    from .scrub_stream import ScrubStream
    from .secret_memo import CleanMemo

__all__ = [
    "ENV_FILE_PATTERNS",
    "HUNK_HEADER",
    "MAX_DETECT_BYTES",
    "MAX_DETECT_LINE",
    "SECRET_NAME",
    "Finding",
    "KnownSecret",
    "Scrubber",
    "detect_line",
    "find_marker",
    "is_setting",
    "is_source_code",
    "judge",
    "launch_secrets",
    "marker",
    "may_hold_secret",
    "preload",
    "redact_lines",
    "redact_patch",
    "restore_argv",
    "restore_patch_context",
    "scrub_run_dir",
    "skipped_secret_file",
]

# Untracked files never captured (their names are noted instead). ``LEDGER_SECRET_FILES``
# replaces this list: comma-separated glob patterns, matched against the file name and path;
# an empty value captures every file.
ENV_FILE_PATTERNS = (
    ".env",
    ".env.*",
    "*.env",
    ".envrc",
    ".netrc",
    ".pgpass",
    ".npmrc",
    ".pypirc",
    "*.pem",
    "*.key",
    "*.p12",
    "*.pfx",
    "id_rsa*",
    "id_dsa*",
    "id_ecdsa*",
    "id_ed25519*",
)
# Captured text larger than this is scrubbed of known values only, not scanned line by line.
MAX_DETECT_BYTES = 64 << 20
# Lines longer than this skip the detect-secrets plugins (some take ~15 us a byte: a 50 MB line
# of output would hold the seal for many minutes); the name rules, which take linear time and
# know the token formats, URL passwords and ``key=value`` assignments, still run over them.
MAX_DETECT_LINE = 64 << 10
# Content detection flags nothing shorter than this (values known at launch have no minimum).
MIN_CONTENT_LEN = 8
# Values shorter than this are scrubbed only where they stand alone (not inside a longer word):
# a two-letter password would otherwise erase every occurrence of those letters in a log.
_STANDALONE_BELOW = 3
# Plugins left out: hex strings are the ids of checkpoints, commits and objects that training
# logs print all the time; a public IP address is not a credential.
_SKIPPED_PLUGINS = frozenset({"HexHighEntropyString", "IPPublicDetector"})


# Where a finding is about a file's name rather than one of its lines (the name is not said).
SECRET_NAME = "a file whose name holds a secret, left out"
# Ends a finding's kind when the line was a hunk header's quote (the patch applies the same).
HUNK_HEADER = ", in a hunk header"


def marker(source: str) -> str:
    return f"[REDACTED:{source}]"


@dataclass(frozen=True)
class KnownSecret:
    source: str  # the environment variable's name, or "argv"
    value: str


@dataclass(frozen=True)
class Finding:
    where: str  # a file path, "stdout", ...
    line: int  # 1-based
    kind: str  # what matched: a detector's name, or "name rule"
    kept: bool = False  # a patch's context or removed line: replay takes it from the commit

    def describe(self) -> str:
        return f"{self.where}:{self.line} ({self.kind})"


# --- content detection ---------------------------------------------------------------------------


@lru_cache(maxsize=1)
def _plugins() -> tuple[Any, ...]:
    from detect_secrets.core.plugins.util import get_mapping_from_secret_type_to_class
    from detect_secrets.settings import get_settings

    # ``analyze_line`` would send a match to its provider to check it when this filter is on
    # (it is off by default): a secret must never leave the machine.
    get_settings().disable_filters(
        "detect_secrets.filters.common.is_ignored_due_to_verification_policies"
    )
    classes: Iterable[Any] = get_mapping_from_secret_type_to_class().values()
    return tuple(cls() for cls in classes if cls.__name__ not in _SKIPPED_PLUGINS)


def preload(delay: float = 0.0) -> threading.Timer:
    """Import the detectors in a thread after ``delay`` seconds: ``ledger record`` calls this
    once the command is launched, so the import (0.2-0.4 s) overlaps a run that lasts, before
    its logs are scanned; it cancels the timer when the command ends sooner (a short run's logs
    rarely need the detectors, and then they are imported only if they do)."""
    timer = threading.Timer(delay, _plugins)
    timer.name = "ledger-detect-secrets"
    timer.daemon = True
    timer.start()
    return timer


# A line that holds a secret, by any detector or name rule, matches this: a word of a secret
# name or keyword, a URL (user info), or a token of 15+ characters (every token format the
# detectors know is longer). Other lines skip the ~25 detectors: a typical log line then costs
# a few microseconds instead of a few hundred.
_CANDIDATE_WORDS = re.compile(
    "secret|pass|pwd|cred|auth|priv|session|cookie|signature|dsn|key|token|sid|bearer|basic"
    "|cloudant|softlayer|ibm|://"
)  # searched in the lower-cased line: a case-insensitive alternation is ten times slower
_CANDIDATE_TOKEN = re.compile(r"[A-Za-z0-9+/_-]{15}")


def _candidate(line: str) -> bool:
    return bool(_CANDIDATE_TOKEN.search(line) or _CANDIDATE_WORDS.search(line.lower()))


_WINDOW = 4096
_OVERLAP = 512


def detect_line(line: str, filename: str = "captured.yaml") -> str | None:
    """What makes ``line`` hold a secret (a detector's name, or "name rule"), or None.

    ``filename`` picks the keyword detector's grammar; the YAML default accepts ``key: value``
    and ``KEY=value`` alike."""
    if len(line) < 4 or not _candidate(line):
        return None
    code = is_source_code(filename)
    if len(line) > MAX_DETECT_LINE:
        return "name rule" if redact_text(line, code=code) != line else None
    if len(line) > _WINDOW:
        # Some detectors' patterns are quadratic in a line's length (a 64 KiB line of
        # ``ab://`` takes seconds): long lines are judged in overlapping windows, so a
        # secret of up to _OVERLAP characters is always seen whole in one of them.
        step = _WINDOW - _OVERLAP
        for i in range(0, len(line) - _OVERLAP, step):
            kind = detect_line(line[i : i + _WINDOW], filename)
            if kind is not None:
                return kind
        return None
    for plugin in _plugins():
        for secret in plugin.analyze_line(filename=filename, line=line, line_number=0):
            value = secret.secret_value or ""
            if _not_a_secret(value, line, plugin):
                continue
            # A keyword detector's short value (``password: pw1``) is a secret too; other
            # detectors must see a long enough token.
            if plugin.__class__.__name__ == "KeywordDetector" or len(value) >= MIN_CONTENT_LEN:
                return str(secret.type)
            if secret.type in {"GitHub Token", "Private Key", "Slack Token", "AWS Access Key"}:
                return str(secret.type)
    return "name rule" if redact_text(line, code=code) != line else None


# Source code, where ``name = value`` without quotes is an expression, not a secret
# (``redact_text(code=True)``). Shell, YAML, INI, TOML and .env files are not: there a bare
# value is the literal.
_SOURCE_SUFFIXES = frozenset(
    {
        ".py", ".pyi", ".pyx", ".pxd", ".js", ".mjs", ".cjs", ".ts", ".tsx", ".jsx", ".java",
        ".kt", ".scala", ".go", ".rs", ".c", ".h", ".cc", ".cpp", ".cxx", ".hpp", ".cu", ".cuh",
        ".cs", ".swift", ".rb", ".lua", ".jl", ".r", ".m",
    }
)  # fmt: skip


def is_source_code(filename: str) -> bool:
    """Whether ``filename`` names source code (by its suffix, case-insensitive)."""
    return os.path.splitext(filename)[1].lower() in _SOURCE_SUFFIXES


def _not_a_secret(value: str, line: str, plugin: Any) -> bool:
    """The heuristic filters ``detect-secrets`` applies in its own scans (its default
    settings), which ``analyze_line`` alone does not: a templated value (``${DB_PASSWORD}``,
    ``{token}``, ``<key>``), a ``$VARIABLE``, an indirect reference (``api_key =
    os.environ["KEY"]``), an id (``client_id``), a value without a letter; and for the
    entropy detectors a UUID or a sequential string (``ABCDEF...``; a keyword's ``pwd=abcd``
    stays a password). Plus ``redact.is_placeholder``: ``password: secret``."""
    from detect_secrets.filters import heuristic as h

    if "HighEntropy" in type(plugin).__name__ and (
        h.is_sequential_string(value) or h.is_potential_uuid(value)
    ):
        return True  # ``ABCDEFGHIJKLMNOPQRSTUVWXYZ`` is high entropy and no key
    return bool(
        h.is_templated_secret(value)
        or h.is_prefixed_with_dollar_sign(value)
        or h.is_indirect_reference(line)
        or h.is_likely_id_string(value, line, plugin)
        or h.is_not_alphanumeric_string(value)
        or is_placeholder(value)
    )


def judge(line: str, memo: CleanMemo | None = None) -> str | None:
    """``detect_line`` for a value of a run (a variable, an argument), skipping the lines
    ``memo`` holds (found clean by earlier runs) and adding those found clean now."""
    if memo is not None and line in memo:
        return None
    kind = detect_line(line)
    if kind is None and memo is not None:
        memo.add(line)
    return kind


def may_hold_secret(text: str) -> bool:
    """Whether ``detect_line`` could flag ``text`` at all (most strings cannot: no word of a
    secret name, no URL, no run of 15 token characters), checked in a few microseconds."""
    return len(text) >= 4 and _candidate(text)


class _Judge:
    """``detect_line`` over consecutive lines, which also redacts the body of a PEM private key
    block (its base64 lines hold no marker a line detector could see)."""

    def __init__(self, filename: str) -> None:
        self.filename = filename
        self.in_key = False

    def __call__(self, text: str) -> str | None:
        if self.in_key:
            self.in_key = "-----END" not in text
            return "Private Key"
        if "-----BEGIN" in text and "PRIVATE KEY" in text:
            self.in_key = "-----END" not in text
            return "Private Key"
        return detect_line(text, self.filename)


def _redact_line(line: bytes, kind: str, keep: int = 0) -> bytes:
    head = line[:keep]
    body = line[keep:]
    indent = body[: len(body) - len(body.lstrip())]
    end = b"\r\n" if line.endswith(b"\r\n") else b"\n" if line.endswith(b"\n") else b""
    return head + indent + f"[REDACTED:{kind}]".encode() + end


def find_marker(line: bytes) -> str | None:
    """The first ``[REDACTED:...]`` marker in ``line`` (a detector's, the name rule's or a
    known value's), or None."""
    m = _SCRUBBED.search(line)
    return m[0].decode("ascii") if m else None


def redact_lines(data: bytes, where: str) -> tuple[bytes, list[Finding]]:
    """Replace each line of ``data`` that holds a secret; binary data is returned unchanged."""
    if b"\0" in data[:8192]:
        return data, []
    judge = _Judge(os.path.basename(where) or where)
    out: list[bytes] = []
    found: list[Finding] = []
    for n, line in enumerate(data.splitlines(keepends=True), 1):
        kind = judge(line.decode("utf-8", "replace"))
        if kind is None:
            if _SCRUBBED.search(line):  # a known value was replaced inside this line
                found.append(Finding(where, n, "known secret value"))
            out.append(line)
            continue
        out.append(_redact_line(line, kind))
        found.append(Finding(where, n, kind))
    return (b"".join(out) if found else data), found


# A hunk header: where the hunk starts in the old and the new file, and how many lines of each
# it holds (1 when left out). Only the counts tell a hunk's own ``--- x`` line (a removed line
# ``-- x``) from the next file's header.
_HUNK = re.compile(rb"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
_SCRUBBED = re.compile(rb"\[REDACTED:[A-Za-z0-9_ ]+\]")


class _Hunk:
    """Lines still to come in the current hunk of a patch, old and new side."""

    def __init__(self) -> None:
        self.old = self.new = 0

    def start(self, m: re.Match[bytes]) -> None:
        self.old = int(m[2] or 1)
        self.new = int(m[4] or 1)

    def body(self, line: bytes) -> bool:
        """Whether ``line`` is a line of the hunk (counting it), not a header after it."""
        tag = line[:1]
        old = self.old > 0 and tag in {b" ", b"-"}
        new = self.new > 0 and tag in {b" ", b"+"}
        if not (old or new):
            return False
        self.old -= tag != b"+"
        self.new -= tag != b"-"
        return True


def _patch_path(line: bytes) -> str:
    """The file a ``--- a/X`` or ``+++ b/X`` header names (git quotes unusual names, and ends
    a name holding a space with a tab)."""
    name = line[4:].rstrip(b"\r\n").removesuffix(b"\t")
    if name[:1] == b'"' and name[-1:] == b'"':
        name = codecs.escape_decode(name[1:-1])[0]
    return name[2:].decode("utf-8", "replace")


def redact_patch(data: bytes, memo: CleanMemo | None = None) -> tuple[bytes, list[Finding]]:
    """Redact the lines of a git patch that hold secrets; findings name the file and its line
    in the new version (or in the old one, for a removed line).

    Besides the lines of each hunk, the text git prints after a hunk header (the enclosing
    function's line, ``@@ -8,4 +8,4 @@ print("...")``) is judged: when it holds a secret it is
    dropped (``git apply`` ignores it). A file whose *name* holds a secret is left out of the
    patch whole: its name is on every header line, and cannot be changed without changing the
    file replay writes."""
    out: list[bytes] = []
    found: list[Finding] = []
    path = "?"
    judge_line = _Judge(path)
    new_line = 0
    hunk = _Hunk()
    dropping = False  # the lines of a file whose name holds a secret
    for line in data.splitlines(keepends=True):
        if hunk.body(line):
            if dropping:
                continue
            number = new_line
            if line[:1] != b"-":
                new_line += 1
            kind = judge_line(line[1:].decode("utf-8", "replace"))
            kept = line[:1] != b"+"
            if kind is not None:
                out.append(_redact_line(line, kind, keep=1))
                found.append(Finding(path, number, kind, kept))
                continue
            if _SCRUBBED.search(line):
                found.append(Finding(path, number, "known secret value", kept))
        elif line.startswith(b"diff --git "):
            kind = judge(line[len(b"diff --git ") :].decode("utf-8", "replace").strip(), memo)
            dropping = kind is not None
            if dropping:
                found.append(Finding(SECRET_NAME, 0, str(kind), kept=True))
        elif dropping:
            if m := _HUNK.match(line):
                hunk.start(m)
            continue
        elif line.startswith((b"--- a/", b'--- "a/', b"+++ b/", b'+++ "b/')):
            path = _patch_path(line)
            judge_line = _Judge(os.path.basename(path))
        elif m := _HUNK.match(line):
            new_line = int(m[3])
            hunk.start(m)
            context = line[m.end() :].strip()
            kind = judge(context.decode("utf-8", "replace"), memo) if context else None
            if kind is not None:
                end = b"\r\n" if line.endswith(b"\r\n") else b"\n" if line.endswith(b"\n") else b""
                out.append(line[: m.end()] + end)
                found.append(Finding(path, new_line, f"{kind}{HUNK_HEADER}", kept=True))
                continue
        if not dropping:
            out.append(line)
    return (b"".join(out) if found else data), found


def skipped_secret_file(path: str, environ: Mapping[str, str] | None = None) -> bool:
    """Whether an untracked file is a credentials file that is never captured."""
    environ = os.environ if environ is None else environ
    setting = environ.get("LEDGER_SECRET_FILES")
    patterns: Iterable[str] = (
        ENV_FILE_PATTERNS
        if setting is None
        else [p.strip() for p in setting.split(",") if p.strip()]
    )
    name = path.rstrip("/").rsplit("/", 1)[-1]
    return any(fnmatch.fnmatchcase(name, p) or fnmatch.fnmatchcase(path, p) for p in patterns)


# --- known values ------------------------------------------------------------------------------


def launch_secrets(
    argv: Sequence[str], environ: Mapping[str, str], memo: CleanMemo | None = None
) -> list[KnownSecret]:
    """The secrets a run is given at launch: secret-named variables (any length, except empty),
    variables whose value the detector flags, and the secret parts of the command line.

    ``memo`` holds lines found clean by earlier runs: they skip the detectors (whose import is
    most of the cost when the environment has not changed); lines found clean now are added."""

    found: dict[str, KnownSecret] = {}
    for name, value in environ.items():
        if name.startswith("LEDGER_") or _not_a_value(value) or _is_path_list(value):
            continue
        if is_secret_name(name) or (
            len(value) >= MIN_CONTENT_LEN and judge(f"{name}={value}", memo) is not None
        ):
            found.setdefault(value, KnownSecret(name, value))
    redacted = redact_argv(list(argv))
    for i, (raw, red) in enumerate(zip(argv, redacted, strict=True)):
        parts: list[str] = []
        if raw != red:
            parts.append(_differing_part(raw, red))
        elif i > 0 and len(raw) >= MIN_CONTENT_LEN and judge(raw, memo) is not None:
            # The value of an option or a positional ``key=value`` (a Hydra override): the
            # captured config holds it without its key.
            parts.append(raw.partition("=")[2] if "=" in raw else raw)
        for part in parts:
            if not _not_a_value(part) and part.strip("*") and "redacted" not in part:
                found.setdefault(part, KnownSecret("argv", part))
    return sorted(found.values(), key=lambda k: len(k.value), reverse=True)


# Settings, not credentials: ``AUTH_ENABLED=true``, ``SECRETS_BACKEND_RETRIES=3``. Scrubbing
# them would erase every "true" or "3" from the logs.
_FLAG_VALUES = frozenset({"true", "false", "yes", "no", "on", "off", "none", "null", "nil"})


def is_setting(value: str) -> bool:
    """A flag, a one- or two-digit number or nothing: never scrubbed as a secret."""
    return _not_a_value(value)


def _not_a_value(value: str) -> bool:
    v = value.strip().lower()
    return not v or v in _FLAG_VALUES or (v.isdigit() and len(v) <= 2)


def _is_path_list(value: str) -> bool:
    """``PYTHONPATH``, ``SSH_AUTH_SOCK``, ``GOOGLE_APPLICATION_CREDENTIALS``: paths, at least one
    of which exists. The file may hold a secret; its path is not one (and scrubbing it would
    hide where a run read from)."""
    parts = [p for p in value.split(os.pathsep) if p]
    if not parts or not all(p.startswith(("/", "~/", "./", "../")) for p in parts):
        return False
    return any(os.path.exists(os.path.expanduser(p)) for p in parts)


def _differing_part(raw: str, red: str) -> str:
    """What redaction removed from ``raw``: from where the first marker starts in ``red`` to
    where the last one ends (the text around them is ``raw``'s own). Not the part between the
    common prefix and suffix: that would eat a secret's characters that match the marker's
    ends (a password ending in ``*``), and leave them in the logs."""
    start = red.find(_STARS)
    if start < 0:  # every redaction puts a marker in; were one not to, keep the whole
        return raw
    after = len(red) - (red.rfind(_STARS) + len(_STARS))
    return raw[start : len(raw) - after]


# Both markers redact_argv puts in (``***redacted***``, and ``***`` for a URL's password)
# start and end with this.
_STARS = "***"


def _b64_cores(raw: bytes) -> set[bytes]:
    """Base64 text that encodes ``raw`` wherever it starts in an encoded stream: for each of
    the three alignments, the characters that depend on ``raw``'s bytes only."""
    cores: set[bytes] = set()
    for k in range(3):
        enc = base64.b64encode(b"\0" * k + raw)
        start = -(-8 * k // 6)
        end = (8 * (k + len(raw))) // 6
        core = enc[start:end]
        # Shorter cores would match ordinary words; a 5-byte secret still gives 6 characters.
        if len(core) >= 6 or (k == 0 and len(core) >= 2):
            cores.add(core)
            cores.add(core.replace(b"+", b"-").replace(b"/", b"_"))
    full = base64.b64encode(raw)
    cores |= {full, full.rstrip(b"="), base64.urlsafe_b64encode(raw).rstrip(b"=")}
    return cores


def _forms(value: str) -> set[bytes]:
    raw = value.encode("utf-8", "surrogateescape")
    # A value that is not UTF-8 (os.environ holds its bytes as surrogates) is encoded as such.
    esc = {"encoding": "utf-8", "errors": "surrogateescape"}
    forms = {raw, quote(value, safe="", **esc).encode(), quote(value, **esc).encode()}
    forms.add(quote_plus(value, **esc).encode())
    forms |= _b64_cores(raw)
    forms |= {raw.hex().encode(), raw.hex().upper().encode()}
    return {f for f in forms if f}


@dataclass
class Scrubber:
    """Replaces every known secret value (and its encoded forms) by ``[REDACTED:SOURCE]``."""

    known: list[KnownSecret]
    hits: dict[str, set[str]] = field(default_factory=dict)  # source -> where it was found
    _pattern: FormMatcher | None = field(default=None, repr=False)
    _by_form: dict[bytes, str] = field(default_factory=dict, repr=False)
    _binary: FormMatcher | None = field(default=None, repr=False)
    longest_form: int = field(default=0, init=False)  # bytes: what a stream must hold back
    # Lines found clean by earlier runs: the content detector skips them (ledger.capture.boundary)
    memo: CleanMemo | None = field(default=None, repr=False, compare=False)

    def __post_init__(self) -> None:
        from .form_match import FormMatcher

        short: list[bytes] = []
        long: list[bytes] = []
        for k in self.known:
            for f in _forms(k.value):
                self._by_form.setdefault(f, k.source)
                (short if len(f) < _STANDALONE_BELOW else long).append(f)
        self.longest_form = max(map(len, self._by_form), default=0)
        # The longest form wins where forms overlap; short ones only where they stand alone.
        if long or short:
            self._pattern = FormMatcher(long, short)
        in_binary = [f for f in long if len(f) >= MIN_CONTENT_LEN]
        if in_binary:
            self._binary = FormMatcher(in_binary)

    def scrub(self, data: bytes, where: str) -> bytes:
        """``data`` without the known values. In binary data (a NUL in its first 8 KiB) only
        forms of ``MIN_CONTENT_LEN`` bytes or more are replaced: a short value turns up in
        megabytes of weights by chance, and replacing it there would corrupt the file."""
        matcher = self.matcher_for(data)
        if matcher is None or not data:
            return data
        return matcher.sub(data, lambda form: self.replacement(form, where))

    @property
    def forms(self) -> list[bytes]:
        """Every byte string scrubbed: the values and their encoded forms."""
        return list(self._by_form)

    def matcher_for(self, head: bytes) -> FormMatcher | None:
        """What :meth:`scrub` looks for in data that starts with ``head`` (its first 8 KiB
        decide between text and binary); None when there is nothing to look for."""
        return self._binary if b"\0" in head[:8192] else self._pattern

    def stream(self, where: str) -> ScrubStream:
        """A scrubber for data that arrives in chunks (``ledger.capture.scrub_stream``)."""
        from .scrub_stream import ScrubStream

        return ScrubStream(self, where)

    def replacement(self, form: bytes, where: str) -> bytes:
        """The marker for a form found in data; notes where it was found."""
        source = self._by_form.get(form, "secret")
        self.hits.setdefault(source, set()).add(where)
        return marker(source).encode()

    def text(self, value: str, where: str) -> str:
        if self._pattern is None:
            return value
        return self.scrub(value.encode("utf-8", "surrogateescape"), where).decode(
            "utf-8", "surrogateescape"
        )

    def json(self, value: Any, where: str) -> Any:
        """Scrub every string (keys included) of JSON-like data."""
        if self._pattern is None:
            return value
        if isinstance(value, Mapping):
            return {self.text(str(k), where): self.json(v, where) for k, v in value.items()}
        if isinstance(value, list | tuple):
            return [self.json(v, where) for v in value]
        if isinstance(value, str):
            return self.text(value, where)
        return value

    def notes(self) -> list[str]:
        """One note per known secret found in captured data; the value itself is never named."""
        lengths: dict[str, int] = {}
        for k in self.known:
            lengths[k.source] = min(len(k.value), lengths.get(k.source, len(k.value)))
        out = []
        for source, places in sorted(self.hits.items()):
            what = "secrets from the command line" if source == "argv" else f"${source}"
            short = ""
            if lengths.get(source, MIN_CONTENT_LEN) < MIN_CONTENT_LEN:
                some = "the shortest" if source == "argv" else "a short value"
                short = f" ({some}, {lengths[source]} characters)"
            out.append(f"the value of {what}{short} was scrubbed from {', '.join(sorted(places))}")
        return out


def scrub_run_dir(staging: Path, scrubber: Scrubber, logs_scrubbed: bool = False) -> list[str]:
    """Scrub what the child wrote into the staging directory before it is stored: the logs
    (known values and detected lines) and the argparse/Hydra captures (known values).

    ``logs_scrubbed``: the known values were scrubbed from the logs as they were written
    (``Scrubber.stream``); a second pass could find a short value inside a marker."""
    notes: list[str] = []
    found: list[Finding] = []
    for stream in ("stdout", "stderr"):
        path = staging / f"{stream}.log"
        if not path.is_file():
            continue
        data = path.read_bytes()
        new = data if logs_scrubbed else scrubber.scrub(data, stream)
        if len(new) <= MAX_DETECT_BYTES:
            new, hits = redact_lines(new, stream)
            found += hits
        else:
            notes.append(
                f"{stream} is over {MAX_DETECT_BYTES:,} bytes: only the secrets known at launch "
                "were scrubbed from it, it was not scanned for others"
            )
        if new != data:
            path.write_bytes(new)
    config = staging / "config"
    for path in sorted(config.iterdir()) if config.is_dir() else []:
        if path.is_file():
            data = path.read_bytes()
            new = scrubber.scrub(data, "the captured argparse/Hydra config")
            if new != data:
                path.write_bytes(new)
    if found:
        shown = ", ".join(f.describe() for f in found[:10])
        more = f" and {len(found) - 10} more" if len(found) > 10 else ""
        notes.append(
            f"lines holding secrets were redacted in the logs ({len(found)}): {shown}{more}"
        )
    return notes


_MARKER = re.compile(r"\[REDACTED:([A-Za-z_][A-Za-z0-9_]*)\]")


def restore_argv(argv: Sequence[str], environ: Mapping[str, str]) -> list[str]:
    """The recorded command line with each ``[REDACTED:NAME]`` taken from ``$NAME`` again.

    Raises ReplayError naming what cannot be restored: a variable that is not set now, or a
    secret that came from the command line itself (its value is stored nowhere)."""
    from ..errors import ReplayError
    from .redact import REDACTED

    missing: set[str] = set()
    out = []
    for arg in argv:
        names = set(_MARKER.findall(arg))
        if REDACTED in arg or "argv" in names:
            raise ReplayError(
                "the recorded command line holds a secret given on the command line itself, "
                "which the ledger never stores; it cannot be rerun as is",
                hint="pass secrets through environment variables (e.g. --api-key $API_KEY): "
                "replay then takes them from the environment",
            )
        missing |= {n for n in names if n not in environ}
        out.append(_MARKER.sub(lambda m: environ.get(m[1], m[0]), arg))
    if missing:
        listed = ", ".join(f"${n}" for n in sorted(missing))
        raise ReplayError(
            f"the recorded command line holds the value of {listed}, which is not set now",
            hint=f"set {listed} to the secret and replay again",
        )
    return out


def _read_inside(base: Path, name: str) -> list[bytes]:
    """The lines of ``base/name``, or none when the name (from a stored patch, which may be
    crafted) leads outside ``base``: ``..``, an absolute path, or a symlink on the way."""
    from .confine import OutsideError, parts

    try:
        parts(name)
        path = base / name
        if not os.path.realpath(path).startswith(os.path.realpath(base) + os.sep):
            return []
        return path.read_bytes().splitlines(keepends=True)
    except (OutsideError, OSError):
        return []


def restore_patch_context(data: bytes, base: Path) -> bytes:
    """The stored patch with its redacted context and removed lines taken again from the files
    under ``base`` (the recorded commit, checked out): those lines are in the commit, so the
    patch applies; the redacted added lines stay redacted."""
    if not _SCRUBBED.search(data):
        return data
    out: list[bytes] = []
    old_lines: list[bytes] = []
    old_line = 0
    hunk = _Hunk()
    for line in data.splitlines(keepends=True):
        if hunk.body(line):
            if line[:1] != b"+":
                if _SCRUBBED.search(line) and 0 < old_line <= len(old_lines):
                    original = old_lines[old_line - 1]
                    end = b"\n" if line.endswith(b"\n") else b""
                    line = line[:1] + original.rstrip(b"\r\n") + end
                old_line += 1
        elif line.startswith((b"--- a/", b'--- "a/')):
            old_lines = _read_inside(base, _patch_path(line))
        elif line.startswith(b"diff --git "):
            old_lines = []
        elif m := _HUNK.match(line):
            old_line = int(m[1])
            hunk.start(m)
        out.append(line)
    return b"".join(out)
