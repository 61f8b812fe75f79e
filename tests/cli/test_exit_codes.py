"""Every ``kubewerk`` command that talks to a cluster exits as the README's "Exit codes"
table says when the cluster cannot be used: 2 when the cluster is the command's input
(its kubeconfig is missing or broken, its server does not answer or refuses the
credentials); 1 when it is what the command acts on (``kubewerk run``'s cluster, a
``sync`` target), reported as that command's result. Never a traceback; an error is
one ``kubewerk: error:`` line on stderr.

In-process and fast: the client's retry backoff is patched to zero, so an unreachable
address (http://127.0.0.1:1) fails at once, and a tiny local HTTP server answers every
request with kube-apiserver's 401 body for refused credentials."""

from __future__ import annotations

import http.server
import json
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

import kubewerk.core.gcpolicy
from kubewerk.cli import main
from kubewerk.cli.kubectl_plugin import main as plugin_main
from kubewerk.client.client import RetryPolicy

CRD_NAME = "widgets.test.kubewerk.dev"
UNAUTHORIZED = {
    "kind": "Status",
    "apiVersion": "v1",
    "metadata": {},
    "status": "Failure",
    "message": "Unauthorized",
    "reason": "Unauthorized",
    "code": 401,
}


class _Refuse(http.server.BaseHTTPRequestHandler):
    """Answers every request as kube-apiserver answers a token it does not know."""

    def _refuse(self) -> None:
        body = json.dumps(UNAUTHORIZED).encode()
        self.send_response(401)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = do_POST = do_PATCH = do_PUT = do_DELETE = _refuse

    def log_message(self, format: str, *args: object) -> None:
        pass


class _ForbidVersion(_Refuse):
    """403 for ``/version`` (a cluster whose RBAC took it away from every user), 401
    for everything else."""

    def _refuse(self) -> None:
        if self.path != "/version":
            super()._refuse()
            return
        forbidden = {**UNAUTHORIZED, "reason": "Forbidden", "code": 403}
        forbidden["message"] = 'forbidden: User "x" cannot get path "/version"'
        body = json.dumps(forbidden).encode()
        self.send_response(403)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        self.wfile.write(body)

    do_GET = _refuse


def _serve(handler: type[http.server.BaseHTTPRequestHandler]) -> Iterator[str]:
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@pytest.fixture(scope="module")
def refusing_server() -> Iterator[str]:
    yield from _serve(_Refuse)


@pytest.fixture(scope="module")
def version_forbidding_server() -> Iterator[str]:
    yield from _serve(_ForbidVersion)


def _kubeconfig(path: Path, server: str, token: str | None = None) -> Path:
    user = f"{{token: {token}}}" if token else "{}"
    path.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: ctx\n"
        f"clusters: [{{name: c, cluster: {{server: '{server}'}}}}]\n"
        f"users: [{{name: u, user: {user}}}]\n"
        "contexts: [{name: ctx, context: {cluster: c, user: u, namespace: default}}]\n"
    )
    return path


@pytest.fixture(autouse=True)
def _quick(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    """No retry backoff; no kubeconfig or pod service account from the environment;
    ``kubewerk run`` leaves the test process's garbage collector alone."""
    monkeypatch.setattr(RetryPolicy, "delay", lambda self, attempt: 0.0)
    monkeypatch.setattr(kubewerk.core.gcpolicy, "tune_for_long_lived_data", lambda: None)
    monkeypatch.delenv("KUBECONFIG", raising=False)
    monkeypatch.delenv("KUBERNETES_SERVICE_HOST", raising=False)
    monkeypatch.setenv("HOME", str(tmp_path / "home"))
    (tmp_path / "cm.yaml").write_text("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n")


# (id, argv, code when the cluster is unreachable or refuses us); {kc} is replaced by
# the kubeconfig's path, {dir} by the test's directory
COMMANDS: list[tuple[str, list[str], int]] = [
    ("run", ["run", "tests.runtime.widget_operator:manager", "--probe-address", "0"], 1),
    ("dashboard", ["dashboard", "--port", "0"], 2),
    ("graph", ["graph", "--cluster"], 2),
    ("diff", ["diff", "{dir}/cm.yaml"], 2),
    ("diff-cluster-source", ["diff", "cluster:ctx", "{dir}/cm.yaml"], 2),
    ("sync-source", ["sync", "--from", "cluster:ctx", "--to", "ctx", "--dry-run"], 2),
    ("lint-all", ["lint", "--cluster"], 2),
    ("lint-one", ["lint", f"cluster:{CRD_NAME}"], 2),
    ("compat", ["compat", f"cluster:{CRD_NAME}", f"cluster:{CRD_NAME}"], 2),
    ("validate", ["validate", "--crd", f"cluster:{CRD_NAME}", "{dir}/cm.yaml"], 2),
    ("plugin-health", ["@plugin", "health"], 2),
    ("plugin-why", ["@plugin", "why", "widget/a"], 2),
]


def _run(argv: list[str], kubeconfig: str | None, tmp_path: Path) -> int:
    words = [w.replace("{dir}", str(tmp_path)) for w in argv]
    if kubeconfig is not None:
        words += ["--kubeconfig", kubeconfig]
    if words[0] == "@plugin":
        return plugin_main(words[1:])
    return main(words)


def _one_error_line(err: str, prefix: str = "kubewerk: error: ") -> str:
    assert "Traceback" not in err, err
    lines = err.splitlines()
    errors = [line for line in lines if line.startswith(prefix)]
    assert len(errors) == 1, err
    return errors[0]


@pytest.mark.parametrize(("name", "argv", "code"), COMMANDS, ids=[c[0] for c in COMMANDS])
def test_an_unreachable_server(
    name: str, argv: list[str], code: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kc = _kubeconfig(tmp_path / "kc", "http://127.0.0.1:1")
    assert _run(argv, str(kc), tmp_path) == code
    prefix = "error: " if argv[0] == "@plugin" else "kubewerk: error: "
    line = _one_error_line(capsys.readouterr().err, prefix)
    assert "cannot reach the API server at http://127.0.0.1:1: connection refused" in line
    if code == 2:
        assert "cluster:ctx" in line or "cluster ctx" in line, line


@pytest.mark.parametrize(("name", "argv", "code"), COMMANDS, ids=[c[0] for c in COMMANDS])
def test_refused_credentials(
    name: str,
    argv: list[str],
    code: int,
    refusing_server: str,
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
) -> None:
    kc = _kubeconfig(tmp_path / "kc", refusing_server, token="not-a-known-token")
    assert _run(argv, str(kc), tmp_path) == code
    prefix = "error: " if argv[0] == "@plugin" else "kubewerk: error: "
    line = _one_error_line(capsys.readouterr().err, prefix)
    assert "Unauthorized" in line
    if code == 2:  # the line says which cluster refused (the context is "ctx")
        assert "cluster:ctx" in line or "cluster ctx" in line, line


@pytest.mark.parametrize(("name", "argv", "code"), COMMANDS, ids=[c[0] for c in COMMANDS])
def test_a_missing_kubeconfig_is_exit_2(
    name: str, argv: list[str], code: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    missing = tmp_path / "no-such-dir" / "kubeconfig"
    assert _run(argv, str(missing), tmp_path) == 2
    prefix = "error: " if argv[0] == "@plugin" else "kubewerk: error: "
    line = _one_error_line(capsys.readouterr().err, prefix)
    assert f"kubeconfig {missing} does not exist" in line


@pytest.mark.parametrize(("name", "argv", "code"), COMMANDS, ids=[c[0] for c in COMMANDS])
def test_no_kubeconfig_anywhere_is_exit_2(
    name: str, argv: list[str], code: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    assert _run(argv, None, tmp_path) == 2
    prefix = "error: " if argv[0] == "@plugin" else "kubewerk: error: "
    line = _one_error_line(capsys.readouterr().err, prefix)
    assert "no kubeconfig found" in line and "pass --kubeconfig or set KUBECONFIG" in line


@pytest.mark.parametrize(("name", "argv", "code"), COMMANDS, ids=[c[0] for c in COMMANDS])
def test_a_kubeconfig_that_is_not_yaml_is_exit_2(
    name: str, argv: list[str], code: int, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    bad = tmp_path / "kc"
    bad.write_text("apiVersion: v1\nclusters: {{{\n")
    assert _run(argv, str(bad), tmp_path) == 2
    prefix = "error: " if argv[0] == "@plugin" else "kubewerk: error: "
    assert "is not valid YAML" in _one_error_line(capsys.readouterr().err, prefix)


def test_a_sync_target_that_cannot_be_reached_is_a_result_exit_1(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """A target is what sync acts on: its failure is reported with the others' results
    (the other targets still go on) and gives 1, not an error line."""
    kc = _kubeconfig(tmp_path / "kc", "http://127.0.0.1:1")
    argv = ["sync", "--from", str(tmp_path / "cm.yaml"), "--to", "ctx", "--kubeconfig", str(kc)]
    assert main(argv) == 1
    out, err = capsys.readouterr()
    assert err == ""
    assert out.startswith("cluster:ctx: unreachable (nothing to do): cannot reach the API server")


@pytest.mark.parametrize(
    ("argv", "message"),
    [
        (
            ["run", "tests.runtime.widget_operator:manager", "--probe-address", "127.0.0.1:99999"],
            "--probe-address '127.0.0.1:99999' must be HOST:PORT (PORT a number from 0 to 65535)",
        ),
        (
            ["sync", "--from", "{dir}/cm.yaml", "--to", "ctx", "--metrics-port", "9100"],
            "--metrics-port needs --watch",
        ),
        (
            ["sync", "--from", "{dir}/cm.yaml", "--to", "ctx", "--watch", "--metrics-port", "0"],
            "--metrics-port 0: not a port number (1-65535)",
        ),
    ],
    ids=["run-probe-port-out-of-range", "sync-metrics-port-without-watch", "sync-metrics-port-0"],
)
def test_bad_flag_values_are_one_line_exit_2(
    argv: list[str], message: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    kc = _kubeconfig(tmp_path / "kc", "http://127.0.0.1:1")
    assert _run(argv, str(kc), tmp_path) == 2
    assert _one_error_line(capsys.readouterr().err) == f"kubewerk: error: {message}"


def test_a_metrics_port_in_use_is_refused_before_anything_is_synced(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    import socket

    kc = _kubeconfig(tmp_path / "kc", "http://127.0.0.1:1")
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        argv = ["sync", "--from", "{dir}/cm.yaml", "--to", "ctx", "--watch"]
        assert _run([*argv, "--metrics-port", str(port)], str(kc), tmp_path) == 2
    out, err = capsys.readouterr()
    assert out == ""  # the target was not even tried
    assert _one_error_line(err).startswith(
        f"kubewerk: error: --metrics-port {port}: cannot listen on 127.0.0.1:{port}: "
    )


def test_diff_goes_past_a_forbidden_version_and_still_names_the_cluster(
    version_forbidding_server: str, tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """/version is only a first check: a 403 there (RBAC without Kubernetes'
    public-info-viewer binding) does not stop diff, and the error of the reads that
    follow still names the one cluster side."""
    kc = _kubeconfig(tmp_path / "kc", version_forbidding_server, token="t")
    assert main(["diff", str(tmp_path / "cm.yaml"), "--kubeconfig", str(kc)]) == 2
    line = _one_error_line(capsys.readouterr().err)
    assert line == "kubewerk: error: cluster:ctx: Unauthorized"


@pytest.mark.parametrize("dst", [[], ["cluster:"]], ids=["no-dst", "bare-cluster-dst"])
def test_diffs_cluster_side_is_the_context_of_dash_dash_context(
    dst: list[str], tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    """Without DST, or with a bare ``cluster:``, the cluster side is ``--context``'s (the
    kubeconfig's current context points elsewhere) and the error names it."""
    kc = tmp_path / "kc"
    kc.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: elsewhere\n"
        "clusters: [{name: a, cluster: {server: 'http://127.0.0.1:1'}},"
        " {name: b, cluster: {server: 'http://127.0.0.1:2'}}]\n"
        "users: [{name: u, user: {}}]\n"
        "contexts: [{name: elsewhere, context: {cluster: b, user: u}},"
        " {name: ctx, context: {cluster: a, user: u}}]\n"
    )
    argv = ["diff", str(tmp_path / "cm.yaml"), *dst, "--context", "ctx", "--kubeconfig", str(kc)]
    assert main(argv) == 2
    assert _one_error_line(capsys.readouterr().err) == (
        "kubewerk: error: cluster:ctx: cannot reach the API server at http://127.0.0.1:1: "
        "connection refused"
    )
