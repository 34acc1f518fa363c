"""``ledger.capture.secrets`` at its edges: the documented size limits, long lines judged in
windows, PEM blocks, patches, launch secrets from argv and the environment, short values and
their base64 forms (mutation testing found these unchecked, issue #18)."""

from __future__ import annotations

import dataclasses
import os
import subprocess
import sys
from pathlib import Path

import pytest

from ledger.capture.secrets import (
    Finding,
    KnownSecret,
    Scrubber,
    detect_line,
    is_setting,
    launch_secrets,
    redact_lines,
    redact_patch,
    restore_argv,
    restore_patch_context,
    scrub_run_dir,
    skipped_secret_file,
)

REPO = Path(__file__).resolve().parents[2]
# Found by a detect-secrets plugin only: the name rules do not know Stripe keys.
STRIPE = "sk_live_4eC39HqLyjWDarjtT1zdp7dc"
GITHUB = "ghp_" + "R8s2Lq0Xv6Tn4Wm1Kb9Pz3Yc7Hd5Jf2Ga8Ne"
AWS = "AKIAZP3MW8QJ5TKD2XRV"
# Words that are no secret, no keyword and no 15-character token.
FILLER = "ab cd ef gh "


def _python(code: str, timeout: float = 60) -> subprocess.CompletedProcess[str]:
    env = {**os.environ, "PYTHONPATH": str(REPO)}
    return subprocess.run(
        [sys.executable, "-c", code], env=env, capture_output=True, text=True, timeout=timeout
    )


# --- sizes ---------------------------------------------------------------------------------------


def test_a_line_over_64_kib_is_judged_by_the_name_rules_alone() -> None:
    # docs/reference/secrets.md: "A line over 64 KiB ... skips the detectors".
    line = STRIPE + " " + FILLER * ((64 * 1024 - len(STRIPE) - 1) // len(FILLER))
    line += "x" * (64 * 1024 - len(line))
    assert len(line) == 64 * 1024
    assert detect_line(line) == "Stripe Access Key"
    assert detect_line(line + "x") is None
    assert detect_line(line + " " + AWS) == "name rule"


@pytest.mark.parametrize("at", [0, 4300, 9000])
def test_a_long_line_is_judged_in_windows_that_miss_no_place(at: int) -> None:
    # Lines over 4 KiB go through the detectors in overlapping windows: a secret anywhere is
    # seen whole in one of them, at the start, in an overlap, near the end.
    filler = FILLER * (12_000 // len(FILLER))
    line = filler[:at] + STRIPE + filler[at:]
    assert detect_line(line) == "Stripe Access Key"
    assert detect_line(filler) is None


def test_run_dir_logs_and_config_are_rewritten_only_when_scrubbed(tmp_path: Path) -> None:
    scrubber = Scrubber([KnownSecret("MY_TOKEN", "known-value-1")])
    (tmp_path / "stdout.log").write_bytes(b"loss 0.5\n" + b"aws " + AWS.encode() + b"\n")
    (tmp_path / "config").mkdir()
    (tmp_path / "config" / "args.json").write_bytes(b'{"token": "known-value-1"}')
    (tmp_path / "config" / "clean.json").write_bytes(b'{"lr": 0.1}')
    (tmp_path / "config" / "sub").mkdir()  # not a file: left alone
    before = (tmp_path / "config" / "clean.json").stat().st_mtime_ns
    notes = scrub_run_dir(tmp_path, scrubber)
    assert (tmp_path / "stdout.log").read_bytes() == b"loss 0.5\n[REDACTED:AWS Access Key]\n"
    assert not (tmp_path / "stderr.log").exists()
    assert (tmp_path / "config" / "args.json").read_bytes() == b'{"token": "[REDACTED:MY_TOKEN]"}'
    assert (tmp_path / "config" / "clean.json").stat().st_mtime_ns == before
    assert notes == [
        "lines holding secrets were redacted in the logs (1): stdout:2 (AWS Access Key)"
    ]
    assert scrubber.hits == {"MY_TOKEN": {"the captured argparse/Hydra config"}}


def test_the_note_names_ten_redacted_lines_and_counts_the_rest(tmp_path: Path) -> None:
    lines = [f"aws {AWS}\n".encode()] * 12
    (tmp_path / "stdout.log").write_bytes(b"".join(lines[:11]))
    (tmp_path / "stderr.log").write_bytes(b"".join(lines[:10]))
    notes = scrub_run_dir(tmp_path, Scrubber([]))
    shown = ", ".join(f"stdout:{n} (AWS Access Key)" for n in range(1, 11))
    assert notes == [f"lines holding secrets were redacted in the logs (21): {shown} and 11 more"]
    (tmp_path / "stdout.log").write_bytes(b"".join(lines[:10]))
    (tmp_path / "stderr.log").unlink()
    (note,) = scrub_run_dir(tmp_path, Scrubber([]))
    assert note.endswith("stdout:10 (AWS Access Key)")


def test_logs_scrubbed_as_they_were_written_are_not_scrubbed_twice(tmp_path: Path) -> None:
    # A short value inside a marker must not be replaced again.
    scrubber = Scrubber([KnownSecret("PIN", "RED")])
    (tmp_path / "stdout.log").write_bytes(b"pin [REDACTED:PIN] RED\n")
    scrub_run_dir(tmp_path, scrubber, logs_scrubbed=True)
    assert (tmp_path / "stdout.log").read_bytes() == b"pin [REDACTED:PIN] RED\n"
    scrub_run_dir(tmp_path, scrubber)
    assert (tmp_path / "stdout.log").read_bytes() == (
        b"pin [[REDACTED:PIN]ACTED:PIN] [REDACTED:PIN]\n"
    )


# --- lines and PEM blocks ------------------------------------------------------------------------


def test_a_redacted_line_keeps_its_indent_and_line_end() -> None:
    data = f"ok\n    api_key: abcdefgh\r\n\tkey = {STRIPE}".encode()
    out, found = redact_lines(data, "logs/train.log")
    assert out == b"ok\n    [REDACTED:name rule]\r\n\t[REDACTED:Stripe Access Key]"
    assert found == [
        Finding("logs/train.log", 2, "name rule"),
        Finding("logs/train.log", 3, "Stripe Access Key"),
    ]
    assert found[0].kept is False
    assert found[0].describe() == "logs/train.log:2 (name rule)"
    # The file's name picks the keyword detector's grammar.
    assert redact_lines(b"api_key: abcdefgh", "conf/train.yaml")[0] == b"[REDACTED:Secret Keyword]"


def test_a_line_with_a_known_value_marker_is_noted_and_kept() -> None:
    out, found = redact_lines(b"loss 1\ntoken [REDACTED:HF_TOKEN] used\n", "stdout")
    assert out == b"loss 1\ntoken [REDACTED:HF_TOKEN] used\n"
    assert found == [Finding("stdout", 2, "known secret value")]


def test_binary_data_is_not_scanned_but_a_nul_after_8_kib_is_text() -> None:
    secret = f"key = {STRIPE}\n".encode()
    assert redact_lines(b"\0" + secret, "w.bin") == (b"\0" + secret, [])
    text = secret + b"a" * (8192 - len(secret)) + b"\0"
    assert redact_lines(text, "w.txt")[0].startswith(b"[REDACTED:Stripe Access Key]\n")
    s = Scrubber([KnownSecret("PIN", "42x")])
    assert s.scrub(b"pin 42x " + b"a" * 8184 + b"\0", "w") == (
        b"pin [REDACTED:PIN] " + b"a" * 8184 + b"\0"
    )


def test_a_private_key_block_ends_at_its_end_line() -> None:
    data = (
        b"-----BEGIN RSA PRIVATE KEY-----\nMIIEow\n-----END RSA PRIVATE KEY-----\nstep 1\n"
        b"-----BEGIN PRIVATE KEY----- MIIB -----END PRIVATE KEY-----\nstep 2\n"
        b"-----BEGIN CERTIFICATE-----\nMIIC\n-----END CERTIFICATE-----\n"
    )
    out, found = redact_lines(data, "k.txt")
    assert out.splitlines() == [
        b"[REDACTED:Private Key]",
        b"[REDACTED:Private Key]",
        b"[REDACTED:Private Key]",
        b"step 1",
        b"[REDACTED:Private Key]",
        b"step 2",
        # A certificate is public.
        b"-----BEGIN CERTIFICATE-----",
        b"MIIC",
        b"-----END CERTIFICATE-----",
    ]
    assert [f.line for f in found] == [1, 2, 3, 5]


# --- patches -------------------------------------------------------------------------------------


def test_patch_findings_name_the_new_path_and_known_values() -> None:
    patch = (
        b"diff --git a/old.py b/conf/new.py\n--- a/old.py\n+++ b/conf/new.py\n"
        b"@@ -3,2 +7,3 @@\n ctx\n-gone = 1\n+tok = '[REDACTED:HF_TOKEN]'\n"
        + f"+    key = {STRIPE}\n".encode()
    )
    out, found = redact_patch(patch)
    assert found == [
        Finding("conf/new.py", 8, "known secret value", False),
        Finding("conf/new.py", 9, "Stripe Access Key", False),
    ]
    assert out.endswith(b"+tok = '[REDACTED:HF_TOKEN]'\n+    [REDACTED:Stripe Access Key]\n")
    assert b"+++ b/conf/new.py\n@@ -3,2 +7,3 @@\n ctx\n-gone = 1\n" in out


def test_restore_patch_context_takes_lines_from_the_checkout(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_bytes(b"x = 1\npassword = 'in-head-Q1'\ny = 2\nz = 3\n")
    patch = (
        b"diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1,4 +1,4 @@\n x = 1\n"
        b" [REDACTED:Secret Keyword]\n-y = 2\n+y = 5\n z = 3"
    )
    out = restore_patch_context(patch, tmp_path)
    assert out.endswith(b" x = 1\n password = 'in-head-Q1'\n-y = 2\n+y = 5\n z = 3")
    # A marker past the file's end, or in a hunk before line 1, stays as it is.
    past = patch.replace(b"@@ -1,4", b"@@ -4,4")
    assert restore_patch_context(past, tmp_path).endswith(
        b" [REDACTED:Secret Keyword]\n-y = 2\n+y = 5\n z = 3"
    )
    zero = patch.replace(b"@@ -1,4", b"@@ -0,4")
    assert b" [REDACTED:Secret Keyword]\n" not in restore_patch_context(zero, tmp_path)
    last = (
        b"diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -4,1 +4,1 @@\n"
        b"-[REDACTED:Secret Keyword]\n+z = 4\n"
    )
    assert restore_patch_context(last, tmp_path).endswith(b"\n-z = 3\n+z = 4\n")
    # A second file's lines come from that file, not the first one's.
    two = last.replace(b"a.py", b"b.py") + last
    (tmp_path / "b.py").write_bytes(b"1\n2\n3\nfour\n")
    assert restore_patch_context(two, tmp_path) == two.replace(
        b"-[REDACTED:Secret Keyword]", b"-four", 1
    ).replace(b"-[REDACTED:Secret Keyword]", b"-z = 3")


# --- launch secrets ------------------------------------------------------------------------------


def test_launch_secrets_from_argv_by_content_and_by_part() -> None:
    argv = [
        "train.py",
        STRIPE,  # argv[1], by content
        f"--upstream={GITHUB}",  # an option's value
        "--db",
        "postgresql://trainer:pw-55x@db:5432/x",  # the password part only
        "--password",
        "true",  # a setting, not a secret
        "--lr",
        "0.1",
    ]
    found = launch_secrets(argv, {})
    assert [(k.source, k.value) for k in found] == [
        ("argv", GITHUB),
        ("argv", STRIPE),
        ("argv", "pw-55x"),
    ]
    # What redaction removed from an argument, whatever the length of what follows it.
    for url, pw in (("postgresql://u:pw-55x@db/x", "pw-55x"), ("mysql://u:hunter22@h", "hunter22")):
        assert [k.value for k in launch_secrets(["t.py", "--db", url], {})] == [pw]
    # A Hydra override's value, by content: the captured config holds it without its key.
    assert [k.value for k in launch_secrets(["t.py", f"upstream={STRIPE}"], {})] == [STRIPE]
    # Eight characters are enough to be judged by content (`pwd=abcd`: a keyword assignment).
    assert [k.value for k in launch_secrets(["t.py", "pwd=abcd"], {})] == ["abcd"]
    env = {"EXTRA_ARGS": "pwd=abcd", "SHORT": "pwd=abc"}
    assert [(k.source, k.value) for k in launch_secrets(["t.py"], env)] == [
        ("EXTRA_ARGS", "pwd=abcd")
    ]
    # The program itself is never taken for a secret: replay runs it again.
    assert launch_secrets([f"/opt/{STRIPE}"], {}) == []
    # The longest first (the scrubber's notes name the shortest).
    assert launch_secrets(["t.py", "--pwd", "hunter2", "-p", "psh9Kx"], {})[0].value == "hunter2"


def test_launch_secrets_from_the_environment(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path)
    (tmp_path / "hunter2pw").write_text("")  # a relative name is no path list, even if it exists
    env = {
        "DB_PASSWORD": "hunter2pw",
        "API_TOKEN_RETRIES": "12",  # two digits: a setting
        "PIN_SECRET": "123",  # three digits: a secret
        "LANG": "en_US.UTF-8",  # long, but nothing flags it
        "LEDGER_TOKEN": "ledger-own-1",  # ledger's own settings
        "STRIPE": STRIPE,
    }
    assert {(k.source, k.value) for k in launch_secrets(["t.py"], env)} == {
        ("DB_PASSWORD", "hunter2pw"),
        ("PIN_SECRET", "123"),
        ("STRIPE", STRIPE),
    }
    assert is_setting("12") is True and is_setting("123") is False and is_setting(" Off ")


def test_launch_secrets_remembers_clean_lines_only() -> None:
    memo: set[str] = set()
    env = {"LANG": "en_US.UTF-8", "STRIPE": STRIPE}
    found = launch_secrets(["t.py", "--data", "/srv/data/train-set"], env, memo)  # type: ignore[arg-type]
    assert [k.value for k in found] == [STRIPE]
    assert memo == {"LANG=en_US.UTF-8", "/srv/data/train-set"}
    # A line the memo holds skips the detectors.
    assert launch_secrets(["t.py"], {"STRIPE": STRIPE}, {f"STRIPE={STRIPE}"}) == []  # type: ignore[arg-type]


def test_secret_files_by_name_and_from_the_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    assert skipped_secret_file("config/.env", {})
    assert skipped_secret_file("deploy/id_rsa.pub/", {})
    monkeypatch.setenv("LEDGER_SECRET_FILES", "*.cfg")
    assert skipped_secret_file("x.cfg") and not skipped_secret_file(".env")


def test_restore_argv_keeps_an_unknown_marker_text_and_names_every_missing_variable() -> None:
    argv = ["t.py", "--a", "[REDACTED:A_TOKEN]", "--b", "x[REDACTED:B_KEY]y"]
    assert restore_argv(argv, {"A_TOKEN": "1", "B_KEY": "2"}) == ["t.py", "--a", "1", "--b", "x2y"]
    from ledger.errors import ReplayError

    with pytest.raises(ReplayError, match=r"\$A_TOKEN, \$B_KEY, which is not set now"):
        restore_argv(argv, {})
    with pytest.raises(ReplayError, match="given on the command line itself"):
        restore_argv(["t.py", "x[REDACTED:argv]"], {"argv": "v"})


# --- known values --------------------------------------------------------------------------------


def test_short_values_only_where_they_stand_alone() -> None:
    s = Scrubber([KnownSecret("PIN", "42x"), KnownSecret("TWO", "a1")])
    # Three characters are scrubbed anywhere; two only as a word of their own.
    assert s.scrub(b"id a42xb ba1c a1", "stdout") == (b"id a[REDACTED:PIN]b ba1c [REDACTED:TWO]")
    # The base64 of a two-byte value, standing alone, and its start in a longer stream.
    assert s.scrub(b"YTE= YT Ex", "stdout") == b"[REDACTED:TWO] [REDACTED:TWO] Ex"
    # In binary data, values of 8 bytes or more are scrubbed.
    b = Scrubber([KnownSecret("K", "abcdefgh")])
    assert b.scrub(b"\0abcdefgh", "w.bin") == b"\0[REDACTED:K]"
    assert b.scrub(b"", "w") == b"" and Scrubber([]).scrub(b"abcdefgh", "w") == b"abcdefgh"


def test_scrubbing_text_and_json_and_the_notes() -> None:
    s = Scrubber([KnownSecret("HF_TOKEN", "hf-abcdefgh"), KnownSecret("argv", "pw1")])
    data = {"hf-abcdefgh": ["x hf-abcdefgh", ("pw1",)], "n": 3, "s": "clean"}
    assert s.json(data, "config") == {
        "[REDACTED:HF_TOKEN]": ["x [REDACTED:HF_TOKEN]", ["[REDACTED:argv]"]],
        "n": 3,
        "s": "clean",
    }
    assert s.text("a hf-abcdefgh", "env") == "a [REDACTED:HF_TOKEN]"
    assert s.notes() == [
        "the value of $HF_TOKEN was scrubbed from config, env",
        "the value of secrets from the command line (the shortest, 3 characters) was scrubbed "
        "from config",
    ]
    assert b"hf-abcdefgh" in s.forms and s.longest_form >= len(b"hf-abcdefgh".hex())
    empty = Scrubber([])
    assert empty.text("hf-abcdefgh", "x") == "hf-abcdefgh" and empty.json([1], "x") == [1]
    assert empty.longest_form == 0 and empty.matcher_for(b"x") is None


def test_records_of_secrets_are_frozen() -> None:
    k, f = KnownSecret("A", "b"), Finding("stdout", 1, "x")
    for obj in (k, f):
        with pytest.raises(dataclasses.FrozenInstanceError):
            obj.where = "y"  # type: ignore[union-attr]
    assert len({k, KnownSecret("A", "b"), f, Finding("stdout", 1, "x")}) == 2


# --- the detectors -------------------------------------------------------------------------------


def test_detectors_never_verify_even_if_configured_to() -> None:
    done = _python(
        "from detect_secrets.settings import get_settings\n"
        "f = 'detect_secrets.filters.common.is_ignored_due_to_verification_policies'\n"
        "get_settings().filters[f] = {'min_level': 2}\n"
        "from ledger.capture.secrets import detect_line\n"
        f"assert detect_line('key = {STRIPE}') == 'Stripe Access Key'\n"
        "assert f not in get_settings().filters, 'verification left on'\n"
    )
    assert done.returncode == 0, done.stderr


def test_preload_imports_the_detectors_in_a_thread_that_never_holds_the_exit() -> None:
    done = _python(
        "from ledger.capture import secrets\n"
        "t = secrets.preload()\n"
        "t.join(30)\n"
        "assert secrets._plugins.cache_info().currsize == 1\n"
        "secrets.preload(600)\n",  # pending at exit: the process does not wait for it
        timeout=50,
    )
    assert done.returncode == 0, done.stderr


def test_a_long_line_is_judged_window_by_window_in_bounded_time() -> None:
    # Some detectors are quadratic in a line's length: under 64 KiB a line still goes through
    # them, but only in 4 KiB windows (a whole 64 KiB line of `ab://` took minutes). CPU time
    # of this process, which other processes on the machine do not lengthen.
    import time

    start = time.process_time()
    assert detect_line("ab://" * 13_000) is None
    assert time.process_time() - start < 30.0


@pytest.mark.parametrize(
    ("line", "kind"),
    [
        # A keyword's value counts at any length (the marker names the detector).
        ("api_key: abc", "Secret Keyword"),
        # Other detectors need 8 characters; a shorter URL password is left to the name rules.
        ("url = https://user:abcdefgh@host/x", "Basic Auth Credentials"),
        ("url = https://user:abcdefg@host/x", "name rule"),
        ("url = https://user:pw1@host/x", "name rule"),
    ],
)
def test_which_rule_flags_a_short_value(line: str, kind: str) -> None:
    assert detect_line(line) == kind


def test_a_patch_line_that_looks_like_a_file_header_is_scanned_too(tmp_path: Path) -> None:
    # A removed SQL comment `-- ...` is the patch line `--- ...`, an added `++ ...` is `+++ ...`:
    # only the hunk's line counts tell them from the next file's header. They were stored as
    # they were, secret included.
    repo = tmp_path / "r"
    repo.mkdir()

    def git(*args: str) -> bytes:
        return subprocess.run(
            ["git", "-c", "user.name=t", "-c", "user.email=t@e", *args],
            cwd=repo, check=True, capture_output=True,
        ).stdout  # fmt: skip

    git("init", "-q")
    (repo / "q.sql").write_text("select 1;\n-- db password = hunter2secret\nselect 2;\n")
    (repo / "dir b").mkdir()
    (repo / "dir b" / "x.py").write_text("x = 1\n")
    (repo / "one.txt").write_text("a\n")
    (repo / "r.py").write_text("password = 'ctx-Secret-1'\nx = 1\n")
    git("add", "-A")
    git("commit", "-qm", "c")
    (repo / "q.sql").write_text(f"select 1;\nselect 2;\n++ token = {GITHUB}\n")
    (repo / "dir b" / "x.py").write_text(f"x = 1\nkey = '{STRIPE}'\n")
    # A one-line hunk (`@@ -1 +1 @@`: no counts), then a new file (`--- /dev/null`).
    (repo / "one.txt").write_text("b\n")
    (repo / "p.py").write_text(f"k = '{STRIPE}'\n")
    # After q.sql's hunk (more old lines than new ones), a file with a redacted context line.
    (repo / "r.py").write_text("password = 'ctx-Secret-1'\nx = 2\n")
    (repo / "e.py").write_text(f"k = '{STRIPE}'\n")  # new, after a hunk with more new lines
    (repo / "t\u00e9st.py").write_text(f"k = '{STRIPE}'\n")  # git quotes this name
    git("add", "p.py", "e.py", "t\u00e9st.py")
    patch = git("diff", "HEAD")
    red, found = redact_patch(patch)
    assert b"hunter2secret" not in red and GITHUB.encode() not in red and STRIPE.encode() not in red
    assert [(f.where, f.line, f.kind, f.kept) for f in found] == [
        ("dir b/x.py", 2, "Base64 High Entropy String", False),  # a name holding " b/"
        ("e.py", 1, "Base64 High Entropy String", False),
        ("p.py", 1, "Base64 High Entropy String", False),
        ("q.sql", 2, "name rule", True),
        ("q.sql", 3, "GitHub Token", False),
        ("r.py", 1, "Secret Keyword", True),
        ("t\u00e9st.py", 1, "Base64 High Entropy String", False),
    ]
    # Replay puts the removed line back from the commit, and the patch applies.
    git("reset", "-q", "--hard")
    for new in ("p.py", "e.py", "t\u00e9st.py"):
        (repo / new).unlink(missing_ok=True)
    (tmp_path / "p").write_bytes(restore_patch_context(red, repo))
    git("apply", str(tmp_path / "p"))
    assert (repo / "q.sql").read_text() == "select 1;\nselect 2;\n[REDACTED:GitHub Token]\n"
    assert (repo / "r.py").read_text() == "password = 'ctx-Secret-1'\nx = 2\n"


@pytest.mark.parametrize(
    "secret",
    ["pa55**", "***pa55", "hunter2*", "ted***9q", "***re4Lpw"],
)
def test_a_secret_sharing_characters_with_the_marker_is_known_whole(secret: str) -> None:
    # redact_argv puts ***redacted*** (or *** in a URL) in place of the value; matching the
    # common prefix and suffix of the two would eat the secret's own '*' or letters of
    # "redacted" at its ends, and leave them in the logs.
    url = f"postgresql://trainer:{secret}@db:5432/x"
    for argv in (["t.py", f"--password={secret}"], ["t.py", "--password", secret], ["t.py", url]):
        assert [k.value for k in launch_secrets(argv, {})] == [secret]


def test_a_stream_scrubs_a_value_split_across_chunks() -> None:
    s = Scrubber([KnownSecret("HF_TOKEN", "hf-abcdefgh")])
    stream = s.stream("stdout")
    out = stream.feed(b"token hf-abc") + stream.feed(b"defgh done\n") + stream.flush()
    assert out == b"token [REDACTED:HF_TOKEN] done\n"
    assert s.hits == {"HF_TOKEN": {"stdout"}}


def test_a_value_of_eight_characters_is_not_called_short() -> None:
    s = Scrubber([KnownSecret("K8", "abcdefgh"), KnownSecret("K7", "abcdefg")])
    s.text("abcdefgh", "env")
    s.text("x abcdefg y", "env")
    assert s.notes() == [
        "the value of $K7 (a short value, 7 characters) was scrubbed from env",
        "the value of $K8 was scrubbed from env",
    ]


def test_the_note_counts_one_more_past_ten_lines(tmp_path: Path) -> None:
    (tmp_path / "stdout.log").write_bytes(f"aws {AWS}\n".encode() * 11)
    (note,) = scrub_run_dir(tmp_path, Scrubber([]))
    assert note.startswith("lines holding secrets were redacted in the logs (11): stdout:1 ")
    assert note.endswith("stdout:10 (AWS Access Key) and 1 more")


def test_a_patch_without_markers_and_redacted_added_lines_are_kept(tmp_path: Path) -> None:
    (tmp_path / "a.py").write_bytes(b"x = 1\npassword = 'in-head-Q1'\ny = 2\n")
    clean = b"diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1,1 +1,1 @@\n-x = 1\n+x = 2\n"
    assert restore_patch_context(clean, tmp_path) == clean
    added = (
        b"diff --git a/a.py b/a.py\n--- a/a.py\n+++ b/a.py\n@@ -1,3 +1,4 @@\n x = 1\n"
        b"+[REDACTED:Secret Keyword]\n [REDACTED:Secret Keyword]\n y = 2\n"
    )
    assert restore_patch_context(added, tmp_path) == added.replace(
        b" [REDACTED:Secret Keyword]\n", b" password = 'in-head-Q1'\n"
    )


def test_a_token_at_the_start_of_an_argument_is_known_without_what_follows() -> None:
    assert [k.value for k in launch_secrets(["t.py", f"{GITHUB} tail"], {})] == [GITHUB]
    assert [k.value for k in launch_secrets(["t.py", f"{GITHUB}/x"], {})] == [GITHUB]
