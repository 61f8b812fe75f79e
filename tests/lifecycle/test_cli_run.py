"""``kubewerk run`` takes a Platform (``module:platform``), its manager
(``module:platform.manager``) or a factory returning one, and runs it as a process."""

from __future__ import annotations

import asyncio
import importlib
import os
import signal
import sys
from pathlib import Path
from typing import Any

import pytest

from kubewerk.cli import UsageError
from kubewerk.cli.run import load_target
from kubewerk.client import Client
from kubewerk.runtime import Manager

from .helpers import manifest
from .models import Database

REPO = Path(__file__).resolve().parents[2]
MODULE = "tests.lifecycle.platform_operator"


@pytest.mark.parametrize("attr", ["platform", "platform.manager", "make_platform"])
def test_a_platform_its_manager_or_a_factory_is_a_target(attr: str) -> None:
    module = importlib.import_module(MODULE)
    loaded = load_target(f"{MODULE}:{attr}")
    assert isinstance(loaded, Manager)
    assert loaded is module.platform.manager


def test_anything_else_is_a_usage_error() -> None:
    with pytest.raises(
        UsageError,
        match=r"is not a kubewerk.runtime.Manager or kubewerk.lifecycle.Platform \(got dict\)",
    ):
        load_target(f"{MODULE}:__dict__")


async def test_kubewerk_run_runs_a_platform(
    kube_client: Client, kube_kubeconfig: Path, install_crds: Any, wait_for: Any
) -> None:
    from .models import Cache

    await install_crds(Database, Cache)
    await kube_client.create(manifest(Database, "orders"))
    proc = await asyncio.create_subprocess_exec(
        sys.executable,
        "-m",
        "kubewerk.cli",
        "run",
        f"{MODULE}:platform",
        "--kubeconfig",
        str(kube_kubeconfig),
        "--probe-address",
        "0",
        cwd=REPO,
        env={**os.environ, "KUBEWERK_RECONCILE_STRATEGY": "*=backoff(cap=5)"},
        stdout=asyncio.subprocess.PIPE,
        stderr=asyncio.subprocess.PIPE,
    )

    async def active() -> bool:
        db = await kube_client.get(Database, "orders", "default")
        return db.status is not None and db.status.phase == "Active"

    try:
        await wait_for(active, 30)
    finally:
        if proc.returncode is None:
            proc.send_signal(signal.SIGTERM)
        _, err = await asyncio.wait_for(proc.communicate(), 30)
    assert proc.returncode == 0, err.decode()
    assert "Traceback" not in err.decode()
