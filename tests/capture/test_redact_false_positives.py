"""Secret redaction must not corrupt code (issue 32, point 12).

``checkpoint: {state_key: model}`` in an untracked YAML, and ``f"not --key=value: {arg}"`` in a
script, were stored as ``[REDACTED:name rule]``: the replay then ran a broken file. Two
corpora of real code and config must come through ``redact_lines`` untouched:

- ``fp_corpus/``: real-style files shipped with the tests (Hydra config with interpolations,
  a script in the style of public research code, JSON, INI, TOML);
- files that installed packages ship (Hydra, OmegaConf, Lightning, transformers, torch, dvc,
  accelerate: ``.yaml``, ``.json``, ``.toml``, ``.cfg``, ``.ini``, ``.py``), a deterministic
  selection: per package its config files in sorted order, then every k-th source file,
  until a budget of lines. docs/reference/secrets.md states the figure.

The secret corpus (tests/capture/test_secret_corpus.py) stays caught whole.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path

import pytest

from ledger.capture.secrets import redact_lines

HERE = Path(__file__).resolve().parent
PACKAGES = (
    "hydra",
    "omegaconf",
    "lightning",
    "pytorch_lightning",
    "lightning_fabric",
    "transformers",
    "torch",
    "dvc",
    "dvc_data",
    "accelerate",
)
SUFFIXES = frozenset({".yaml", ".yml", ".json", ".toml", ".cfg", ".ini", ".py"})
LINES_PER_PACKAGE = 3000
SOURCE_FILES_PER_PACKAGE = 60  # every k-th .py file, k = (.py files) // 60
# Literal passwords that packages ship in example configs: a literal under a password key is
# what a secret looks like, and is redacted by design. Nothing else may be.
EXAMPLE_CREDENTIALS = {
    ("hydra/test_utils/configs/db/postgresql.yaml", "password: drowssap"),
    ("hydra/test_utils/configs/db/validated_postgresql.yaml", "password: drowssap"),
}


def package_selection() -> list[tuple[str, Path]]:
    """(path relative to site-packages, file) of the deterministic selection."""
    chosen: list[tuple[str, Path]] = []
    for name in PACKAGES:
        spec = importlib.util.find_spec(name)
        if spec is None or not spec.submodule_search_locations:
            continue
        root = Path(next(iter(spec.submodule_search_locations)))
        files = sorted(
            p
            for p in root.rglob("*")
            if p.suffix in SUFFIXES
            and "__pycache__" not in p.parts
            and p.is_file()
            and p.stat().st_size < 256_000
        )
        code = [p for p in files if p.suffix == ".py"]
        step = max(1, len(code) // SOURCE_FILES_PER_PACKAGE)
        lines = 0
        for p in [p for p in files if p.suffix != ".py"] + code[::step]:
            if lines >= LINES_PER_PACKAGE:
                break
            chosen.append((p.relative_to(root.parent).as_posix(), p))
            lines += p.read_bytes().count(b"\n")
    return chosen


@pytest.mark.parametrize("name", sorted(p.name for p in (HERE / "fp_corpus").iterdir()))
def test_real_style_code_and_config_are_stored_as_they_are(name: str) -> None:
    data = (HERE / "fp_corpus" / name).read_bytes()
    out, found = redact_lines(data, name)
    assert [f.describe() for f in found] == []
    assert out == data


def test_files_installed_packages_ship_are_not_redacted() -> None:
    selection = package_selection()
    if not selection:
        pytest.skip("none of the packages is installed: " + ", ".join(PACKAGES))
    lines = redacted = 0
    unexpected: list[str] = []
    for rel, path in selection:
        data = path.read_bytes()
        lines += data.count(b"\n")
        _, found = redact_lines(data, rel)
        text = data.splitlines()
        for f in found:
            line = text[f.line - 1].decode("utf-8", "replace").strip()
            redacted += 1
            if (rel, line) not in EXAMPLE_CREDENTIALS:
                unexpected.append(f"{rel}:{f.line} ({f.kind}): {line[:120]}")
    print(f"{len(selection)} files, {lines} lines, {len(unexpected)} false positives")
    assert unexpected == []
    assert redacted <= len(EXAMPLE_CREDENTIALS)
