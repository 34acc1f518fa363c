"""The rules that keep real code and config out of secret redaction (issue 32, point 12), each
at the edge where it turns: a placeholder is not a secret, a lookup key names things, source
code's unquoted values are expressions, prose is not an assignment; the secret beside each
stays caught."""

from __future__ import annotations

import pytest

from ledger.capture.redact import REDACTED, is_placeholder, is_secret_entry, redact_text
from ledger.capture.secrets import detect_line, find_marker, is_source_code


@pytest.mark.parametrize(
    ("value", "placeholder"),
    [
        ("${oc.env:DB_PASSWORD}", True),
        ("${oc.env:DB_PASSWORD_FILE", True),  # cut at its comma by the value pattern
        ("{arg}", True),
        ("{key_value!r}", True),
        ("<your-api-key>", True),
        ("<pad>", True),
        ("%(db_password)s", True),
        ("%s,", True),  # ``hash_key=%s,`` in a log format
        ("%5d", True),
        ("<{k_width}}", True),  # f"{key: <{k_width}}"
        ("{kernel}_out_", True),
        ("[IMG_BREAK]", True),
        ("▁<EOT>", True),
        ("abc[1]", False),
        ("pw<x>yz12345", False),
        ("%dth", False),
        ("$AUTH_TOKEN", True),
        ("???", True),
        ("FLASK_SECRET_KEY", True),
        ("value", True),
        ("VALUE:", True),  # ``--key=value:`` in a message
        ("'secret'", True),
        ("`YYY`", True),
        ("val1", True),
        ("key2", True),
        ("value10", True),
        ("YOUR_API_KEY", True),
        ("your-token", True),
        ("false", True),
        ("xxxx", True),
        ("***", True),
        ("===", True),
        ("", True),
        ("***redacted***", True),
        # secrets
        ("secret9", False),
        ("password1", False),
        ("b", False),  # a one-letter password is still one
        ("bb", False),
        ("cY5", False),
        ("hunter2xyz", False),
        ("ABC_def", False),  # not a variable's name: small letters
        ("ABCDEF", False),  # no underscore: not a variable's name
        ("{unclosed", False),
        ("<a>bcdef", False),
        ("$1abc", False),
        ("%(x)q", False),
        ("myvalue", False),
        ("sk-your", False),
    ],
)
def test_what_only_stands_in_a_secrets_place(value: str, placeholder: bool) -> None:
    assert is_placeholder(value) is placeholder


@pytest.mark.parametrize(
    ("name", "value", "secret"),
    [
        ("password", "${oc.env:DB_PASSWORD}", False),
        ("password", "hunter2xyz", True),
        ("HF_TOKEN", '"HF_TOKEN"', False),  # the variable's name, not its content
        ("--hf-token", "hf-token", False),
        ("HF_TOKEN", "Hf_TOKEN2", True),
        ("key2", "'abc'", False),  # a numbered lookup key
        ("api_key2", "'abc'", True),
        ("port_key", '"MASTER_PORT"', False),
        ("key", '"DataIndexKey"', False),
        ("_FLOAT_TAG_KEY", '"__float__"', False),
        ("integration_version_key", "source_code/integrations/transformers", False),
        ("key", '"-Infinity"', False),
        ("key", '"fp8_"', False),
        ("key", "abcd1234", False),  # a short word with digits reads as a name
        ("key", "abcd12345", True),
        ("key", "x9.y", True),
        ("key", '"/etc/kubernetes/certs/client.key"', False),  # a path names a file
        ("key", "/x9/y", True),
        ("sort_key", "loss", False),
        ("ssh_key", "loss", True),  # after a credential word: a credential
        ("storage_key", '"cond_frame_outputs"', False),  # unless it reads as snake_case
        ("n_token", '"vocab_size"', False),
        ("client_secret", "the_secret_value", False),
        ("HF_TOKEN", "hf_abcdef", True),  # a token's prefix is no word
        ("token", "sk_live_abcdef", True),
        ("db_password", "correct_horse_battery", True),  # a password's words stay secret
        ("DB_PASS", "correct_horse", True),
        ("auth_pin", "one_two", True),
        ("n_token", '"vocab_size2"', True),
        ("n_token", '"_vocab"', True),
        ("_VARKW_KEY", '"**kwargs"', False),
        ("_VARARGS_KEY", '"*args"', False),
        ("key", '"***kwargs"', True),
    ],
)
def test_which_entries_hold_a_secret(name: str, value: str, secret: bool) -> None:
    assert is_secret_entry(name, value) is secret


@pytest.mark.parametrize(
    ("line", "code", "kept"),
    [
        # Unquoted values in source code are expressions...
        ("key = tuple(key)", True, True),
        ("key = tuple(key)", False, False),
        ('"client_secret": str,', True, True),
        ('"client_secret": str,', False, False),
        ("api_key: Optional[str] = None", True, True),
        ("token=token,", True, True),
        # ...a quoted value is a literal, and inside a literal the text is data again.
        ('password = "hunter2xyz"', True, False),
        ('run(["train.py", "--api-key=abc123xyz"])', True, False),
        ('cmd = "train.py api_key=abc123xyz lr=0.1"', True, False),
        ('"token: abc123"', True, False),
        # placeholders and templates, in both modes
        ('raise ValueError(f"not --key=value: {arg}")', True, True),
        ("not --key=value: {arg}", False, True),
        ('f"key={key_value!r}"', True, True),
        ("password: ${oc.env:DB_PASSWORD}", False, True),
        # operators are not assignments
        ('if key == "":', False, True),
        ("registered to DispatchKey::Meta via", False, True),
        ("key: x1y2z3w4v", False, False),
        # a sentence after a name is prose; a value with digits is not a word
        ('"Gb_type": "rewrite_signature: cannot trace optional function input",', False, True),
        ("signature: cannot", False, False),
        ("token: abc123 was refused", False, False),
        # --flag value: in code only inside a literal
        ("n = m --token abc123xyz", True, True),
        ("n = m --token abc123xyz", False, False),
        ('"--token abc123xyz"', True, False),
        ("--token YOUR_TOKEN", False, True),
        # URLs: a password that is a placeholder stays (documentation)
        ("postgresql://user:password@localhost:5432/db", False, True),
        ("postgresql://user:pw55x@localhost:5432/db", False, False),
        # Basic / Bearer followed by prose
        ("Basic sweeper, then a basic grid", False, True),
        ("a basic lower-diagonal causal mask.", False, True),
        ("Bearer tokens are read from the environment.", False, True),
        ("basic Sweeper", False, True),
        ("Bearer ABCDEFGh", False, True),  # one small letter
        ("Bearer abcdefgH", False, True),  # one capital
        ("Bearer AbCdefgh", False, False),
        ("basic QWxhZGRpbjpv", False, False),
        ("Bearer abcdef123", False, False),
        ("Bearer abc_defgh", False, False),
        ("Bearer abc~defgh", False, False),
    ],
)
def test_redact_text_in_code_and_in_text(line: str, code: bool, kept: bool) -> None:
    out = redact_text(line, code=code)
    assert (out == line) is kept, out
    if not kept:
        assert REDACTED in out or "***@" in out


def test_the_redaction_keeps_what_surrounds_the_secret() -> None:
    assert redact_text("https://u:pw55x@h/x") == "https://u:***@h/x"
    assert redact_text("sent Bearer abcdef123 ok") == f"sent Bearer {REDACTED} ok"
    assert redact_text('x = "--api-key=abc123xyz"', code=True) == f'x = "--api-key={REDACTED}"'


@pytest.mark.parametrize(
    ("filename", "code"),
    [
        ("train.py", True),
        ("TRAIN.PY", True),
        ("kernel.cu", True),
        ("src/app.ts", True),
        ("train.yaml", False),
        ("run.sh", False),
        (".env", False),
        ("py", False),
        ("train.py.bak", False),
    ],
)
def test_which_files_are_source_code(filename: str, code: bool) -> None:
    assert is_source_code(filename) is code


@pytest.mark.parametrize(
    ("line", "filename", "kind"),
    [
        ("key = tuple(key)", "train.py", None),
        ("key = tuple(key)", "train.yaml", "name rule"),
        # detect-secrets' own heuristic filters, which analyze_line alone does not apply:
        # an indirect reference is no keyword (the name rule still judges the line)
        ('api_key = os.environ["OPENAI_API_KEY"]', "train.py", None),
        ('api_key = os.environ["OPENAI_API_KEY"]', "train.yaml", "name rule"),
        ("password: hunter2xyz", "train.yaml", "Secret Keyword"),
        ('password = "hunter2xyz"', "train.py", "Secret Keyword"),
        ("password: $DB_PW", "train.yaml", None),
        ("password: <%= pw %>", "train.yaml", None),
        ("password: secret", "train.yaml", None),
        ("secret_key_env = FLASK_SECRET_KEY", "db.cfg", None),
        # an alphabet or a UUID is high entropy and no key; a keyword's abcd is a password
        ('letters = "ABCDEFGHIJKLMNOPQRSTUVWXYZ"', "t.yaml", None),
        ('run = "123e4567-e89b-12d3-a456-426614174000"', "t.yaml", None),
        ("pwd=abcd", "t.yaml", "Secret Keyword"),
        ("checkpoint: {state_key: model}", "train.yaml", None),
        ('raise ValueError(f"not --key=value: {arg}")', "train.py", None),
    ],
)
def test_detect_line_by_file_kind(line: str, filename: str, kind: str | None) -> None:
    assert detect_line(line, filename) == kind


def test_find_marker() -> None:
    assert find_marker(b"  [REDACTED:Secret Keyword]\n") == "[REDACTED:Secret Keyword]"
    assert find_marker(b"x = [REDACTED:HF_TOKEN] and [REDACTED:argv]") == "[REDACTED:HF_TOKEN]"
    assert find_marker(b"[REDACTED:] [redacted:x] plain") is None
