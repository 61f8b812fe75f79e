"""``kubewerk run`` as a real process: kill mid-reconcile and restart, clear errors."""

from __future__ import annotations

import asyncio
import os
import signal
import socket
import sys
from pathlib import Path

from kubewerk.client import Client
from tests.client.models import Widget
from tests.runtime.test_operator_e2e import converged, widget

REPO = Path(__file__).resolve().parents[2]


async def spawn(*args: str, env: dict[str, str] | None = None) -> asyncio.subprocess.Process:
    return await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "kubewerk.cli",
        "run",
        *args,
        cwd=REPO,
        env={**os.environ, **(env or {})},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )


async def test_killed_mid_reconcile_then_restarted_converges(
    kube_client: Client, kube_kubeconfig: Path, install_crds, wait_for
) -> None:  # type: ignore[no-untyped-def]
    await install_crds(Widget)
    await kube_client.create(widget("victim", 2))
    await kube_client.create(widget("bystander", 1))
    target = "tests.runtime.widget_operator:manager"
    proc = await spawn(
        target,
        "--kubeconfig",
        str(kube_kubeconfig),
        "--probe-address",
        "0",
        env={"WIDGET_BLOCK": "victim"},
    )
    try:
        await wait_for(lambda: converged(kube_client, "bystander", 1), 40)

        async def entered() -> bool:  # the finalizer was added, then the reconcile hung
            w = await kube_client.get(Widget, "victim", "default")
            return bool(w.metadata.finalizers)

        await wait_for(entered, 10)
    except TimeoutError:
        proc.send_signal(signal.SIGKILL)
        _, err = await proc.communicate()
        raise AssertionError(err.decode()[-3000:]) from None
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGKILL)
        await proc.wait()
    assert proc.returncode == -signal.SIGKILL
    assert not await converged(kube_client, "victim", 2)
    proc = await spawn(target, "--kubeconfig", str(kube_kubeconfig), "--probe-address", "0")
    try:
        await wait_for(lambda: converged(kube_client, "victim", 2), 20)
    finally:
        proc.send_signal(signal.SIGTERM)  # graceful shutdown
        _, err = await asyncio.wait_for(proc.communicate(), 20)
    assert proc.returncode == 0, err.decode()
    assert "Traceback" not in err.decode()


async def test_invalid_kubeconfig_is_one_line_exit_2(tmp_path: Path) -> None:
    bad = tmp_path / "config"
    bad.write_text("apiVersion: v1\nkind: Config\ncurrent-context: nowhere\ncontexts: []\n")
    proc = await spawn("tests.runtime.widget_operator:manager", "--kubeconfig", str(bad))
    _out, err = await asyncio.wait_for(proc.communicate(), 30)
    text = err.decode().strip()
    assert proc.returncode == 2
    assert (
        text == "kubewerk: error: context 'nowhere' not found in kubeconfig (known contexts: none)"
    )
    proc = await spawn("tests.runtime.widget_operator:nothing", "--kubeconfig", str(bad))
    _, err = await asyncio.wait_for(proc.communicate(), 30)
    assert (
        proc.returncode == 2
        and "has no attribute 'nothing'" in err.decode()
        and "Traceback" not in err.decode()
    )


async def test_unreachable_server_is_one_line_exit_1(tmp_path: Path) -> None:
    cfg = tmp_path / "config"
    cfg.write_text(
        "apiVersion: v1\nkind: Config\ncurrent-context: c\n"
        "clusters: [{name: k, cluster: {server: 'http://127.0.0.1:9'}}]\n"
        "users: [{name: u, user: {}}]\n"
        "contexts: [{name: c, context: {cluster: k, user: u}}]\n"
    )
    proc = await spawn(
        "tests.runtime.widget_operator:manager", "--kubeconfig", str(cfg), "--probe-address", "0"
    )
    _, err = await asyncio.wait_for(proc.communicate(), 30)
    lines = [line for line in err.decode().splitlines() if line.startswith("kubewerk: error:")]
    assert proc.returncode == 1
    assert lines == [
        "kubewerk: error: cannot reach the API server at http://127.0.0.1:9: connection refused"
    ]
    assert "Traceback" not in err.decode()


async def test_missing_crd_is_one_line_exit_1(kube_kubeconfig: Path) -> None:
    proc = await spawn(
        "tests.runtime.widget_operator:manager",
        "--kubeconfig",
        str(kube_kubeconfig),
        "--probe-address",
        "0",
    )
    _, err = await asyncio.wait_for(proc.communicate(), 30)
    lines = [line for line in err.decode().splitlines() if line.startswith("kubewerk: error:")]
    assert proc.returncode == 1
    assert lines == [
        'kubewerk: error: no matches for kind "Widget" in version '
        '"test.kubewerk.dev/v1" (controller widget: is the CRD installed?)'
    ]
    assert "Traceback" not in err.decode()


async def test_probe_address_in_use_is_one_line_exit_2(kube_kubeconfig: Path) -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
        proc = await spawn(
            "tests.runtime.widget_operator:manager",
            "--kubeconfig",
            str(kube_kubeconfig),
            "--probe-address",
            f"127.0.0.1:{port}",
        )
        _, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 2, err.decode()
    assert (
        err.decode().strip()
        == f"kubewerk: error: cannot serve probes on 127.0.0.1:{port}: Address already in use"
    )
