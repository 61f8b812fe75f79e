"""The dashboard inside an operator: mounted on its Manager's probe server.

``mount_dashboard(manager)`` serves the dashboard at ``/dashboard`` on the manager's
probe port (beside ``/healthz``, ``/readyz`` and ``/metrics``), over the cluster the
manager's client talks to, with the manager's own metrics as the charts' source (read
in-process: no scrape over HTTP). The watch and the sampler run while the manager runs
(on every replica, leader or not) and stop with it.

The probe server listens where the manager says (``probe_host``, by default every
address, as controller-runtime's): whoever reaches the probe port reads the dashboard,
so it answers any Host name, and it is read-only like every dashboard page.
"""

from __future__ import annotations

import asyncio
import contextlib

from kubewerk.observe.app import DashboardApp
from kubewerk.observe.metrics import MetricsSampler
from kubewerk.observe.state import ClusterState
from kubewerk.observe.watcher import ClusterWatcher
from kubewerk.runtime.manager import Manager

__all__ = ["mount_dashboard"]


def mount_dashboard(
    manager: Manager,
    *,
    prefix: str = "/dashboard",
    namespace: str | None = None,
    metrics_interval: float = 2.0,
) -> DashboardApp:
    """Mount the dashboard at ``prefix`` on ``manager``'s probe server (see the module
    doc); ``namespace`` limits what it watches. Returns the app (its ``state`` is the
    watched cluster)."""
    state = ClusterState(name=manager.name or "cluster")
    sampler = MetricsSampler([manager.metrics.exposition], interval=metrics_interval)
    app = DashboardApp(state, metrics=sampler, prefix=prefix, allowed_hosts=None)
    manager.mount(prefix, app)

    async def run() -> None:
        watcher = ClusterWatcher(manager.client, state, namespace=namespace)
        await watcher.start()
        sampler.start()
        try:
            await asyncio.Event().wait()
        finally:
            app.close()
            with contextlib.suppress(Exception):
                await sampler.stop()
            await watcher.stop()

    manager.add_runnable(run, needs_leader=False)
    return app
