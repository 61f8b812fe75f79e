"""A kubewerk operator against the simulated cluster, over real HTTP: its custom resource
makes a Deployment and a Service, and is Ready once the Deployment is Available (issue 13's
"a kubewerk operator that creates a Deployment and a Service ... reaches Ready").

The operator is written as users write one (``kubewerk.runtime``: a typed CRD, ``owns``
of both children, ``create_or_update`` with mutate functions that touch only the fields
it owns, status through ``patch_status``); the cluster underneath is the embedded server
with ``simulate=``. Scaling and a rolling update go through the custom resource, and
deleting it leaves nothing behind.

The cluster runs on a ``ManualClock`` that the test advances only while the operator has
caught up with it (``step_until``), so what the WebApp shows on the way (Ready at minimum
availability, the rollout's surge) does not depend on how fast the machine is.
"""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator, Callable
from typing import Any

import pytest

from kubewerk.apiserver.server import EmbeddedServer
from kubewerk.apiserver.simulate import ManualClock, SimulationConfig
from kubewerk.apiserver.storage.base import Event
from kubewerk.client import DEPLOYMENT, SERVICE, Client
from kubewerk.model import Conditions, KubeModel, Resource
from kubewerk.runtime import Context, Manager, Result
from kubewerk.testing import install_crds

from .conftest import condition, fast_config, stored

JSON = dict[str, Any]


class WebAppSpec(KubeModel):
    """What the user asks for."""

    image: str
    replicas: int = 1
    port: int = 8080


class WebAppStatus(KubeModel):
    """What the operator saw of its Deployment."""

    replicas: int | None = None
    updated_replicas: int | None = None
    available_replicas: int | None = None
    conditions: Conditions | None = None


class WebApp(Resource[WebAppSpec, WebAppStatus], group="sim.kubewerk.dev"):
    """A web application served by a Deployment behind a Service."""


def build_manager() -> Manager:
    """The operator: WebApp -> Deployment + Service, Ready while the Deployment is Available."""
    mgr = Manager(probe_port=None)

    @mgr.reconciler(WebApp, owns=[DEPLOYMENT, SERVICE])
    async def reconcile(app: WebApp, ctx: Context) -> Result:
        name = str(app.name)
        labels = {"app.kubernetes.io/name": name}

        def deployment(current: JSON) -> None:
            spec = current.setdefault("spec", {})
            spec["replicas"] = app.spec.replicas
            spec.setdefault("selector", {"matchLabels": labels})
            spec.setdefault(
                "strategy",
                {"type": "RollingUpdate", "rollingUpdate": {"maxSurge": 1, "maxUnavailable": 1}},
            )
            template = spec.setdefault("template", {})
            template.setdefault("metadata", {})["labels"] = labels
            pod = template.setdefault("spec", {})
            containers = pod.setdefault("containers", [{"name": "web"}])
            containers[0]["image"] = app.spec.image
            containers[0]["ports"] = [{"containerPort": app.spec.port, "protocol": "TCP"}]

        def service(current: JSON) -> None:
            spec = current.setdefault("spec", {})
            spec["selector"] = labels
            want = {"name": "http", "port": 80, "protocol": "TCP", "targetPort": app.spec.port}
            if spec.get("ports") != [want]:
                spec["ports"] = [want]

        meta = {"name": name}
        dep, _ = await ctx.create_or_update(
            app, {"apiVersion": "apps/v1", "kind": "Deployment", "metadata": meta}, deployment
        )
        await ctx.create_or_update(
            app, {"apiVersion": "v1", "kind": "Service", "metadata": dict(meta)}, service
        )
        seen = dep.get("status") or {}
        app.status = app.status or WebAppStatus()
        app.status.replicas = seen.get("replicas", 0)
        app.status.updated_replicas = seen.get("updatedReplicas", 0)
        app.status.available_replicas = seen.get("availableReplicas", 0)
        available = condition(dep, "Available") or {}
        if available.get("status") == "True":
            ctx.set_condition(app, "Ready", True, "DeploymentAvailable", available.get("message"))
        else:
            reason = available.get("reason") or "DeploymentNotAvailable"
            ctx.set_condition(app, "Ready", False, reason, available.get("message") or "waiting")
        progressing = condition(dep, "Progressing") or {}
        if progressing:
            ctx.set_condition(
                app,
                "Progressing",
                progressing.get("status") == "True",
                progressing.get("reason") or "Unknown",
                progressing.get("message") or "",
            )
        await ctx.patch_status(app)
        return Result()

    return mgr


def webapp(name: str, image: str, replicas: int) -> JSON:
    return {
        "apiVersion": "sim.kubewerk.dev/v1",
        "kind": "WebApp",
        "metadata": {"name": name, "namespace": "default"},
        "spec": {"image": image, "replicas": replicas},
    }


STEP = 0.05
"""How far the test moves the simulation's clock at a time (a Pod starts in three steps)."""


@pytest.fixture
def sim_config() -> SimulationConfig:
    # the cluster moves only when the test advances its clock, and the test advances it
    # only once the operator has caught up: every state of a rollout that lasts until a
    # Pod starts or goes is seen by the operator, however slow the machine
    return fast_config(start_seconds=3 * STEP, clock=ManualClock())


@pytest.fixture
async def operator(sim_server: EmbeddedServer) -> AsyncIterator[Client]:
    async with Client.from_url(sim_server.url) as client:
        await install_crds(client, WebApp)
        mgr = build_manager()
        mgr.use_client(client)
        await mgr.start()
        try:
            yield client
        finally:
            await mgr.stop()


def caught_up(server: EmbeddedServer) -> bool:
    """The WebApp shows what its Deployment's status says now (or either is gone)."""
    app = server.store.get("/sim.kubewerk.dev/webapps/default/shop")
    dep = server.store.get("/apps/deployments/default/shop")
    if app is None or dep is None:
        return True
    mine, theirs = app.get("status") or {}, dep.get("status") or {}
    fields = ("replicas", "updatedReplicas", "availableReplicas")
    if any((mine.get(f) or 0) != (theirs.get(f) or 0) for f in fields):
        return False
    ready, available = condition(app, "Ready") or {}, condition(dep, "Available") or {}
    if (ready.get("status") == "True") != (available.get("status") == "True"):
        return False
    progressing = (condition(dep, "Progressing") or {}).get("reason")
    return progressing is None or (condition(app, "Progressing") or {}).get("reason") == progressing


async def step_until(
    server: EmbeddedServer, check: Callable[[], Any], what: str, timeout: float = 10.0
) -> Any:
    """Poll ``check``; while it is falsy, advance the simulation's clock one ``STEP``
    whenever the simulation is idle and the operator has caught up with it (wall-clock
    ``timeout`` for the whole wait)."""
    sim = server.simulation
    assert sim is not None and isinstance(sim.clock, ManualClock)
    loop = asyncio.get_running_loop()
    deadline = loop.time() + timeout
    while True:
        await sim.settle(timeout)
        value = check()
        if value:
            return value
        if loop.time() > deadline:
            raise AssertionError(f"timed out waiting for {what}")
        if caught_up(server):
            sim.clock.advance(STEP)
        else:
            await asyncio.sleep(0.01)


def statuses(events: list[Event]) -> list[JSON]:
    return [ev.obj.get("status") or {} for ev in events if ev.type != "DELETED"]


async def test_operator_reaches_ready_scales_rolls_and_is_collected(
    sim_server: EmbeddedServer, operator: Client
) -> None:
    client = operator
    seen: list[Event] = []
    unsubscribe = sim_server.store.subscribe(
        lambda ev: seen.append(ev) if ev.key.startswith("/sim.kubewerk.dev/webapps/") else None
    )
    try:
        await client.create(webapp("shop", "nginx:1.25", 2))
        # Ready is the Deployment's Available: minimum availability, replicas - maxUnavailable
        # = 1 of 2 here (test_available_means_minimum_availability), so Ready alone does not
        # say both Pods run; the WebApp shows both once they do
        await step_until(
            sim_server,
            lambda: ready_with(sim_server, replicas=2, updated=2, available=2),
            what="WebApp Ready with 2 available",
        )
        app = await client.get(WebApp, "shop", "default")
        ready = next(c for c in app.status.conditions if c.type == "Ready")
        assert (ready.reason, ready.message) == (
            "DeploymentAvailable",
            "Deployment has minimum availability.",
        )
        # it was not Ready before the Deployment's Pods ran
        before = [c for s in statuses(seen) for c in s.get("conditions") or []]
        assert {"type": "Ready", "status": "False"}.items() <= next(
            c for c in before if c["type"] == "Ready"
        ).items()
        dep = await client.get(DEPLOYMENT, "shop", "default")
        owner = dep["metadata"]["ownerReferences"][0]
        assert (owner["kind"], owner["name"], owner["controller"]) == ("WebApp", "shop", True)
        svc = await client.get(SERVICE, "shop", "default")
        assert (
            svc["spec"]["clusterIP"].startswith("10.")
            and svc["spec"]["ports"][0]["targetPort"] == 8080
        )
        # the Service's endpoints are the Deployment's ready Pods
        slices = await step_until(
            sim_server,
            lambda: [
                s
                for s in stored(sim_server, "/discovery.k8s.io/endpointslices/default/")
                if s["metadata"]["labels"]["kubernetes.io/service-name"] == "shop"
                and len(s.get("endpoints") or []) == 2
            ],
            what="EndpointSlice with both Pods",
        )
        assert slices[0]["ports"] == [{"name": "http", "port": 8080, "protocol": "TCP"}]

        # scale through the custom resource
        await client.patch(WebApp, "shop", {"spec": {"replicas": 4}}, "default")
        await step_until(
            sim_server,
            lambda: ready_with(sim_server, replicas=4, updated=4, available=4),
            what="WebApp shows 4 available",
        )
        assert (await client.get(DEPLOYMENT, "shop", "default"))["spec"]["replicas"] == 4

        # a rolling update through the custom resource: the WebApp shows it in between
        seen.clear()
        await client.patch(WebApp, "shop", {"spec": {"image": "nginx:1.26"}}, "default")
        await step_until(
            sim_server,
            lambda: (
                ready_with(
                    sim_server,
                    replicas=4,
                    updated=4,
                    available=4,
                    progress="NewReplicaSetAvailable",
                )
                and all(
                    p["spec"]["containers"][0]["image"] == "nginx:1.26"
                    for p in stored(sim_server, "/core/pods/default/")
                )
            ),
            timeout=15,
            what="rollout finished",
        )
        during = statuses(seen)
        # mid-rollout: more Pods than asked for (maxSurge 1), not all of them updated,
        # the Deployment progressing on its new ReplicaSet, and the app Ready throughout
        assert any(s.get("replicas", 0) == 5 for s in during), during
        assert any(0 < s.get("updatedReplicas", 0) < 4 for s in during), during
        assert any(
            (c["type"], c["reason"]) == ("Progressing", "ReplicaSetUpdated")
            for s in during
            for c in s.get("conditions") or []
        ), during
        assert all(
            c["status"] == "True"
            for s in during
            for c in s.get("conditions") or []
            if c["type"] == "Ready"
        ), during
        assert all(s.get("availableReplicas", 0) >= 3 for s in during), during  # maxUnavailable
        sets = stored(sim_server, "/apps/replicasets/default/")
        assert sorted(rs["spec"]["replicas"] for rs in sets) == [0, 4]
        # converged: the operator does not rewrite its children on every event
        revision = sim_server.store.revision
        await asyncio.sleep(0.3)
        assert sim_server.store.revision == revision
    finally:
        unsubscribe()

    # deleting the custom resource collects the whole tree
    await client.delete(WebApp, "shop", "default")
    prefixes = (
        "/sim.kubewerk.dev/webapps/default/",
        "/apps/deployments/default/",
        "/apps/replicasets/default/",
        "/core/pods/default/",
        "/core/services/default/shop",
        "/core/endpoints/default/shop",
    )

    def left() -> list[str]:
        keys = [key for prefix in prefixes for key, _ in sim_server.store.list(prefix)[0]]
        slices = sim_server.store.list("/discovery.k8s.io/endpointslices/default/")[0]
        return keys + [
            key
            for key, s in slices
            if s["metadata"]["labels"].get("kubernetes.io/service-name") == "shop"
        ]

    await step_until(sim_server, lambda: not left(), what="the tree collected")


def ready_with(
    server: EmbeddedServer,
    *,
    replicas: int,
    updated: int,
    available: int,
    progress: str | None = None,
) -> JSON | None:
    app = server.store.get("/sim.kubewerk.dev/webapps/default/shop")
    status = (app or {}).get("status") or {}
    if (
        (condition(app, "Ready") or {}).get("status") == "True"
        and status.get("replicas") == replicas
        and status.get("updatedReplicas") == updated
        and status.get("availableReplicas") == available
        and (progress is None or (condition(app, "Progressing") or {}).get("reason") == progress)
    ):
        return app
    return None
