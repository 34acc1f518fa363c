"""Config files: formats, sniffing, malformed input, storage, detection, the merged view."""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from ledger.capture.config import (
    build_config_capture,
    detect_config_paths,
    json_safe,
    load_config_file,
    merge_configs,
)
from ledger.capture.redact import REDACTED
from ledger.errors import UsageError
from ledger.records.config import ArgparseCapture
from ledger.store import Store

YAML = "model:\n  depth: 4\n  act: relu\nlr: 0.1\nwhen: 2024-01-02\nratio: .nan\n"
JSON = '{"model": {"depth": 4}, "lr": 0.1, "tags": ["a", "b"]}'
TOML = "[model]\ndepth = 4\n\n[optim]\nlr = 0.1\nwhen = 2024-01-02T03:04:05Z\n"


@pytest.mark.parametrize(
    ("name", "text", "fmt", "expected"),
    [
        (
            "c.yaml",
            YAML,
            "yaml",
            {
                "model": {"depth": 4, "act": "relu"},
                "lr": 0.1,
                "when": "2024-01-02",
                "ratio": "nan",
            },
        ),
        ("c.json", JSON, "json", {"model": {"depth": 4}, "lr": 0.1, "tags": ["a", "b"]}),
        (
            "c.toml",
            TOML,
            "toml",
            {"model": {"depth": 4}, "optim": {"lr": 0.1, "when": "2024-01-02T03:04:05+00:00"}},
        ),
        ("c.cfg", JSON, "json", {"model": {"depth": 4}, "lr": 0.1, "tags": ["a", "b"]}),
        (
            "c.conf",
            TOML,
            "toml",
            {"model": {"depth": 4}, "optim": {"lr": 0.1, "when": "2024-01-02T03:04:05+00:00"}},
        ),
        ("noext", "a: 1\nb: [1, 2]\n", "yaml", {"a": 1, "b": [1, 2]}),
    ],
)
def test_formats(
    store: Store, tmp_path: Path, name: str, text: str, fmt: str, expected: object
) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    cf = load_config_file(path, store)
    assert cf.format == fmt
    assert cf.value == expected
    assert cf.path == str(path)
    assert cf.size == len(text.encode())
    assert store.objects.get_bytes(cf.oid) == text.encode()  # verbatim bytes
    assert cf.redacted == []


@pytest.mark.parametrize(
    ("name", "text", "where", "what"),
    [
        ("bad.yaml", "a: 1\nb: [1, 2\nc: 3\n", ":3:2", "malformed YAML"),
        ("bad.yml", "a: 1\n  b: 2\n", ":2:4", "malformed YAML"),
        ("bad.json", '{\n  "a": 1,\n  "b": }\n', ":3:8", "malformed JSON"),
        ("bad.toml", "a = 1\nb = = 2\n", ":2:5", "malformed TOML"),
    ],
)
def test_malformed_files_name_line_and_column(
    store: Store, tmp_path: Path, name: str, text: str, where: str, what: str
) -> None:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    with pytest.raises(UsageError) as info:
        load_config_file(path, store)
    assert info.value.message.startswith(f"{path}{where}: {what}: ")
    assert info.value.hint


def test_unknown_format(store: Store, tmp_path: Path) -> None:
    path = tmp_path / "notes.txt"
    path.write_text("just some words\n")
    with pytest.raises(UsageError, match="unrecognised config format") as info:
        load_config_file(path, store)
    assert ".yaml" in (info.value.hint or "")


def test_unreadable_binary_and_too_large(store: Store, tmp_path: Path) -> None:
    with pytest.raises(UsageError, match="cannot read config file"):
        load_config_file(tmp_path / "missing.yaml", store)
    with pytest.raises(UsageError, match="cannot read config file"):
        load_config_file(tmp_path, store)  # a directory
    binary = tmp_path / "w.json"
    binary.write_bytes(b"\xff\xfe\x00garbage")
    with pytest.raises(UsageError, match="not UTF-8"):
        load_config_file(binary, store)
    huge = tmp_path / "huge.json"
    with huge.open("wb") as f:
        f.truncate(33 * 2**20)  # sparse: no real write
    with pytest.raises(UsageError, match="limited to"):
        load_config_file(huge, store)


def test_secrets_in_files_are_redacted_but_bytes_kept(store: Store, tmp_path: Path) -> None:
    path = tmp_path / "c.yaml"
    path.write_text(
        "wandb:\n  api_key: 0123abcd\n  project: p\ndb: postgres://me:pa55word@h/x\nlr: 1\n"
    )
    cf = load_config_file(path, store)
    assert cf.value == {
        "wandb": {"api_key": REDACTED, "project": "p"},
        "db": "postgres://me:***@h/x",
        "lr": 1,
    }
    assert cf.redacted == ["wandb.api_key", "db"]
    assert "0123abcd" not in cf.model_dump_json() and "pa55word" not in cf.model_dump_json()


def test_detect_config_paths(tmp_path: Path) -> None:
    (tmp_path / "a.yaml").write_text("a: 1")
    (tmp_path / "b.JSON").write_text("{}")
    (tmp_path / "data.json").write_bytes(b" " * (2**20 + 1))  # too big to be config
    (tmp_path / "conf").mkdir()
    (tmp_path / "conf" / "c.toml").write_text("x = 1")
    argv = [
        "python",
        "train.py",
        "a.yaml",
        "--cfg=b.JSON",
        "--data",
        "data.json",
        "missing.yaml",
        "conf/c.toml",
        "a.yaml",
    ]
    assert detect_config_paths(argv, tmp_path) == ["a.yaml", "b.JSON", "conf/c.toml"]


def test_json_safe() -> None:
    import enum
    import math
    from pathlib import PurePosixPath

    class Color(enum.Enum):
        RED = 1

    value = {
        1: PurePosixPath("/a"),
        "e": Color.RED,
        "f": -math.inf,
        "s": {3},
        "b": b"x",
        "o": object,
    }
    assert json_safe(value) == {
        "1": "/a",
        "e": "RED",
        "f": "-inf",
        "s": [3],
        "b": "x",
        "o": "<class 'object'>",
    }


def test_merge_rule(store: Store, tmp_path: Path) -> None:
    (tmp_path / "base.yaml").write_text("model: {depth: 4, act: relu}\nlr: 0.1\nbatch: 32\n")
    (tmp_path / "over.json").write_text('{"model": {"depth": 8}, "seed": 1}')
    files = [load_config_file(tmp_path / n, store) for n in ("base.yaml", "over.json")]
    train = ArgparseCapture(
        prog="train",
        argv=["--lr", "0.5"],
        namespace={"lr": 0.5, "batch": None, "epochs": 3},
        pid=os.getpid(),
        seq=1,
    )
    launcher = ArgparseCapture(
        prog="torchrun",
        argv=["--nproc-per-node", "2"],
        namespace={"nproc_per_node": "2"},
        pid=1,
        seq=1,
    )
    cap = build_config_capture(
        ["python", "train.py", "--token", "T0PSECRET"], files=files, argparse=[launcher, train]
    )
    assert cap.resolved == {
        "model": {"depth": 8, "act": "relu"},
        "lr": 0.5,
        "batch": 32,  # argparse's None does not replace a value from a file
        "seed": 1,
        "epochs": 3,
    }
    assert cap.argv == ["python", "train.py", "--token", REDACTED]
    assert merge_configs({"a": 1}, {"a": None}, keep_none=True) == {"a": None}
    # config_digest ignores pids/times, not content
    moved = build_config_capture(
        cap.argv, files=files, argparse=[train.model_copy(update={"pid": 7, "time": 5.0}), launcher]
    )
    assert moved.config_digest() == cap.config_digest()
    other = build_config_capture(cap.argv, files=files[:1], argparse=[launcher, train])
    assert other.config_digest() != cap.config_digest()


@pytest.mark.parametrize("scrubbed", [False, True])
def test_values_under_a_secret_key_leave_the_bytes_at_any_depth(
    store: Store, tmp_path: Path, scrubbed: bool
) -> None:
    from ledger.capture.secrets import Scrubber

    path = tmp_path / "conf.yaml"
    path.write_text(
        "model:\n  lr: 0.1\n  remote:\n    creds:\n      - user: bobby\n"
        "        value: Zx81kQ9w\n        enabled: true\n    db_password: [hunter2x, 42]\n"
    )
    cf = load_config_file(path, store, Scrubber([]) if scrubbed else None)
    data = store.objects.get_bytes(cf.oid)
    for value in (b"Zx81kQ9w", b"bobby", b"hunter2x"):
        assert value not in data
    assert b"value: [REDACTED:config]" in data
    assert b"enabled: true" in data and b"lr: 0.1" in data  # settings stay
    assert cf.value["model"]["remote"]["creds"][0]["value"] == REDACTED
