"""``Simulation``: the simulated cluster inside one embedded API server.

Built over an ``ApiServer`` (``EmbeddedServer(simulate=...)`` makes one), started on its
event loop, stopped with it. Its parts: nodes and their kubelets' heartbeats (``nodes``),
the scheduler and the kubelets (``pods``), ReplicaSets and Deployments (``workloads``),
StatefulSets and DaemonSets (``sets``), Jobs and CronJobs (``batch``), Services'
EndpointSlices and Endpoints (``network``), claims bound to provisioned volumes
(``volumes``), and PodDisruptionBudgets' status (``disruption``); what they do shows as
Events (``events``). Each controller acts only when its kind is served.

Failure injection: ``fail_node``/``recover_node`` here; crashing containers and failing
image pulls per Pod (``simulate.kubewerk.dev/fail``) or by image pattern (config).
"""

from __future__ import annotations

import asyncio
from typing import TYPE_CHECKING

from kubewerk.apiserver.simulate.batch import CronJobs, Jobs
from kubewerk.apiserver.simulate.clock import Clock
from kubewerk.apiserver.simulate.config import SimulationConfig
from kubewerk.apiserver.simulate.disruption import Disruption
from kubewerk.apiserver.simulate.engine import Engine
from kubewerk.apiserver.simulate.network import Endpoints
from kubewerk.apiserver.simulate.nodes import Nodes
from kubewerk.apiserver.simulate.pods import Pods
from kubewerk.apiserver.simulate.sets import DaemonSets, StatefulSets
from kubewerk.apiserver.simulate.volumes import Volumes
from kubewerk.apiserver.simulate.workloads import Deployments, ReplicaSets

if TYPE_CHECKING:
    from kubewerk.apiserver.app import ApiServer


class Simulation:
    """A simulated cluster over ``server`` (see the module docstring)."""

    def __init__(self, server: ApiServer, config: SimulationConfig | None = None) -> None:
        self.config = config or SimulationConfig()
        self.engine = Engine(server, self.config)
        self.nodes = Nodes(self.engine)
        self.pods = Pods(self.engine, self.nodes)
        self.replicasets = ReplicaSets(self.engine)
        self.deployments = Deployments(self.engine)
        self.statefulsets = StatefulSets(self.engine)
        self.daemonsets = DaemonSets(self.engine, self.nodes)
        self.jobs = Jobs(self.engine)
        self.cronjobs = CronJobs(self.engine)
        self.endpoints = Endpoints(self.engine)
        self.volumes = Volumes(self.engine)
        self.disruption = Disruption(self.engine)
        self.started = False
        self.engine.subscribe()

    @property
    def clock(self) -> Clock:
        return self.engine.clock

    def start(self) -> None:
        """Register the nodes, install the default StorageClass, and start working (on
        the running event loop); idempotent."""
        if self.started:
            return
        self.started = True
        self.engine.bootstrap()
        self.volumes.install_default_class()
        self.nodes.register_all()
        self.engine.start()

    async def stop(self) -> None:
        await self.engine.stop()
        self.started = False

    async def settle(self, timeout: float = 10.0) -> None:
        """Wait until nothing is queued (timers may still be pending): for tests that
        drive a ``ManualClock``. ``TimeoutError`` after ``timeout`` seconds."""
        loop = asyncio.get_running_loop()
        deadline = loop.time() + timeout
        quiet = 0
        while quiet < 3:
            await asyncio.sleep(0)
            quiet = quiet + 1 if self.engine.idle else 0
            if loop.time() > deadline:
                raise TimeoutError("the simulation did not settle")

    # -- failure injection ------------------------------------------------------------------

    def fail_node(self, name: str) -> None:
        """Node ``name`` stops reporting: no heartbeats, its kubelet does nothing; after
        ``node_monitor_grace_seconds`` it turns NotReady (Unknown) and its Pods are
        marked and evicted as the node lifecycle controller does."""
        self.nodes.fail(name)

    def recover_node(self, name: str) -> None:
        """Node ``name`` reports again: Ready, untainted, its kubelet resumes (Pods
        evicted meanwhile finish terminating)."""
        self.nodes.recover(name)

    @property
    def node_names(self) -> list[str]:
        return list(self.nodes.pools)
