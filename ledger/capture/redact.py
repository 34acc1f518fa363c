"""Secret redaction: one small set of rules for names, env, argv, free text and JSON.

Everything ``ledger`` stores about a run's environment, command line and config goes through
these functions first. The rules err towards redacting: a lost value costs a re-run with the
secret supplied again; a leaked credential in a shared ledger cannot be taken back.

This module imports only the standard library: the child-process startup hook
(``ledger/_hook/sitecustomize.py``) loads it by file path, without importing ``ledger``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import Any

__all__ = [
    "REDACTED",
    "is_placeholder",
    "is_secret_entry",
    "is_secret_name",
    "redact_argv",
    "redact_env",
    "redact_json",
    "redact_text",
]

REDACTED = "***redacted***"

# Words that make a name secret wherever they appear in it (``DB_PASSWORD_FILE`` too).
_ANY_WORDS = frozenset(
    {
        "secret",
        "secrets",
        "password",
        "passwd",
        "passphrase",
        "pwd",
        "credential",
        "credentials",
        "creds",
        "cred",
        "auth",
        "authorization",
        "private",
        "session",
        "cookie",
        "cookies",
        "signature",
        "dsn",
    }
)
# Words that make a name secret only as its LAST word: ``api_key``, ``HF_TOKEN``, ``db_pass`` are
# secrets, while ``key_dim``, ``pad_token_id`` and ``pass_through`` are hyperparameters.
_LAST_WORDS = frozenset(
    {"key", "token", "pass", "apikey", "sid", "pin", "jwt", "otp", "bearer", "webhook"}
)
# Run-together spellings (``APIKEY``, ``accessToken`` lower-cased, ``DBPASSWORD``).
_SUFFIXES = (
    "apikey",
    "accesskey",
    "secretkey",
    "privatekey",
    "authkey",
    "accesstoken",
    "authtoken",
    "apitoken",
    "password",
    "passwd",
    "secret",
    "oauth",
)
# ``PWD``/``OLDPWD`` are the shell's working directories, not passwords.
_NOT_SECRET = frozenset({"pwd", "oldpwd"})
# Tokenizer special tokens (``pad_token: "<pad>"``) are vocabulary, not credentials.
_VOCAB_TOKENS = frozenset({"bos", "eos", "pad", "unk", "mask", "sep", "cls", "start", "end"})

_WORD_SPLIT = re.compile(r"[^A-Za-z0-9]+|(?<=[a-z0-9])(?=[A-Z])")
# Qualifiers that follow a secret's name without changing what it is: ``API_KEY_2``,
# ``OPENAI_API_KEY_PROD``, ``DB_PASSWORD_OLD``. They are dropped before the last-word rule.
_QUALIFIERS = frozenset(
    {
        "prod",
        "production",
        "dev",
        "develop",
        "development",
        "staging",
        "stage",
        "test",
        "testing",
        "qa",
        "live",
        "old",
        "new",
        "prev",
        "previous",
        "next",
        "current",
        "main",
        "primary",
        "secondary",
        "backup",
        "alt",
        "local",
        "remote",
        "default",
        "b64",
        "base64",
        "raw",
        "value",
        "val",
        "str",
        "string",
        "enc",
        "encoded",
        "v",
    }
)


def _words(name: str) -> list[str]:
    """The words of a name, lower-cased, without numbering or trailing qualifiers."""
    # Trailing digits are a numbering, not a word: ``PASSWORD1``, ``token2``, ``KEY_V2``; but
    # not in a qualifier spelled with digits (``b64``, ``base64``).
    words = [w.lower() for w in _WORD_SPLIT.split(name) if w]
    words = [w if w in _QUALIFIERS else w.rstrip("0123456789") for w in words]
    words = [w for w in words if w]
    while len(words) > 1 and words[-1] in _QUALIFIERS:
        words.pop()
    return words


def is_secret_name(name: str) -> bool:
    """Whether a variable, option or config key name looks like it holds a secret."""
    bare = name.strip().lstrip("-")
    if name.strip().lower() in _NOT_SECRET:  # the variable PWD; an option --pwd is a password
        return False
    words = _words(bare)
    if not words:
        return False
    if words[-1] in _LAST_WORDS:
        return not (words[-1] == "token" and len(words) > 1 and words[-2] in _VOCAB_TOKENS)
    return any(w in _ANY_WORDS or w.endswith(_SUFFIXES) for w in words)


# A last word ``key`` after one of these is a credential (``api_key``, ``ssh_key``, ``x-api-key``);
# after any other word, or alone, it may name a lookup key (``state_key``, ``sort_key``,
# ``primary_key``), whose value reads as an identifier (``model``, ``name``).
_CREDENTIAL_KEYS = frozenset(
    {
        "api", "access", "secret", "private", "auth", "client", "service", "account", "master",
        "encryption", "signing", "ssh", "gpg", "pgp", "license", "licence", "app", "consumer",
        "deploy", "admin", "root", "storage", "subscription", "db", "database", "aws", "openai",
        "hf", "wandb", "stripe", "github", "gitlab", "slack", "google", "azure", "server", "user",
        "webhook", "bot", "cloud", "rsa", "dsa", "ecdsa", "ed25519", "hmac", "jwt", "session",
    }
)  # fmt: skip
# A name, not a credential: words without digits (``model``, ``MASTER_PORT``, ``__float__``,
# ``source_code/integrations``, ``-Infinity``, a path: ``/etc/certs/client.key``), or a
# short word with them (``fp8_``).
_IDENTIFIER = re.compile(
    r"(?:[-/.~]|\*{1,2})?[A-Za-z_][A-Za-z_./:-]{0,79}|[A-Za-z_][A-Za-z0-9_]{0,7}"
)
# A snake_case name (``cond_frame_outputs``, ``vocab_size``): read as a name under any secret
# name but a password's (``storage_key = "cond_frame_outputs"``, ``"n_token": "vocab_size"``).
_SNAKE = re.compile(r"[a-z]{3,}(?:_[a-z]{3,})+")  # words of 3+ letters: not ``hf_abc``
_PASSWORD_WORDS = frozenset({"password", "passwd", "passphrase", "pwd", "pass", "pin", "otp"})


# What stands in a secret's place without being one: a template or a reference to a value
# kept elsewhere (``${oc.env:DB_PASSWORD}``, ``${oc.env:PW_FILE,/run/x}`` cut at its comma,
# a format field anywhere in it: ``{arg}``, ``<{width}}``, ``{name}_out``; ``%(password)s``,
# ``%s``, ``$API_KEY``, OmegaConf's ``???``, the name of the variable that holds it:
# ``FLASK_SECRET_KEY``), or a tokenizer's special token (``<pad>``, ``▁<EOT>``, ``[IMG]``).
_TEMPLATE = re.compile(
    r"\$\{.*|.*\{[^{}]*\}.*|.{0,3}<[^<>]*>.{0,3}|\[[^\[\]]*\]|%(?:\(\w+\))?\d*[sdrfx]"
    r"|\$[A-Za-z_]\w*|\?\?\?|[A-Z][A-Z0-9]*(?:_[A-Z0-9]+)+"
)
# Words that name what goes there, as documentation and examples write them (``key=value``,
# ``--token TOKEN``, ``password: secret``): a credential is not its own name.
_PLACEHOLDER_WORDS = frozenset(
    {
        "value", "values", "val", "secret", "password", "passwd", "pass", "token", "key",
        "apikey", "api_key", "changeme", "change_me", "example", "dummy", "placeholder",
        "redacted", "none", "null", "nil", "xxx", "true", "false", "yes", "no", "on", "off",
    }
)  # fmt: skip


# Examples number these (``key1: val1, key2: val2``); a numbered ``secret9`` may be one.
_NUMBERED_PLACEHOLDERS = frozenset({"key", "val", "value"})


def is_placeholder(value: str) -> bool:
    """Whether a value only stands in a secret's place: a template or reference
    (``_TEMPLATE``), a placeholder word (``value``, ``val1``, ``YOUR_API_KEY``), one character
    repeated three times or more (``xxxx``), or nothing with a letter or digit (``===``).
    Quotes and backticks around it and a trailing ``:``, ``.``, ``,`` or ``;`` are not part of
    it."""
    v = value.strip().strip("\"'`").rstrip(":.,;").strip("*`")
    low = v.lower()
    if not any(c.isalnum() for c in v) or (len(v) >= 3 and len(set(low)) == 1):
        return True
    return bool(
        _TEMPLATE.fullmatch(v)
        or low in _PLACEHOLDER_WORDS
        or low.rstrip("0123456789") in _NUMBERED_PLACEHOLDERS  # ``key1: val1``
        or low.startswith(("your_", "your-", "<your"))
    )


def is_secret_entry(name: str, value: str) -> bool:
    """Whether ``name: value`` holds a secret by its name: ``is_secret_name``, except a value
    that only stands in a secret's place (``is_placeholder``: ``password: ${oc.env:PW}``,
    ``--key=value``), and a lookup key whose value reads as an identifier
    (``state_key: model``, ``port_key = "MASTER_PORT"``, ``key: "DataIndexKey"``): words
    without digits, or a short word, while such keys are common in configs and code (the file
    would be broken by the redaction). A value that repeats the name (``HF_TOKEN =
    "HF_TOKEN"``) names a variable, it is not its content; a snake_case value names something
    under any name but a password's (``storage_key = "cond_frame_outputs"``)."""
    if not is_secret_name(name) or is_placeholder(value):
        return False
    bare = value.strip().strip("\"'")
    if bare.lower() == name.strip().lstrip("-").lower():
        return False
    words = _words(name.strip().lstrip("-"))
    if _SNAKE.fullmatch(bare) and not _PASSWORD_WORDS & set(words):
        return False
    if words[-1:] != ["key"] or (len(words) > 1 and words[-2] in _CREDENTIAL_KEYS):
        return True
    # The value as a line gives it: quoted, or closing a flow mapping (``{state_key: model}``).
    return not _IDENTIFIER.fullmatch(value.strip().rstrip("}]),").strip("\"'"))


# --- values ------------------------------------------------------------------------------------

_PRIVATE_KEY = re.compile(
    r"-----BEGIN [A-Z0-9 ]*PRIVATE KEY-----.*?(?:-----END [A-Z0-9 ]*PRIVATE KEY-----|\Z)", re.S
)
# scheme://user:password@host -> scheme://user:***@host (a port is never followed by '@').
# This pattern and _ASSIGN_HEAD try a name only where a run of name characters starts (the
# look-behind), skipping to its first letter: tried at every position inside the run, as
# ``\b`` allows in ``a.a.a``, each attempt scans to the run's end, and a 32 KB log line took
# minutes. A match from inside a run ends where one from its start does, so none is lost.
_URL_USERINFO = re.compile(
    r"(?P<head>(?<![A-Za-z0-9+.-])[0-9+.-]*[A-Za-z][A-Za-z0-9+.-]*://[^\s:/@]*)"
    r":(?P<password>[^\s@/]+)@"
)
_BEARER = re.compile(r"(?i)\b(?P<head>(?:bearer|basic)\s+)(?P<token>[A-Za-z0-9._~+/=-]{6,})")
# name=value and name: value where the name looks secret (quotes around either are allowed).
_ASSIGN_HEAD = re.compile(
    r"(?<![A-Za-z0-9_.-])[0-9.-]*(?P<name>[A-Za-z_][A-Za-z0-9_.-]*)[\"']?\s*[=:]\s*"
)
_ASSIGN_VALUE = re.compile(r"\"[^\"]*\"|'[^']*'|[^\s&;,\"']+")
# --name value (command lines written as text)
_FLAG_VALUE = re.compile(r"(?<![\w-])(?P<flag>--?[A-Za-z][\w.-]*)(?P<sp>\s+)(?P<value>[^\s-]\S*)")
# Well-known token formats, recognisable without a name.
_TOKENS = re.compile(
    r"\b(?:"
    r"hf_[A-Za-z0-9]{30,}"  # Hugging Face
    r"|gh[pousr]_[A-Za-z0-9]{30,}"  # GitHub
    r"|github_pat_[A-Za-z0-9_]{22,}"
    r"|glpat-[A-Za-z0-9_-]{20,}"  # GitLab
    r"|sk-[A-Za-z0-9_-]{20,}"  # OpenAI, Anthropic (sk-ant-...)
    r"|(?:AKIA|ASIA)[A-Z0-9]{16}"  # AWS access key id
    r"|xox[abposr]-[A-Za-z0-9-]{10,}"  # Slack
    r"|AIza[0-9A-Za-z_-]{35}"  # Google API key
    r"|eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}\.[A-Za-z0-9_-]{8,}"  # JWT
    r"|ya29\.[A-Za-z0-9_-]{20,}"  # Google OAuth access token
    r"|1//0[A-Za-z0-9_-]{30,}"  # Google OAuth refresh token
    r"|npm_[A-Za-z0-9]{36}"  # npm
    r"|pypi-[A-Za-z0-9_-]{50,}"  # PyPI
    r"|SG\.[A-Za-z0-9_-]{16,}\.[A-Za-z0-9_-]{16,}"  # SendGrid
    r"|hooks\.slack\.com/(?:services|workflows|triggers)/[A-Za-z0-9/_-]{12,}"  # Slack webhook
    r"|discord(?:app)?\.com/api/webhooks/\d+/[A-Za-z0-9_-]{20,}"  # Discord webhook
    r")"
)


# More words after a value: a sentence in a message or a docstring, not an assignment.
_PROSE = re.compile(r" [A-Za-z]")
_WORD = re.compile(r"[A-Za-z]+")
# A string literal on one line of source code (an unterminated quote opens none).
_LITERAL = re.compile(r"\"(?:[^\"\\]|\\.)*\"|'(?:[^'\\]|\\.)*'")


def _literal_spans(text: str) -> list[tuple[int, int]]:
    return [m.span() for m in _LITERAL.finditer(text)]


def _in_text(spans: list[tuple[int, int]], start: int, end: int) -> bool:
    """Whether ``text[start:end]`` lies inside one string literal (text the program holds),
    rather than in code (names, operators, comments)."""
    return any(a < start and end < b for a, b in spans)


def _redact_assignments(text: str, code: bool = False) -> str:
    # Only the name and separator are matched first, so a non-secret assignment such as
    # ``https://...`` does not swallow a secret one later in the same value (``?api_key=``).
    # In source code (``code``) a value written without quotes is an expression (``key =
    # tuple(key)``, ``api_key: Optional[str]``, ``token=token``), never a literal secret,
    # except inside a string literal, where the text is data again (``"--api-key=abc123"``).
    spans = _literal_spans(text) if code else []
    out: list[str] = []
    pos = 0
    for m in _ASSIGN_HEAD.finditer(text):
        if m.start("name") < pos or not is_secret_name(m["name"]):
            continue
        value = _ASSIGN_VALUE.match(text, m.end())
        if value is None or not is_secret_entry(m["name"], value[0]):
            continue
        if value[0][0] in "=:":  # ``key == x``, ``DispatchKey::Meta``: an operator
            continue
        if _WORD.fullmatch(value[0]) and _PROSE.match(text, value.end()):
            continue  # a sentence: "signature: cannot trace the function"
        quoted = value[0][0] in {'"', "'"}
        if code and not quoted and not _in_text(spans, m.start("name"), m.end() - 1):
            continue
        quote = value[0][0] if value[0][0] in {'"', "'"} else ""
        out += [text[pos : m.end()], quote, REDACTED, quote]
        pos = value.end()
    out.append(text[pos:])
    return "".join(out)


def _flag_value(m: re.Match[str]) -> str:
    if not is_secret_entry(m["flag"], m["value"]):
        return m[0]
    return f"{m['flag']}{m['sp']}{REDACTED}"


def _code_flag_value(text: str) -> Callable[[re.Match[str]], str]:
    """``_flag_value`` for a line of source code: only inside a string literal (a command line
    the program builds); elsewhere ``--x y`` is an operator."""
    spans = _literal_spans(text)

    def sub(m: re.Match[str]) -> str:
        return _flag_value(m) if _in_text(spans, m.start(), m.end() - 1) else m[0]

    return sub


def _userinfo(m: re.Match[str]) -> str:
    """``scheme://user:***@``, unless the password only stands in one's place
    (``postgresql://user:password@host`` in documentation)."""
    if is_placeholder(m["password"]):
        return m[0]
    return f"{m['head']}:***@"


def _bearer(m: re.Match[str]) -> str:
    """``Bearer TOKEN`` and ``Basic BASE64``, unless the word after is prose ("a basic
    sweeper", "basic lower-diagonal mask", "Bearer tokens."): a credential holds a digit or
    one of ``+/=_~``, or two capitals and two small letters (base64 of ``user:pass`` may have
    no digit); words joined by ``-`` or ``.`` are prose."""
    token = m["token"].rstrip(".-")
    upper = sum(c.isupper() for c in token)
    lower = sum(c.islower() for c in token)
    if not _CREDENTIAL_CHAR.search(token) and (upper < 2 or lower < 2):
        return m[0]
    return m["head"] + REDACTED


_CREDENTIAL_CHAR = re.compile(r"[0-9+/=_~]")


def redact_text(text: str, *, code: bool = False) -> str:
    """Redact secrets inside free text: command lines, log lines, config string values.

    ``code``: ``text`` is a line of source code (Python, C, JavaScript...), where a value
    without quotes is an expression, not a secret (``_redact_assignments``)."""
    if not text:
        return text
    text = _PRIVATE_KEY.sub(REDACTED, text)
    text = _URL_USERINFO.sub(_userinfo, text)
    text = _BEARER.sub(_bearer, text)
    text = _redact_assignments(text, code)
    text = _FLAG_VALUE.sub(_code_flag_value(text) if code else _flag_value, text)
    return _TOKENS.sub(REDACTED, text)


def redact_env(mapping: Mapping[str, str]) -> dict[str, str]:
    """Names are kept; a secret-looking name's value is replaced, any other value is scanned."""
    return {
        name: REDACTED if is_secret_entry(name, value) else redact_text(value)
        for name, value in mapping.items()
    }


_OPTION = re.compile(r"^--?[A-Za-z]")
# What ``ledger.capture.secrets`` puts in place of a known secret: ``[REDACTED:HF_TOKEN]``.
_MARKER = re.compile(r"\[REDACTED:[A-Za-z_][A-Za-z0-9_]*\]")
# ``-p VALUE`` / ``-P VALUE`` is a password for mysql, sshpass, zip, 7z, unzip...; many other
# tools use them for a port, a path or a count, which stay: numbers, paths, other options.
_SHORT_PASSWORD = frozenset({"-p", "-P"})
_PLAIN = re.compile(r"^(?:-|[+-]?\d+(?:\.\d+)?$|[.~]?/|\.{1,2}$|[\w.-]*/)")


def _attached_password(arg: str) -> bool:
    """``-pVALUE`` (mysql, mysqldump): the password attached to ``-p``. Bundled flags stay
    (``-pv``, ``-pvf``: all lower-case letters, under 6), so do ports and paths (``-p8080``)."""
    if arg[:2] not in _SHORT_PASSWORD or len(arg) < 3 or arg[2] == "=":
        return False
    value = arg[2:]
    if _PLAIN.match(value):
        return False
    return len(value) >= 6 or not (value.isalpha() and value.islower())


def redact_argv(argv: list[str] | tuple[str, ...]) -> list[str]:
    """Redact a command line given as a list of arguments.

    ``--api-key=X`` and ``--api-key X`` lose X; ``password=X`` and ``-pX`` lose X; every argument is
    also scanned as text (URLs with passwords, bearer tokens, known token formats). Of the
    single-letter options only ``-p``/``-P`` are taken as passwords, and only when their value
    is not a number, a path or another option (ports and paths stay readable).
    """
    out: list[str] = []
    redact_next: bool | str = False
    option = ""  # the secret-named option whose value comes next
    for arg in argv:
        if _MARKER.fullmatch(arg.partition("=")[2] or arg):
            out.append(arg)  # already replaced by a named marker: replay restores it
            redact_next = False
            continue
        if redact_next is True and not _OPTION.match(arg) and is_secret_entry(option, arg):
            out.append(REDACTED)
            redact_next = False
            continue
        if redact_next == "short" and not _PLAIN.match(arg):
            out.append(REDACTED)
            redact_next = False
            continue
        redact_next = False
        name = arg.split("=", 1)[0]
        if _attached_password(arg):
            out.append(arg[:2] + REDACTED)
            continue
        if name in _SHORT_PASSWORD:
            if "=" in arg and not _PLAIN.match(arg.split("=", 1)[1]):
                out.append(f"{name}={REDACTED}")
            else:
                out.append(arg)
                redact_next = "short" if "=" not in arg else False
            continue
        if _OPTION.match(arg) and len(name.lstrip("-")) > 1:
            name, eq, value = arg.partition("=")
            if is_secret_entry(name, value) if eq else is_secret_name(name):
                out.append(f"{name}={REDACTED}" if eq else arg)
                redact_next, option = not eq, name
                continue
            if eq:
                out.append(f"{name}={redact_text(value)}")
                continue
        out.append(redact_text(arg))
    return out


def _redact_all(value: Any) -> Any:
    # Everything below a secret key: keep the shape, drop every string and number.
    if isinstance(value, Mapping):
        return {k: _redact_all(v) for k, v in value.items()}
    if isinstance(value, list | tuple):
        return [_redact_all(v) for v in value]
    if value is None or isinstance(value, bool):
        return value
    return REDACTED


def _secret_key(name: str, value: Any) -> bool:
    if isinstance(value, str):
        return is_secret_entry(name, value)
    return is_secret_name(name)


def redact_json(value: Any) -> Any:
    """Walk JSON-like data: values under secret-looking keys are replaced (booleans and null
    are kept: a flag is not a secret), and every string is scanned with :func:`redact_text`."""
    if isinstance(value, Mapping):
        return {
            k: _redact_all(v) if isinstance(k, str) and _secret_key(k, v) else redact_json(v)
            for k, v in value.items()
        }
    if isinstance(value, list | tuple):
        return [redact_json(v) for v in value]
    if isinstance(value, str):
        return redact_text(value)
    return value
