"""``kubectl kubewerk ...`` through the real kubectl binary: the plugin is found on the
PATH as ``kubectl-kubewerk`` (the package's entry point) and honours kubectl's context,
kubeconfig and namespace flags anywhere after the plugin's name (kubectl refuses flags
before it: "flags cannot be placed before plugin name")."""

from __future__ import annotations

import asyncio
import json
import os
import shutil
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from kubewerk.apiserver.server import EmbeddedServer
from kubewerk.client import Client

from ..observe.scenario import HOSTILE, build_scene

pytestmark = pytest.mark.e2e


@pytest.fixture
def plugin(tserver: EmbeddedServer, kubeconfig: Path, tmp_path: Path) -> Any:
    """Run ``kubectl ARGS...`` with the plugin's entry point on the PATH, against a
    platform scene on ``tserver``."""
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        pytest.skip("kubectl is not installed")
    entry = Path(sys.executable).parent / "kubectl-kubewerk"
    if not entry.exists():
        pytest.skip("kubectl-kubewerk is not installed (pip install -e .)")
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "kubectl-kubewerk").symlink_to(entry)

    async def scene() -> None:
        async with Client.from_url(tserver.url) as client:
            await build_scene(client)

    asyncio.run(scene())
    env = {
        **os.environ,
        "KUBECONFIG": str(kubeconfig),
        "KUBECACHEDIR": str(kubeconfig.parent / "kube-cache"),
        "PATH": f"{bindir}{os.pathsep}{os.environ.get('PATH', '')}",
    }

    def run(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [kubectl, *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=60,
            check=False,
        )

    return run


def test_plugin_is_listed_and_health_table(plugin: Any) -> None:
    listed = plugin("plugin", "list", "--name-only")
    assert "kubectl-kubewerk" in listed.stdout
    proc = plugin("kubewerk", "health")
    assert proc.returncode == 1, proc.stderr  # something is stuck
    lines = proc.stdout.splitlines()
    assert lines[0].split() == ["KIND", "TOTAL", "READY", "NOT-READY", "UNKNOWN", "STUCK", "PHASES"]
    stuck_header = lines.index(next(line for line in lines if line.startswith("STUCK")))
    first = lines[stuck_header + 1]
    assert first.startswith("Environment/acme/prod") and "ProvisioningFailed" in first
    assert "Database/acme/orders" in lines[stuck_header + 2]


def test_health_json_and_kubectl_flags(plugin: Any) -> None:
    # kubectl passes every argument after the plugin's name on, flags included
    proc = plugin("kubewerk", "--context", "kubewerk", "health", "-o", "json")
    doc = json.loads(proc.stdout)
    assert doc["cluster"] == "kubewerk" and doc["stuckTotal"] == 2
    assert doc["stuck"][0]["reasons"][0]["message"] == HOSTILE
    # -n limits the objects read: nothing lives in default
    proc = plugin("kubewerk", "health", "-n", "default", "-o", "json")
    assert json.loads(proc.stdout)["stuckTotal"] == 0 and proc.returncode == 0
    proc = plugin("kubewerk", "health", "--context=missing")
    assert proc.returncode == 2
    assert "missing" in proc.stderr and "Traceback" not in proc.stderr


def test_why_explains_in_one_screen(plugin: Any) -> None:
    proc = plugin("kubewerk", "why", "database/orders", "-n", "acme")
    assert proc.returncode == 1, proc.stderr
    out = proc.stdout
    assert out.startswith("Database/acme/orders: phase Pending, Ready False")
    assert "stuck: DependenciesNotReady: waiting for Environment prod (Failed)" in out
    deps = out[out.index("Dependencies:") :]
    env_line = next(line for line in deps.splitlines() if "Environment/acme/prod" in line)
    assert "Failed" in env_line and "ProvisioningFailed" in env_line  # its own problem
    quota_line = next(line for line in deps.splitlines() if "Quota/acme/shop" in line)
    assert "MISSING" in quota_line
    assert "PhaseChanged" in out[out.index("Events:") :]
    # the context's namespace is used without -n; a missing object is exit 1
    proc = plugin("kubewerk", "why", "tenant/acme")
    assert proc.returncode == 0 and "phase Active, Ready True" in proc.stdout
    proc = plugin("kubewerk", "why", "databases.platform/nope", "-n", "acme")
    assert proc.returncode == 1 and "not found" in proc.stdout
    proc = plugin("kubewerk", "why", "db/orders", "-n", "acme")  # a short name, as kubectl
    assert proc.returncode == 1 and proc.stdout.startswith("Database/acme/orders: ")
    proc = plugin("kubewerk", "why", "widgets/x")  # kubectl's error, word for word
    assert proc.returncode == 2
    assert proc.stderr == 'error: the server doesn\'t have a resource type "widgets"\n'
    proc = plugin("kubewerk", "why", "job/report", "-n", "acme")  # jobs.batch, as kubectl
    assert proc.returncode == 2 and "jobs.platform.kubewerk.dev" in proc.stderr
    proc = plugin("kubewerk", "why", "orders")
    assert proc.returncode == 2 and "KIND/NAME" in proc.stderr


def test_graph_and_lint_through_kubewerk(plugin: Any) -> None:
    proc = plugin("kubewerk", "graph", "-n", "acme")
    assert proc.returncode == 1  # refs to objects that are not there
    assert "Database/acme/orders" in proc.stdout
    assert "unresolved references:" in proc.stdout
    proc = plugin("kubewerk", "graph", "--format", "json")
    assert any(o["name"] == "acme" for o in json.loads(proc.stdout)["objects"])
    proc = plugin("kubewerk", "lint", "--format", "json")
    assert proc.returncode in (0, 1), proc.stderr
    report = json.loads(proc.stdout)
    assert "platform.kubewerk.dev" in json.dumps(report)
