"""The redaction rules on names, argv, free text, env and JSON."""

from __future__ import annotations

import time

import pytest
from hypothesis import given
from hypothesis import strategies as st

from ledger.capture.redact import (
    REDACTED,
    is_secret_name,
    redact_argv,
    redact_env,
    redact_json,
    redact_text,
)

SECRET_NAMES = [
    "AWS_SECRET_ACCESS_KEY",
    "AWS_SESSION_TOKEN",
    "HF_TOKEN",
    "WANDB_API_KEY",
    "GITHUB_TOKEN",
    "OPENAI_API_KEY",
    "DB_PASSWORD",
    "MYSQL_PWD",
    "db_pass",
    "SMTP_PASSWD",
    "apiKey",
    "APIKEY",
    "accessToken",
    "client_secret",
    "GOOGLE_APPLICATION_CREDENTIALS",
    "Authorization",
    "private_key",
    "SESSION_ID",
    "cookie",
    "SENTRY_DSN",
    "MY_SVC_CRED",
    "DB_PIN",
    "AUTH_JWT",
    "MFA_OTP",
    "--api-key",
    "--token",
]
PLAIN_NAMES = [
    "PWD",
    "OLDPWD",
    "PATH",
    "HOME",
    "DATABASE_URL",
    "OMP_NUM_THREADS",
    "CUBLAS_WORKSPACE_CONFIG",
    "TOKENIZERS_PARALLELISM",
    "key_dim",
    "pad_token_id",
    "max_tokens",
    "num_keys",
    "pass_through",
    "AUTHOR",
    "keyboard",
    "lr",
    "-p",
    "pin_memory",
    "spin",
    "credit",
    "otp_window_steps",
]


@pytest.mark.parametrize("name", SECRET_NAMES)
def test_secret_names(name: str) -> None:
    assert is_secret_name(name)


@pytest.mark.parametrize("name", PLAIN_NAMES)
def test_plain_names(name: str) -> None:
    assert not is_secret_name(name)


def test_redact_env_keeps_names_and_scans_values() -> None:
    out = redact_env(
        {
            "HF_TOKEN": "hf_abc",
            "PWD": "/home/me",
            "DATABASE_URL": "postgres://alice:s3cr3t@db:5432/x",
            "OMP_NUM_THREADS": "4",
        }
    )
    assert out == {
        "HF_TOKEN": REDACTED,
        "PWD": "/home/me",
        "DATABASE_URL": "postgres://alice:***@db:5432/x",
        "OMP_NUM_THREADS": "4",
    }


def test_redact_argv_forms() -> None:
    argv = [
        "python",
        "train.py",
        "--api-key=AAA111",
        "--token",
        "BBB222",
        "--lr",
        "0.1",
        "password=CCC333",
        "--db",
        "mysql://root:DDD444@localhost:3306/x",
        "-p",
        "8080",
        "--use-auth",
        "--epochs",
        "3",
    ]
    out = redact_argv(argv)
    assert out == [
        "python",
        "train.py",
        f"--api-key={REDACTED}",
        "--token",
        REDACTED,
        "--lr",
        "0.1",
        f"password={REDACTED}",
        "--db",
        "mysql://root:***@localhost:3306/x",
        "-p",
        "8080",
        "--use-auth",  # a flag: the next option is not taken as its value
        "--epochs",
        "3",
    ]


@pytest.mark.parametrize(
    ("arg", "redacted"),
    [
        ("-phunter2", True),  # mysql -pPASSWORD
        ("-PSecret", True),
        ("-ppassword", True),
        ("-p=abc", True),
        ("-pv", False),  # bundled flags (mkdir -pv, cp -pvf)
        ("-pvf", False),
        ("-p8080", False),  # a port
        ("-p./out", False),  # a path
    ],
)
def test_redact_argv_password_attached_to_p(arg: str, redacted: bool) -> None:
    out = redact_argv(["mysql", arg, "db"])
    assert (out[1] != arg) is redacted, out
    assert out[2] == "db"
    if redacted:
        assert arg[2:].lstrip("=") not in out[1]


def test_redact_argv_value_after_secret_flag() -> None:
    # "-1x" does not look like an option, so it is taken as the secret's value; "--lr" does.
    assert redact_argv(["--token", "-1x"]) == ["--token", REDACTED]
    assert redact_argv(["--token", "--lr", "1"]) == ["--token", "--lr", "1"]
    assert redact_argv(["--token"]) == ["--token"]


def test_redact_text_free_text() -> None:
    text = (
        "curl -H 'Authorization: Bearer abcdef123456' https://u:pw1234@host/p?api_key=XYZ987&x=1 "
        "--password hunter22 HF=hf_" + "a" * 34 + " aws AKIAABCDEFGHIJKLMNOP"
    )
    out = redact_text(text)
    for secret in ("abcdef123456", "pw1234", "XYZ987", "hunter22", "hf_aaaa", "AKIAABCDEF"):
        assert secret not in out
    assert "x=1" in out and "https://u:***@host/p" in out


def test_redact_text_leaves_ports_and_plain_text() -> None:
    text = "serving on http://localhost:8080/x@y with lr=0.1 and key_dim=64"
    assert redact_text(text) == text


def test_private_key_block() -> None:
    block = "-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nabc\n-----END RSA PRIVATE KEY-----"
    assert redact_text(f"key:\n{block}\nrest") == f"key:\n{REDACTED}\nrest"


def test_redact_json_walks_and_keeps_flags() -> None:
    value = {
        "model": {"key_dim": 64, "pad_token": "<pad>"},
        "wandb": {"api_key": "abc", "project": "p"},
        "credentials": {"user": "u", "pin": 1234, "enabled": True},
        "use_auth": True,
        "private": None,
        "db": ["postgres://a:b@h/x", {"password": 99}],
    }
    assert redact_json(value) == {
        "model": {"key_dim": 64, "pad_token": "<pad>"},
        "wandb": {"api_key": REDACTED, "project": "p"},
        "credentials": {"user": REDACTED, "pin": REDACTED, "enabled": True},
        "use_auth": True,
        "private": None,
        "db": ["postgres://a:***@h/x", {"password": REDACTED}],
    }


TOKENS = st.one_of(
    st.from_regex(r"hf_[A-Za-z0-9]{34}", fullmatch=True),
    st.from_regex(r"ghp_[A-Za-z0-9]{36}", fullmatch=True),
    st.from_regex(r"sk-[A-Za-z0-9]{40}", fullmatch=True),
    st.from_regex(r"AKIA[A-Z0-9]{16}", fullmatch=True),
)


@given(token=TOKENS, before=st.sampled_from(["", "x ", "token=", "'", "("]))
def test_known_token_formats_never_survive(token: str, before: str) -> None:
    assert token not in redact_text(f"{before}{token} tail")
    assert token not in " ".join(redact_argv(["cmd", f"{before}{token}"]))
    assert token not in str(redact_json({"note": f"{before}{token}"}))


@given(st.text(max_size=200))
def test_redaction_is_idempotent(text: str) -> None:
    once = redact_text(text)
    assert redact_text(once) == once


@pytest.mark.parametrize(
    "line",
    ["x=" + "a" * 200_000, "a." * 100_000, "http://" + "a" * 200_000, "a-" * 100_000],
)
def test_redact_text_is_linear_on_long_runs_of_name_characters(line: str) -> None:
    # Each of these took minutes at 32 KB when a name was tried at every position of a run.
    # CPU time of this process, which other processes on the machine do not lengthen.
    start = time.process_time()
    assert redact_text(line) == line
    assert time.process_time() - start < 5.0


def test_names_inside_runs_are_still_found() -> None:
    assert redact_text("--api-key=abc123") == f"--api-key={REDACTED}"
    assert redact_text("9db_password: x9") == f"9db_password: {REDACTED}"
    assert redact_text("x.https://u:pw99@h/") == "x.https://u:***@h/"
    assert redact_text("cfg.api_key=zz1 lr=0.1") == f"cfg.api_key={REDACTED} lr=0.1"
