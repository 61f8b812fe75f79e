"""``kubewerk up`` as a user runs it: a real process, signals, kubeconfig, errors."""

from __future__ import annotations

import json
import os
import re
import shutil
import signal
import socket
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path

import pytest
import yaml


def start(*args: str) -> tuple[subprocess.Popen[str], str, str]:
    """Start ``kubewerk up``; return the process, its URL and its banner (read to the end)."""
    proc = subprocess.Popen(
        [sys.executable, "-m", "kubewerk.cli", "up", *args],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    assert proc.stdout is not None
    banner = ""
    while "press Ctrl-C" not in banner:
        line = proc.stdout.readline()
        if not line:
            raise AssertionError((banner, proc.stderr.read() if proc.stderr else ""))
        banner += line
    match = re.search(r"listening on (http://\S+)", banner)
    assert match, banner
    return proc, match.group(1), banner


def get(url: str) -> object:
    with urllib.request.urlopen(url, timeout=5) as resp:
        return json.loads(resp.read())


def test_up_serves_writes_kubeconfig_and_stops_on_sigterm(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kc" / "config"
    proc, url, banner = start("--port", "0", "--kubeconfig", str(kubeconfig))
    try:
        namespaces = get(url + "/api/v1/namespaces")
        assert isinstance(namespaces, dict)
        assert {n["metadata"]["name"] for n in namespaces["items"]} >= {
            "default",
            "kube-system",
            "kube-public",
        }
        config = yaml.safe_load(kubeconfig.read_text())
        assert config["current-context"] == "kubewerk"
        assert config["clusters"][0]["cluster"]["server"] == url
        assert oct(kubeconfig.stat().st_mode & 0o777) == "0o600"
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=10)
    assert proc.returncode == 0, err
    assert f"export KUBECONFIG={kubeconfig.resolve()}" in banner


def test_up_with_sqlite_keeps_objects_across_restarts(tmp_path: Path) -> None:
    store = f"sqlite:{tmp_path / 'db' / 'cluster.db'}"
    kc = str(tmp_path / "kc")
    proc, url, _ = start("--port", "0", "--store", store, "--kubeconfig", kc)
    try:
        cm = {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": "keep"},
            "data": {"a": "b"},
        }
        req = urllib.request.Request(
            url + "/api/v1/namespaces/default/configmaps",
            data=json.dumps(cm).encode(),
            method="POST",
            headers={"Content-Type": "application/json"},
        )
        with urllib.request.urlopen(req, timeout=5) as resp:
            assert resp.status == 201
    finally:
        proc.send_signal(signal.SIGINT)
        proc.communicate(timeout=10)
    assert proc.returncode == 0
    proc, url, _ = start("--port", "0", "--store", store, "--kubeconfig", kc)
    try:
        again = get(url + "/api/v1/namespaces/default/configmaps/keep")
        assert isinstance(again, dict) and again["data"] == {"a": "b"}
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=10)


def test_up_rejects_a_bad_store_with_exit_code_2(tmp_path: Path) -> None:
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "kubewerk.cli",
            "up",
            "--store",
            "etcd://x",
            "--kubeconfig",
            str(tmp_path / "kc"),
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 2
    assert proc.stderr.startswith("kubewerk: error: --store etcd://x:")
    assert "Traceback" not in proc.stderr


def test_up_reports_a_busy_port(tmp_path: Path) -> None:
    proc, url, _ = start("--port", "0", "--kubeconfig", str(tmp_path / "kc1"))
    try:
        port = url.rsplit(":", 1)[1]
        second = subprocess.run(
            [
                sys.executable,
                "-m",
                "kubewerk.cli",
                "up",
                "--port",
                port,
                "--kubeconfig",
                str(tmp_path / "kc2"),
            ],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert second.returncode == 2  # a usage error, as for dashboard, run, webhook serve
        assert second.stderr.startswith(f"kubewerk: error: cannot listen on 127.0.0.1:{port}: ")
        assert second.stderr.count("\n") == 1 and "Traceback" not in second.stderr
        assert second.stdout == ""
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=10)


def test_demo_reports_a_busy_port_with_exit_code_2(
    tmp_path: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    from kubewerk.cli import main

    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        code = main(["demo", "--port", str(port), "--kubeconfig", str(tmp_path / "kc")])
    out, err = capsys.readouterr()
    assert code == 2  # a usage error, as for up, dashboard, run, webhook serve
    assert err.startswith(f"kubewerk: error: cannot listen on 127.0.0.1:{port}: ")
    assert err.count("\n") == 1 and out == ""
    assert not (tmp_path / "kc").exists()


def test_up_refuses_a_non_loopback_host_with_exit_code_2(tmp_path: Path) -> None:
    kubeconfig = tmp_path / "kc"
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "kubewerk.cli",
            "up",
            "--host",
            "0.0.0.0",
            "--port",
            "0",
            "--kubeconfig",
            str(kubeconfig),
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 2
    assert proc.stderr.startswith(
        "kubewerk: error: --host 0.0.0.0: 0.0.0.0 is not a loopback address"
    )
    assert "no authentication" in proc.stderr
    assert "--insecure-bind-non-loopback" in proc.stderr
    assert "Traceback" not in proc.stderr
    assert not kubeconfig.exists()


def test_up_on_0000_with_the_flag_warns_and_points_the_kubeconfig_at_127001(tmp_path: Path) -> None:
    """Also: ``--context NAME`` names the kubeconfig's context, cluster and user (one
    server process for both checks: they are slow to start)."""
    kubeconfig = tmp_path / "new" / "kc"
    proc, url, banner = start(
        "--host",
        "0.0.0.0",
        "--insecure-bind-non-loopback",
        "--port",
        "0",
        "--kubeconfig",
        str(kubeconfig),
        "--allow-host",
        "dev.example",
        "--context",
        "second",
    )
    try:
        assert url.startswith("http://127.0.0.1:")
        assert "(bound to 0.0.0.0)" in banner
        config = yaml.safe_load(kubeconfig.read_text())
        assert config["clusters"][0]["cluster"]["server"] == url
        assert oct(kubeconfig.stat().st_mode & 0o777) == "0o600"
        assert oct(kubeconfig.parent.stat().st_mode & 0o777) == "0o700"
        assert isinstance(get(url + "/version"), dict)
        port = url.rsplit(":", 1)[1]
        allowed = urllib.request.Request(url + "/version", headers={"Host": f"dev.example:{port}"})
        with urllib.request.urlopen(allowed, timeout=5) as resp:
            assert resp.status == 200
        other = urllib.request.Request(url + "/version", headers={"Host": f"other.example:{port}"})
        with pytest.raises(urllib.error.HTTPError) as refused:
            urllib.request.urlopen(other, timeout=5)
        assert refused.value.code == 403
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=10)
    assert proc.returncode == 0
    port = url.rsplit(":", 1)[1]
    assert f"listens on 0.0.0.0:{port}, which is not loopback, and has NO authentication" in err
    _check_context_names(tmp_path, kubeconfig, url, banner)


def _check_context_names(tmp_path: Path, kubeconfig: Path, url: str, banner: str) -> None:
    """``kubeconfig``, written by ``up --context second`` for ``url``, names its entries
    ``second``; merged after another server's kubeconfig with the default names in one
    KUBECONFIG, each context keeps its own server (with the same names kubectl keeps the
    first file's entries, and both contexts reach the first server)."""
    from kubewerk.apiserver.server import kubeconfig_text

    assert f"kubeconfig written to {kubeconfig} (context: second)" in banner
    config = yaml.safe_load(kubeconfig.read_text())
    assert config["current-context"] == "second"
    assert [c["name"] for c in config["clusters"]] == ["second"]
    assert [u["name"] for u in config["users"]] == ["second"]
    assert [c["name"] for c in config["contexts"]] == ["second"]
    assert config["contexts"][0]["context"]["cluster"] == "second"
    assert config["contexts"][0]["context"]["user"] == "second"
    if shutil.which("kubectl") is None:
        return
    first = tmp_path / "first-kc"
    first.write_text(kubeconfig_text("http://127.0.0.1:1"))
    env = {**os.environ, "KUBECONFIG": os.pathsep.join([str(first), str(kubeconfig)])}

    def server_of(context: str) -> str:
        view = ["config", "view", "--minify", "--context", context, "-o"]
        out = subprocess.run(
            ["kubectl", *view, "jsonpath={.clusters[0].cluster.server}"],
            capture_output=True,
            text=True,
            env=env,
            timeout=30,
            check=True,
        )
        return out.stdout

    assert server_of("kubewerk") == "http://127.0.0.1:1"
    assert server_of("second") == url


def test_up_rejects_bad_limit_flags_with_exit_code_2(tmp_path: Path) -> None:
    # the argument types are shared by the flags; each kind of value once
    for flag, value in [("--max-header-bytes", "0"), ("--read-header-timeout", "nan")]:
        proc = subprocess.run(
            [
                sys.executable,
                "-m",
                "kubewerk.cli",
                "up",
                flag,
                value,
                "--kubeconfig",
                str(tmp_path / "kc"),
            ],
            capture_output=True,
            text=True,
            timeout=30,
        )
        assert proc.returncode == 2, (flag, proc.stderr)
        assert f"argument {flag}: expected a positive" in proc.stderr
        assert "Traceback" not in proc.stderr


def test_up_applies_the_header_limit_and_timeout_flags(tmp_path: Path) -> None:
    proc, url, _ = start(
        "--port",
        "0",
        "--kubeconfig",
        str(tmp_path / "kc"),
        "--max-header-bytes",
        "1024",
        "--read-header-timeout",
        "0.5",
    )
    try:
        port = int(url.rsplit(":", 1)[1])
        with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
            sock.sendall(
                b"GET /version HTTP/1.1\r\nHost: 127.0.0.1\r\nX-Big: " + b"a" * 6000 + b"\r\n\r\n"
            )
            answer = b""
            while chunk := sock.recv(65536):
                answer += chunk
        assert answer.startswith(b"HTTP/1.1 431 Request Header Fields Too Large\r\n")
        with socket.create_connection(("127.0.0.1", port), timeout=5) as idle:
            started = time.monotonic()
            assert idle.recv(100) == b""
            assert time.monotonic() - started < 3
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=10)


def test_up_reports_an_unwritable_kubeconfig_path_without_a_traceback(tmp_path: Path) -> None:
    blocker = tmp_path / "file"
    blocker.write_text("not a directory")
    proc = subprocess.run(
        [
            sys.executable,
            "-m",
            "kubewerk.cli",
            "up",
            "--port",
            "0",
            "--kubeconfig",
            str(blocker / "kc"),
        ],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 2
    assert proc.stderr.startswith(
        f"kubewerk: error: --kubeconfig {blocker / 'kc'}: cannot write it:"
    )
    assert "Traceback" not in proc.stderr


@pytest.mark.parametrize("name", ["", " padded", "tab\there"], ids=["empty", "blank", "control"])
def test_up_refuses_an_unusable_context_name_with_exit_code_2(
    name: str, capsys: pytest.CaptureFixture[str]
) -> None:
    from kubewerk.cli import main

    with pytest.raises(SystemExit) as exc:
        main(["up", "--context", name])
    assert exc.value.code == 2
    err = capsys.readouterr().err
    assert "argument --context: expected a name" in err and "Traceback" not in err


def test_the_cli_defaults_are_the_servers() -> None:
    """`kubewerk up` repeats the library's defaults (so --help imports no server): they agree."""
    from kubewerk.apiserver import httpproto, storage, watch
    from kubewerk.cli import up

    assert up.DEFAULT_MAX_HEADER_BYTES == httpproto.DEFAULT_MAX_HEADER_BYTES
    assert up.DEFAULT_READ_HEADER_TIMEOUT == httpproto.DEFAULT_READ_HEADER_TIMEOUT
    assert up.DEFAULT_IDLE_TIMEOUT == httpproto.DEFAULT_IDLE_TIMEOUT
    assert up.DEFAULT_REQUEST_BODY_TIMEOUT == httpproto.DEFAULT_REQUEST_BODY_TIMEOUT
    assert up.DEFAULT_RETAIN_BYTES == storage.DEFAULT_RETAIN_BYTES
    assert up.DEFAULT_MAX_BACKLOG_BYTES == watch.DEFAULT_MAX_BACKLOG_BYTES
    from kubewerk.apiserver.kinds import services

    assert up.DEFAULT_SERVICE_CLUSTER_IP_RANGE == services.DEFAULT_SERVICE_CLUSTER_IP_RANGE
    assert up.DEFAULT_SERVICE_NODE_PORT_RANGE == services.DEFAULT_SERVICE_NODE_PORT_RANGE


def test_up_passes_the_memory_bounds_on(tmp_path: Path) -> None:
    proc, url, _ = start(
        "--port",
        "0",
        "--kubeconfig",
        str(tmp_path / "kc"),
        "--retain-bytes",
        "4096",
        "--watch-backlog-bytes",
        "8192",
    )
    try:
        for i in range(20):
            body = json.dumps(
                {
                    "apiVersion": "v1",
                    "kind": "ConfigMap",
                    "metadata": {"name": f"c{i}"},
                    "data": {"k": "x" * 1000},
                }
            ).encode()
            req = urllib.request.Request(
                url + "/api/v1/namespaces/default/configmaps",
                data=body,
                headers={"Content-Type": "application/json"},
            )
            with urllib.request.urlopen(req, timeout=5) as resp:
                assert resp.status == 201
        with urllib.request.urlopen(url + "/metrics", timeout=5) as resp:
            metrics = resp.read().decode()
        history = [
            line
            for line in metrics.splitlines()
            if line.startswith("kubewerk_storage_history_bytes ")
        ]
        assert history and float(history[0].split()[1]) <= 4096, history
    finally:
        proc.send_signal(signal.SIGTERM)
        proc.communicate(timeout=10)


def test_embedded_server_passes_the_watch_backlog_bound_on() -> None:
    from kubewerk.apiserver.server import EmbeddedServer

    server = EmbeddedServer("memory", watch_backlog_bytes=12345, retain_bytes=6789)
    assert server.app.hub.max_backlog_bytes == 12345
    assert server.store.retain_bytes == 6789  # type: ignore[attr-defined]
    server.store.close()


def request(url: str, method: str = "GET", body: object = None, accept: str = "") -> object:
    headers = {"Content-Type": "application/json"}
    if accept:
        headers["Accept"] = accept
    data = json.dumps(body).encode() if body is not None else None
    req = urllib.request.Request(url, data=data, headers=headers, method=method)
    with urllib.request.urlopen(req, timeout=5) as resp:
        return json.loads(resp.read())


def test_up_simulate_serves_nodes_and_runs_a_deployment(tmp_path: Path) -> None:
    proc, url, banner = start(
        "--port",
        "0",
        "--kubeconfig",
        str(tmp_path / "kc"),
        "--simulate",
        "--nodes",
        "2",
        "--node-cpu",
        "2",
        "--node-memory",
        "8Gi",
        "--node-pods",
        "50",
        "--start-seconds",
        "0.05",
    )
    try:
        assert "simulated cluster: 2 nodes (2 CPU, 8Gi, 50 pods each)" in banner
        nodes = request(url + "/api/v1/nodes")
        assert isinstance(nodes, dict)
        assert [n["metadata"]["name"] for n in nodes["items"]] == [
            "kubewerk-node-0",
            "kubewerk-node-1",
        ]
        node = nodes["items"][0]
        assert node["metadata"]["labels"]["kubernetes.io/hostname"] == "kubewerk-node-0"
        for field in ("capacity", "allocatable"):
            assert {k: node["status"][field][k] for k in ("cpu", "memory", "pods")} == {
                "cpu": "2",
                "memory": "8Gi",
                "pods": "50",
            }
        ready = next(c for c in node["status"]["conditions"] if c["type"] == "Ready")
        assert (ready["status"], ready["reason"]) == ("True", "KubeletReady")
        # what `kubectl get nodes` prints
        table = request(
            url + "/api/v1/nodes", accept="application/json;as=Table;v=v1;g=meta.k8s.io"
        )
        assert isinstance(table, dict)
        assert [c["name"] for c in table["columnDefinitions"] if c["priority"] == 0] == [
            "Name",
            "Status",
            "Roles",
            "Age",
            "Version",
        ]
        assert table["rows"][0]["cells"][1:3] == ["Ready", "<none>"]
        assert table["rows"][0]["cells"][4] == node["status"]["nodeInfo"]["kubeletVersion"]

        deployment = {
            "apiVersion": "apps/v1",
            "kind": "Deployment",
            "metadata": {"name": "web"},
            "spec": {
                "replicas": 2,
                "selector": {"matchLabels": {"app": "web"}},
                "template": {
                    "metadata": {"labels": {"app": "web"}},
                    "spec": {"containers": [{"name": "web", "image": "nginx:1.25"}]},
                },
            },
        }
        request(url + "/apis/apps/v1/namespaces/default/deployments", "POST", deployment)
        deadline = time.monotonic() + 10
        status: dict[str, object] = {}
        while time.monotonic() < deadline:
            got = request(url + "/apis/apps/v1/namespaces/default/deployments/web")
            assert isinstance(got, dict)
            status = got.get("status") or {}
            conditions = {c["type"]: c["status"] for c in status.get("conditions") or []}  # type: ignore[union-attr]
            if conditions.get("Available") == "True" and status.get("availableReplicas") == 2:
                break
            time.sleep(0.05)
        else:
            raise AssertionError(f"web never became Available: {status}")
        pods = request(url + "/api/v1/namespaces/default/pods?labelSelector=app%3Dweb")
        assert isinstance(pods, dict)
        assert sorted(p["status"]["phase"] for p in pods["items"]) == ["Running", "Running"]
        assert {p["spec"]["nodeName"] for p in pods["items"]} == {
            "kubewerk-node-0",
            "kubewerk-node-1",
        }
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=10)
    assert proc.returncode == 0, err


def test_up_simulate_refuses_a_bad_quantity_with_exit_code_2(tmp_path: Path) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "kubewerk.cli", "up", "--simulate", "--node-memory", "lots"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 2
    assert "--node-memory lots: not a quantity" in proc.stderr
    assert "Traceback" not in proc.stderr


def test_up_allocates_cluster_ips_from_the_flags_range(tmp_path: Path) -> None:
    proc, url, _ = start(
        "--port",
        "0",
        "--kubeconfig",
        str(tmp_path / "kc"),
        "--service-cluster-ip-range",
        "10.123.0.0/24",
        "--service-node-port-range",
        "31000-31009",
    )
    try:
        service = {
            "apiVersion": "v1",
            "kind": "Service",
            "metadata": {"name": "web"},
            "spec": {"type": "NodePort", "selector": {"app": "web"}, "ports": [{"port": 80}]},
        }
        created = request(url + "/api/v1/namespaces/default/services", "POST", service)
        assert isinstance(created, dict)
        assert created["spec"]["clusterIP"].startswith("10.123.0.")
        assert created["spec"]["clusterIP"] != "10.123.0.1"  # default/kubernetes holds it
        assert 31000 <= created["spec"]["ports"][0]["nodePort"] <= 31009
    finally:
        proc.send_signal(signal.SIGTERM)
        _, err = proc.communicate(timeout=10)
    assert proc.returncode == 0, err


@pytest.mark.parametrize(
    ("flag", "value"),
    [("--service-cluster-ip-range", "10.0.0.0/33"), ("--service-node-port-range", "9-x")],
)
def test_up_refuses_a_bad_service_range_with_exit_code_2(flag: str, value: str) -> None:
    proc = subprocess.run(
        [sys.executable, "-m", "kubewerk.cli", "up", flag, value],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert proc.returncode == 2, proc.stderr
    assert f"{flag} {value}: " in proc.stderr
    assert "Traceback" not in proc.stderr


def test_embedded_server_passes_the_service_ranges_on() -> None:
    from kubewerk.apiserver.server import EmbeddedServer

    server = EmbeddedServer(
        "memory", service_cluster_ip_range="10.9.0.0/16", service_node_port_range="30100-30200"
    )
    network = server.app.service_network
    assert str(network.cluster_ip_range) == "10.9.0.0/16"
    assert network.node_port_range == (30100, 30200)
    server.store.close()
    with pytest.raises(ValueError):
        EmbeddedServer("memory", service_cluster_ip_range="not a cidr")
