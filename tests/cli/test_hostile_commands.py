"""The commands beyond ``lint``/``validate``/``compat``/``policy test`` on hostile input
and for scripts: ``diff``, ``sync``, ``gen``, ``audit``, ``up``'s and ``webhook serve``'s
file options and every kubeconfig read. Each input that cannot be read (endless, too large,
a directory, not UTF-8, an alias bomb, nested past any parser, missing) gives one
``kubewerk: error:`` line and exit 2 in bounded time and memory, never a traceback; the
input limit is ``--max-input-bytes``; outputs are written whole or not at all.

In-process (``kubewerk.cli.main``), so each case costs milliseconds; a small
``--max-input-bytes`` stands in for the 64 MiB default wherever only the bound matters."""

from __future__ import annotations

import argparse
import os
import time
from pathlib import Path

import pytest

from kubewerk.cli import build_parser, main
from kubewerk.client.client import RetryPolicy
from kubewerk.core.inputs import DEFAULT_MAX_INPUT_BYTES, MiB, parse_byte_size
from tests.cli.test_hostile_files import laughs

CM = "apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a, namespace: default}\n"
UNREACHABLE = "http://127.0.0.1:1"


@pytest.fixture(autouse=True)
def _no_backoff(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """An unreachable sync target fails at once; no kubeconfig from the environment."""
    monkeypatch.setattr(RetryPolicy, "delay", lambda self, attempt: 0.0)
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))


@pytest.fixture
def files(tmp_path: Path) -> Path:
    (tmp_path / "cm.yaml").write_text(CM)
    (tmp_path / "binary.yaml").write_bytes(b"apiVersion: v1\nkind: \xff\xfe\x00\n")
    (tmp_path / "laughs.yaml").write_text(laughs())
    (tmp_path / "deep.yaml").write_text("a: " + "[" * 100_000 + "]" * 100_000 + "\n")
    (tmp_path / "deep.json").write_text("[" * 100_000 + "]" * 100_000 + "\n")
    (tmp_path / "line.yaml").write_text(CM + "data: {k: '" + "x" * (2 * MiB) + "'}\n")
    (tmp_path / "zero.yaml").symlink_to("/dev/zero")
    return tmp_path


def run(capsys: pytest.CaptureFixture[str], *argv: str) -> tuple[int, str, str]:
    """Exit code, stdout and the one error line of an in-process run (asserted: no
    traceback, exactly one ``kubewerk: error:`` line when the code is 2)."""
    started = time.monotonic()
    code = main(list(argv))
    assert time.monotonic() - started < 10, argv
    out, err = capsys.readouterr()
    assert "Traceback" not in err, err
    errors = [line for line in err.splitlines() if line.startswith("kubewerk: error: ")]
    if code == 2:
        assert len(errors) == 1, err
    return code, out, errors[0] if errors else err


def _sides(command: str, bad: str, good: str) -> list[str]:
    if command == "diff-src":
        return ["diff", bad, good]
    if command == "diff-dst":
        return ["diff", good, bad]
    return ["sync", "--from", bad, "--to", UNREACHABLE, "--dry-run"]


DIFF_AND_SYNC = ["diff-src", "diff-dst", "sync"]


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
@pytest.mark.parametrize("command", DIFF_AND_SYNC)
@pytest.mark.parametrize("name", ["/dev/zero", "zero.yaml"])
def test_diff_and_sync_refuse_an_endless_input_at_the_limit(
    files: Path, capsys: pytest.CaptureFixture[str], command: str, name: str
) -> None:
    """Before: /dev/zero was 'no such file or directory' and a symlink to it named
    *.yaml was read until memory ran out."""
    bad = name if name.startswith("/") else str(files / name)
    argv = [*_sides(command, bad, str(files / "cm.yaml")), "--max-input-bytes", "1Mi"]
    code, _, line = run(capsys, *argv)
    assert code == 2
    assert line == (
        f"kubewerk: error: {bad}: larger than 1048576 bytes (1 MiB), the most kubewerk reads "
        "from one input; split it into several files or raise --max-input-bytes"
    )


@pytest.mark.parametrize("command", DIFF_AND_SYNC)
def test_diff_and_sync_bound_a_large_file_and_the_flag_raises_the_bound(
    files: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    big = str(files / "line.yaml")
    code, _, line = run(
        capsys, *_sides(command, big, str(files / "cm.yaml")), "--max-input-bytes", "2Mi"
    )
    assert code == 2 and f"{big}: larger than 2097152 bytes (2 MiB)" in line, line
    code, _, _ = run(
        capsys, *_sides(command, big, str(files / "cm.yaml")), "--max-input-bytes", "3Mi"
    )
    assert code == 1  # read: the sides differ (diff), the target is unreachable (sync)


@pytest.mark.parametrize("command", DIFF_AND_SYNC)
def test_diff_and_sync_read_a_pipe_named_on_the_command_line(
    files: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    """``kubewerk diff <(kustomize build) ...``: /dev/fd/N is a pipe, not a regular file
    (it was 'no such file or directory')."""
    read_end, write_end = os.pipe()
    os.write(write_end, CM.encode())
    os.close(write_end)
    try:
        code, out, err = run(
            capsys, *_sides(command, f"/dev/fd/{read_end}", str(files / "cm.yaml"))
        )
    finally:
        os.close(read_end)
    if command == "sync":
        assert code == 1 and "unreachable" in out, (out, err)
    else:
        assert code == 0, err


READING_COMMANDS = [
    ["lint"],
    ["compat"],
    ["validate"],
    ["graph"],
    ["policy", "test"],
    ["diff"],
    ["sync"],
    ["gen", "policy"],
    ["audit", "history"],
    ["webhook", "serve"],
]


def _subparser(words: list[str]) -> argparse.ArgumentParser:
    parser = build_parser(words[0])
    for word in words:
        sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
        parser = sub.choices[word]
    return parser


@pytest.mark.parametrize("words", READING_COMMANDS, ids=" ".join)
def test_every_command_that_reads_inputs_documents_the_limit(words: list[str]) -> None:
    text = " ".join(_subparser(words).format_help().split())
    assert "--max-input-bytes BYTES read at most BYTES from" in text, text
    assert "default: 64 MiB)" in text, text


@pytest.mark.parametrize(
    ("value", "message"),
    [
        ("0", "'0': must be at least 1 byte"),
        ("-1", "'-1' is not a byte count (digits, optionally followed by Ki, Mi or Gi: 64Mi)"),
        ("1.5Mi", "'1.5Mi' is not a byte count"),
        ("64MB", "'64MB' is not a byte count"),
        ("abc", "'abc' is not a byte count"),
        ("", "'' is not a byte count"),
        ("5Gi", "'5Gi': must be at most 4 GiB"),
        ("9" * 5000, "must be at most 4 GiB"),
    ],
    ids=["zero", "negative", "fraction", "other-suffix", "word", "empty", "huge", "5000-digits"],
)
def test_bad_limits_are_refused_with_the_option_named(
    files: Path, capsys: pytest.CaptureFixture[str], value: str, message: str
) -> None:
    with pytest.raises(SystemExit) as exc:
        main(["diff", str(files / "cm.yaml"), str(files / "cm.yaml"), "--max-input-bytes", value])
    assert exc.value.code == 2
    last = capsys.readouterr().err.splitlines()[-1]
    assert last.startswith("kubewerk diff: error: argument --max-input-bytes: "), last
    assert message in last, last


def test_limits_are_read_as_bytes_with_binary_suffixes() -> None:
    assert parse_byte_size("1") == 1
    assert parse_byte_size("64Mi") == DEFAULT_MAX_INPUT_BYTES
    assert parse_byte_size("0010Ki") == 10 * 1024
    assert parse_byte_size("4Gi") == 4 * 1024 * MiB


# -- the kubeconfig every cluster-reading command reads ---------------------------------


def _kubeconfig_with_ca(path: Path, ca: str) -> Path:
    path.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: ctx\n"
        f"clusters: [{{name: c, cluster: {{server: '{UNREACHABLE}',"
        f" certificate-authority: {ca}}}}}]\n"
        "users: [{name: u, user: {}}]\n"
        "contexts: [{name: ctx, context: {cluster: c, user: u}}]\n"
    )
    return path


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("line.yaml", "cannot read kubeconfig {path}: larger than 1048576 bytes (1 MiB)"),
        ("binary.yaml", "kubeconfig {path} is not UTF-8 text"),
        ("deep.yaml", "kubeconfig {path} is not valid YAML (line 1)"),
        ("deep.json", "kubeconfig {path} is not valid YAML (line 1)"),
        ("ca", "cannot read certificate authority {big}: larger than 1048576 bytes (1 MiB)"),
    ],
    ids=["too-large", "not-utf8", "deep-yaml", "deep-json", "too-large-ca-file"],
)
@pytest.mark.parametrize(
    "argv",
    [["diff", "{cm}", "cluster:ctx"], ["lint", "cluster:x.example.com"], ["graph", "--cluster"]],
    ids=["diff", "lint", "graph"],
)
def test_a_kubeconfig_that_cannot_be_read_is_one_line(
    files: Path, capsys: pytest.CaptureFixture[str], name: str, message: str, argv: list[str]
) -> None:
    """Before: read without a bound (/dev/zero as kubeconfig or as its CA file was a
    MemoryError traceback; a 2 MiB file stands in here, which the old code read whole and
    then did not find the context in), a UnicodeDecodeError or RecursionError traceback."""
    path = str(files / name)
    if name == "ca":
        path = str(_kubeconfig_with_ca(files / "kc", str(files / "line.yaml")))
    words = [w.replace("{cm}", str(files / "cm.yaml")) for w in argv]
    words += ["--kubeconfig", path, "--max-input-bytes", "1Mi"]
    code, _, line = run(capsys, *words)
    assert code == 2
    assert line.endswith(message.format(path=path, big=files / "line.yaml")), line


# -- gen ----------------------------------------------------------------------------------

POLICY_DATA = """\
name: replica-limit
match:
  - {apiGroups: [apps], apiVersions: [v1], resources: [deployments]}
check:
  expression: object.spec.replicas <= 5
  message: too many
"""


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("line.yaml", "line.yaml: larger than 1048576 bytes (1 MiB)"),
        ("binary.yaml", "binary.yaml:2: not UTF-8 text"),
        ("laughs.yaml", "laughs.yaml: invalid YAML: document contains excessive aliasing"),
        ("deep.yaml", "deep.yaml:1: invalid YAML"),
        ("missing.yaml", "missing.yaml: No such file or directory"),
        ("dir.yaml", "dir.yaml: Is a directory"),
    ],
    ids=["too-large", "not-utf8", "alias-bomb", "deep", "missing", "directory"],
)
def test_gen_policy_refuses_unreadable_policy_files_with_one_line(
    files: Path, capsys: pytest.CaptureFixture[str], name: str, message: str
) -> None:
    """Before: read without a bound (/dev/zero: a MemoryError traceback) and a
    UnicodeDecodeError traceback for a file that is not UTF-8."""
    (files / "dir.yaml").mkdir()
    code, _, line = run(capsys, "gen", "policy", str(files / name), "--max-input-bytes", "1Mi")
    assert code == 2
    assert line.startswith(f"kubewerk: error: {files}/{message}"), line


# -- audit history ------------------------------------------------------------------------


def test_audit_history_bounds_each_line_of_the_log(
    files: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A log is read line by line; a line over the limit stops it (before: /dev/zero as
    the log was a MemoryError traceback, one endless line)."""
    log = str(files / "line.yaml")
    code, _, line = run(
        capsys, "audit", "history", "cm/a", "--log", log, "--max-input-bytes", "1Mi"
    )
    assert code == 2
    assert line == (
        f"kubewerk: error: audit log {log}: a line is longer than 1048576 bytes (1 MiB), "
        "the most kubewerk reads of one event; raise --max-input-bytes"
    )
    code, _, line = run(
        capsys, "audit", "history", "cm/a", "--log", log, "--max-input-bytes", "3Mi"
    )
    assert code == 2 and line.endswith("not an audit log: no line is an audit.k8s.io Event")


# -- files given to servers: up's security options, webhook serve's certificates --------

UP = ["up", "--port", "0", "--kubeconfig", "{dir}/kc"]
SERVER_FILE_OPTIONS = [
    [*UP, "--token-auth-file", "{f}"],
    [*UP, "--client-ca-file", "{f}"],
    [*UP, "--tls-cert-file", "{f}", "--tls-private-key-file", "{dir}/cm.yaml"],
    [*UP, "--tls-cert-file", "{dir}/cm.yaml", "--tls-private-key-file", "{f}"],
    [*UP, "--encryption-provider-config", "{f}"],
    [*UP, "--audit-policy-file", "{f}", "--audit-log-path", "{dir}/audit.log"],
    ["webhook", "serve", "tests.webhook.models:app", "--cert", "{f}", "--key", "{dir}/cm.yaml"],
    ["webhook", "serve", "tests.webhook.models:app", "--cert", "{dir}/cm.yaml", "--key", "{f}"],
    [
        "webhook", "serve", "tests.webhook.models:app", "--cert", "{dir}/cm.yaml",
        "--key", "{dir}/cm.yaml", "--client-ca", "{f}",
    ],
]  # fmt: skip


def _flag_of(argv: list[str]) -> str:
    return argv[argv.index("{f}") - 1]


@pytest.mark.parametrize("argv", SERVER_FILE_OPTIONS, ids=_flag_of)
@pytest.mark.parametrize("kind", ["device", "fifo", "directory", "too-large"])
def test_server_file_options_take_regular_files_within_the_limit(
    files: Path,
    capsys: pytest.CaptureFixture[str],
    monkeypatch: pytest.MonkeyPatch,
    argv: list[str],
    kind: str,
) -> None:
    """Before: /dev/zero was a MemoryError traceback (up) or a TLS library reading it for
    ever (webhook serve); a FIFO blocked the start until someone wrote to it. The check
    runs before the server starts, so nothing listens; it reads the size only, so a
    sparse file one byte over 64 MiB stands for a large one (up takes no
    --max-input-bytes: the default limit is checked)."""
    monkeypatch.chdir(Path(__file__).resolve().parents[2])  # tests.webhook.models imports
    if kind == "fifo":
        os.mkfifo(files / "fifo")
    if kind == "too-large":
        with open(files / "sparse.pem", "wb") as sparse:
            sparse.truncate(DEFAULT_MAX_INPUT_BYTES + 1)
    target = {
        "device": "/dev/zero",
        "fifo": str(files / "fifo"),
        "directory": str(files),
        "too-large": str(files / "sparse.pem"),
    }[kind]
    words = [w.replace("{f}", target).replace("{dir}", str(files)) for w in argv]
    code, _, line = run(capsys, *words)
    assert code == 2
    expected = {
        "device": "not a regular file (a device, a pipe or a socket)",
        "fifo": "not a regular file (a device, a pipe or a socket)",
        "directory": "is a directory, not a file",
        "too-large": "larger than 67108864 bytes (64 MiB)",
    }[kind]
    assert line == f"kubewerk: error: {_flag_of(argv)} {target}: {expected}", line


# -- numeric options at their bounds -------------------------------------------------------


def test_up_simulates_at_most_the_largest_supported_cluster(
    capsys: pytest.CaptureFixture[str],
) -> None:
    """Before: --nodes 99999999999999999999 allocated Nodes until memory ran out, before
    the server even listened."""
    for value in ("5001", "9" * 20):
        with pytest.raises(SystemExit) as exc:
            main(["up", "--simulate", "--nodes", value])
        assert exc.value.code == 2
        last = capsys.readouterr().err.splitlines()[-1]
        assert last == (
            "kubewerk up: error: argument --nodes: at most 5000 (the largest cluster "
            f"Kubernetes supports), not '{value}'"
        )


@pytest.mark.parametrize(
    ("days", "message"),
    [
        ("0", "--days must be positive, not 0"),
        ("-3", "--days must be positive, not -3"),
        ("3000000", "--days 3000000: the certificates would expire after 9999-12-31"),
        ("9" * 20, f"--days {'9' * 20}: the certificates would expire after 9999-12-31"),
    ],
    ids=["zero", "negative", "past-year-9999", "past-a-C-int"],
)
def test_webhook_certs_days_out_of_range_is_one_line(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], days: str, message: str
) -> None:
    """Before: a count past year 9999 was an OverflowError traceback."""
    out = tmp_path / "certs"
    argv = ["webhook", "certs", "--service", "s", "--namespace", "n", "--out", str(out)]
    code, _, line = run(capsys, *argv, "--days", days)
    assert code == 2 and line.startswith(f"kubewerk: error: {message}"), line
    assert not out.exists()


def test_gen_deploy_replicas_is_an_int32(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Before: 99999999999999999999 was written into the Deployment, which a cluster then
    refuses to decode."""
    monkeypatch.chdir(Path(__file__).resolve().parents[2])
    out = tmp_path / "deploy"
    argv = ["gen", "deploy", "examples.database_operator.main:manager", "--image", "x:1"]
    code, _, line = run(capsys, *argv, "-o", str(out), "--replicas", str(2**31))
    assert code == 2
    assert line == (
        "kubewerk: error: --replicas 2147483648: must be at most 2147483647 "
        "(a Deployment's spec.replicas is an int32)"
    )
    assert not out.exists()


# -- diff and sync: what the file holds ---------------------------------------------------


@pytest.mark.parametrize("command", DIFF_AND_SYNC)
@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("binary.yaml", "binary.yaml: not YAML: unacceptable character #x00ff"),
        ("laughs.yaml", "laughs.yaml: not YAML: yaml: document contains excessive aliasing"),
        ("deep.yaml", "deep.yaml: not YAML: while increasing flow level exceeded maximum"),
        ("deep.json", "deep.json: not YAML: while increasing flow level exceeded maximum"),
        ("missing.yaml", "missing.yaml: no such file or directory"),
    ],
    ids=["not-utf8", "alias-bomb", "deep-yaml", "deep-json", "missing"],
)
def test_diff_and_sync_refuse_unreadable_manifests_with_one_line(
    files: Path, capsys: pytest.CaptureFixture[str], command: str, name: str, message: str
) -> None:
    code, out, line = run(capsys, *_sides(command, str(files / name), str(files / "cm.yaml")))
    assert code == 2 and out == ""
    assert line.startswith(f"kubewerk: error: {files}/{message}"), line


@pytest.mark.skipif(os.geteuid() == 0, reason="root reads files whatever their mode")
@pytest.mark.parametrize("command", DIFF_AND_SYNC)
def test_diff_and_sync_name_a_file_they_may_not_read(
    files: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    locked = files / "locked.yaml"
    locked.write_text(CM)
    locked.chmod(0)
    code, _, line = run(capsys, *_sides(command, str(locked), str(files / "cm.yaml")))
    assert code == 2 and line == f"kubewerk: error: {locked}: Permission denied"


@pytest.mark.parametrize("command", DIFF_AND_SYNC)
def test_a_directory_walk_skips_devices_fifos_and_link_loops(
    files: Path, capsys: pytest.CaptureFixture[str], command: str
) -> None:
    """A FIFO or a link to /dev/zero named *.yaml inside a directory would block or never
    end: only regular files are read, and links to directories are not followed."""
    tree = files / "tree"
    tree.mkdir()
    (tree / "cm.yaml").write_text(CM)
    os.mkfifo(tree / "pipe.yaml")
    (tree / "zero.yaml").symlink_to("/dev/zero")
    (tree / "up").symlink_to("..")
    (tree / "self").symlink_to(".")
    code, out, err = run(capsys, *_sides(command, str(tree), str(files / "cm.yaml")))
    if command == "sync":
        assert code == 1 and "unreachable" in out, (out, err)
    else:
        assert code == 0, (out, err)


@pytest.mark.parametrize(
    "argv",
    [
        ["lint", "{bad}", "--format", "json"],
        ["validate", "--crd", "{bad}", "{cm}", "--format", "json"],
        ["graph", "{bad}", "--format", "json"],
        ["diff", "{bad}", "{cm}", "-o", "json"],
        ["sync", "--from", "{bad}", "--to", UNREACHABLE, "-o", "json"],
        ["policy", "test", "--policy", "{bad}", "--resource", "{cm}", "-o", "json"],
        ["audit", "history", "cm/a", "--log", "{bad}", "-o", "json"],
    ],
    ids=lambda argv: argv[0] if argv[0] != "policy" else "policy-test",
)
def test_json_output_modes_print_nothing_on_stdout_when_the_input_is_unreadable(
    files: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    """No command documents errors as JSON: a script reading stdout gets nothing (never
    half a document), the one error line is on stderr and the exit code is 2."""
    bad = str(files / "line.yaml")
    words = [w.replace("{bad}", bad).replace("{cm}", str(files / "cm.yaml")) for w in argv]
    code, out, line = run(capsys, *words, "--max-input-bytes", "1Mi")
    assert code == 2 and out == ""
    assert "larger than 1048576 bytes" in line or "longer than 1048576 bytes" in line, line


@pytest.mark.parametrize(
    ("name", "message"),
    [
        ("deep.yaml", "deep.yaml:1: invalid YAML: exceeded maximum nesting depth"),
        ("deep.json", "deep.json:1: invalid YAML: exceeded maximum nesting depth"),
        ("line.yaml", "line.yaml: larger than 1048576 bytes (1 MiB)"),
        ("binary.yaml", "binary.yaml: config is not UTF-8 text"),
    ],
    ids=["deep-yaml", "deep-json", "too-large", "not-utf8"],
)
def test_lint_config_files_that_cannot_be_read_are_one_line(
    files: Path, capsys: pytest.CaptureFixture[str], name: str, message: str
) -> None:
    """Before: a 100k-deep config was a RecursionError traceback, /dev/zero read without
    a bound."""
    argv = ["lint", str(files / "cm.yaml"), "--config", str(files / name)]
    code, _, line = run(capsys, *argv, "--max-input-bytes", "1Mi")
    assert code == 2 and line.startswith(f"kubewerk: error: {files}/{message}"), line


def test_up_refuses_a_directory_as_its_audit_log(
    files: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: an IsADirectoryError traceback from the audit writer."""
    policy = files / "policy.yaml"
    policy.write_text("apiVersion: audit.k8s.io/v1\nkind: Policy\nrules: [{level: Metadata}]\n")
    argv = [*UP, "--audit-policy-file", str(policy), "--audit-log-path", str(files)]
    code, _, line = run(capsys, *[w.replace("{dir}", str(files)) for w in argv])
    assert code == 2
    assert line == f"kubewerk: error: --audit-log-path {files}: is a directory, not a file"


def test_up_names_a_token_file_that_is_not_utf8(
    files: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: a bare "'utf-8' codec can't decode ..." line naming no file."""
    tokens = files / "tokens.csv"
    tokens.write_bytes(b"tok\xff,user,uid\n")
    argv = [*UP, "--token-auth-file", str(tokens)]
    code, _, line = run(capsys, *[w.replace("{dir}", str(files)) for w in argv])
    assert code == 2
    assert line == (
        f"kubewerk: error: token file '{tokens}': not UTF-8 text (byte 0xff at offset 3)"
    )


def test_git_blobs_over_the_limit_are_refused(
    files: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """git:REV:PATH: the blob's size comes from ``git ls-tree`` and one over the limit is
    refused without ``git cat-file`` reading it (before: every blob was read whole)."""
    import subprocess

    repo = files / "repo"
    repo.mkdir()
    (repo / "cm.yaml").write_text(CM)
    (repo / "big.yaml").write_text((files / "line.yaml").read_text())
    env = {**os.environ, "GIT_CONFIG_GLOBAL": os.devnull, "GIT_CONFIG_NOSYSTEM": "1"}
    for args in (["init", "-q"], ["add", "."], ["commit", "-qm", "x"]):
        subprocess.run(
            ["git", "-c", "user.email=a@b", "-c", "user.name=n", *args],
            cwd=repo,
            env=env,
            check=True,
        )
    monkeypatch.chdir(repo)
    code, _, line = run(capsys, "diff", "git:HEAD:", str(repo), "--max-input-bytes", "1Mi")
    assert code == 2
    assert line.startswith("kubewerk: error: HEAD:big.yaml: larger than 1048576 bytes (1 MiB)")
    code, _, _ = run(capsys, "diff", "git:HEAD:", str(repo), "--max-input-bytes", "3Mi")
    assert code == 0
    # lint reads git:REV:PATH through `git show`, streamed under the limit (it was
    # captured whole), and stops git past it
    code, _, line = run(capsys, "lint", "git:HEAD:big.yaml", "--max-input-bytes", "1Mi")
    assert code == 2
    assert line.startswith("kubewerk: error: git:HEAD:big.yaml: larger than 1048576 bytes")
    code, _, _ = run(capsys, "lint", "git:HEAD:big.yaml", "--max-input-bytes", "3Mi")
    assert code == 0


# -- outputs that cannot be written --------------------------------------------------------

CRD = """\
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: widgets.example.com}
spec:
  group: example.com
  scope: Namespaced
  names: {plural: widgets, singular: widget, kind: Widget, listKind: WidgetList}
  versions:
    - {name: v1, served: true, storage: true, schema: {openAPIV3Schema: {type: object}}}
"""


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (["lint", "{crd}", "-o", "{out}", "--fail-on", "never"], "{out}: cannot write: {why}"),
        (["graph", "{crd}", "-o", "{out}"], "{out}: cannot write: {why}"),
        (["gen", "policy", "{policy}", "-o", "{out}"], "-o {out}: {why}"),
        (
            ["webhook", "certs", "--service", "s", "--namespace", "n", "--out", "{out}"],
            "cannot write certificates to {out}: {why}",
        ),
    ],
    ids=["lint", "graph", "gen-policy", "webhook-certs"],
)
@pytest.mark.parametrize(
    ("where", "why"),
    [("missing/dir/out", "No such file or directory"), ("cm.yaml/out", "Not a directory")],
    ids=["missing-directory", "under-a-file"],
)
def test_an_output_that_cannot_be_written_is_one_line_and_nothing_is_left(
    files: Path,
    capsys: pytest.CaptureFixture[str],
    argv: list[str],
    message: str,
    where: str,
    why: str,
) -> None:
    (files / "crd.yaml").write_text(CRD)
    (files / "policy.yaml").write_text(POLICY_DATA)
    before = sorted(p.name for p in files.iterdir())
    out = files / where
    if argv[0] in ("gen", "webhook") and why == "No such file or directory":
        out = files / "cm.yaml" / "x" / "y"  # these create missing directories
        why = "Not a directory"
    subs = {"{crd}": files / "crd.yaml", "{policy}": files / "policy.yaml", "{out}": out}
    words = [str(subs.get(w, w)) for w in argv]
    code, _, line = run(capsys, *words)
    assert code == 2
    assert line == "kubewerk: error: " + message.format(out=out, why=why), line
    assert sorted(p.name for p in files.iterdir()) == before  # no temporary file left


@pytest.mark.skipif(not os.path.exists("/dev/zero"), reason="needs /dev/zero")
@pytest.mark.parametrize("command", ["lint", "graph"])
def test_the_limit_bounds_standard_input(
    capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch, command: str
) -> None:
    import io
    import sys

    with open("/dev/zero", "rb") as zero:
        monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(zero))
        code, _, line = run(capsys, command, "-", "--max-input-bytes", "10Ki")
    assert code == 2
    assert line.startswith("kubewerk: error: <stdin>: larger than 10240 bytes (10 KiB)"), line


def test_running_out_of_memory_is_one_line_and_exit_2(
    files: Path, capsys: pytest.CaptureFixture[str], monkeypatch: pytest.MonkeyPatch
) -> None:
    """Inputs are bounded, but what a bounded input expands to may still not fit: a
    MemoryError ends as one line, not a traceback."""

    def exhausted(args: argparse.Namespace) -> int:
        raise MemoryError

    monkeypatch.setattr("kubewerk.cli.sync.run_diff", exhausted)
    code, out, line = run(capsys, "diff", str(files / "cm.yaml"), str(files / "cm.yaml"))
    assert code == 2 and out == ""
    assert line == (
        "kubewerk: error: out of memory: the inputs are too large for this machine; "
        "give fewer or smaller ones"
    )


def test_gen_names_a_python_target_that_is_not_a_regular_file(
    files: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Before: a FIFO or directory named *.py was 'no such file'."""
    os.mkfifo(files / "pipe.py")
    (files / "pkg.py").mkdir()
    for name in ("pipe.py", "pkg.py"):
        code, _, line = run(capsys, "gen", "crd", str(files / name))
        assert code == 2 and line == f"kubewerk: error: {files / name}: not a regular file"
    code, _, line = run(capsys, "gen", "crd", str(files / "absent.py"))
    assert code == 2 and line == f"kubewerk: error: {files / 'absent.py'}: no such file"
