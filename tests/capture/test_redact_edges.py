"""Edges of the redaction rules: numbering and qualifiers in names, quoted values, markers left
by known-value scrubbing, the ``-p`` password option, and the shapes JSON keeps."""

from __future__ import annotations

import pytest

from ledger.capture.redact import (
    REDACTED,
    is_secret_name,
    redact_argv,
    redact_env,
    redact_json,
    redact_text,
)


@pytest.mark.parametrize(
    "name",
    [
        "PASSWORD1",
        "token2",
        "API_KEY_2",
        "OPENAI_API_KEY_PROD",
        "DB_PASSWORD_OLD",
        "hf_token_v2",
        "my_token",
        "token",
        "--pwd",
        "GH_TOKEN_b64",
        "HF_TOKEN_BASE64",
        "DB_PASSWORD_V2",
        "TOKEN_PROD",
        "KEY_DEV",
    ],
)
def test_numbered_and_qualified_secret_names(name: str) -> None:
    assert is_secret_name(name)


@pytest.mark.parametrize(
    "name", ["", "--", "123", "prod", "pad_token", "eos_token", "key_2_dim", "token_count"]
)
def test_names_that_are_not_secrets(name: str) -> None:
    assert not is_secret_name(name)


def test_quoted_and_unquoted_assignments_keep_their_quotes() -> None:
    assert redact_text('password="two words"') == f'password="{REDACTED}"'
    assert redact_text("api_key='abc' lr=0.1") == f"api_key='{REDACTED}' lr=0.1"
    assert redact_text("token=abc;lr=1") == f"token={REDACTED};lr=1"


def test_an_assignment_without_a_value_is_left_alone() -> None:
    assert redact_text("password=") == "password="
    assert redact_text("password=&x=1") == "password=&x=1"
    assert redact_text("") == ""


def test_a_later_secret_in_a_url_value_is_found() -> None:
    out = redact_text("url=https://h/p?x=1&api_key=SECRET9&y=2")
    assert out == f"url=https://h/p?x=1&api_key={REDACTED}&y=2"


def test_flags_in_text_lose_only_secret_values() -> None:
    assert redact_text("run --lr 0.1 --token abc") == f"run --lr 0.1 --token {REDACTED}"


def test_bearer_and_basic_keep_their_scheme() -> None:
    assert redact_text("Bearer abcdef123") == f"Bearer {REDACTED}"
    assert redact_text("basic QWxhZGRpbjpv") == f"basic {REDACTED}"
    assert redact_text("Bearer abc") == "Bearer abc"  # too short to be a credential


def test_markers_of_known_values_are_kept_and_end_a_pending_value() -> None:
    marker = "[REDACTED:HF_TOKEN]"
    assert redact_argv(["--token", marker, "plain"]) == ["--token", marker, "plain"]
    assert redact_argv([f"--token={marker}"]) == [f"--token={marker}"]
    assert redact_argv(["-p", marker, "x"]) == ["-p", marker, "x"]


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["-p", "hunter2"], ["-p", REDACTED]),
        (["-P", "hunter2"], ["-P", REDACTED]),
        (["-p", "3306"], ["-p", "3306"]),
        (["-p", "./out"], ["-p", "./out"]),
        (["-p", "runs/x"], ["-p", "runs/x"]),
        (["-p", "--lr", "1"], ["-p", "--lr", "1"]),
        (["-p=hunter2"], [f"-p={REDACTED}"]),
        (["-p=3306"], ["-p=3306"]),
        (["-p=3306", "hunter2"], ["-p=3306", "hunter2"]),
        (["-p=3=x"], [f"-p={REDACTED}"]),  # the whole value, not its first `=` part
        (["-p", "pw", "train.py"], ["-p", REDACTED, "train.py"]),
        (["--token", "abc", "train.py"], ["--token", REDACTED, "train.py"]),
        (["-x", "hunter2"], ["-x", "hunter2"]),
        (["--token=abc", "next"], [f"--token={REDACTED}", "next"]),
        (["--db=postgres://a:pw@h/x"], ["--db=postgres://a:***@h/x"]),
        (["--lr=0.1"], ["--lr=0.1"]),
    ],
)
def test_redact_argv_short_and_long_options(argv: list[str], expected: list[str]) -> None:
    assert redact_argv(argv) == expected


def test_redact_argv_takes_a_tuple() -> None:
    assert redact_argv(("--token", "abc")) == ["--token", REDACTED]


def test_redact_env_scans_values_of_plain_names() -> None:
    out = redact_env({"NOTE": "Bearer abcdef123", "HOME": "/h"})
    assert out == {"NOTE": f"Bearer {REDACTED}", "HOME": "/h"}


def test_redact_json_keeps_shapes_flags_and_numbers() -> None:
    value = {
        "secret": {"a": [1, "x", None, False], "b": ("y",)},
        "lr": 0.1,
        1: "Bearer abcdef123",
        "items": ("Bearer abcdef123", 3),
    }
    assert redact_json(value) == {
        "secret": {"a": [REDACTED, REDACTED, None, False], "b": [REDACTED]},
        "lr": 0.1,
        1: f"Bearer {REDACTED}",
        "items": [f"Bearer {REDACTED}", 3],
    }
    assert redact_json(None) is None and redact_json(7) == 7


@pytest.mark.parametrize(
    ("arg", "redacted"),
    [
        ("-pX", True),  # one character is a password too, unless it is a lower-case letter
        ("-p!", True),
        ("-pv", False),
        ("-pabcdef", True),  # six lower-case letters: no bundle of flags is that long
        ("-pabcde", False),
    ],
)
def test_the_shortest_passwords_attached_to_p(arg: str, redacted: bool) -> None:
    out = redact_argv(["mysql", arg])
    assert out == ["mysql", "-p" + REDACTED if redacted else arg]


def test_is_secret_name_answers_a_bool() -> None:
    assert is_secret_name("PWD") is False  # the shell's working directory
    assert is_secret_name("__") is False  # no word at all
    assert is_secret_name("lr") is False
    assert is_secret_name("API_KEY") is True
