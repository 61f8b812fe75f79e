"""The platform operator: 17 kinds on one lifecycle kernel.

Run it with ``kubewerk run examples.platform_demo:platform`` (or ``:manager``). Everything a
kind's author writes is below: for each kind, the step that is specific to it. The kernel
(:class:`~kubewerk.lifecycle.Platform`) does the rest for every kind alike — phases and
the ``Ready`` condition in one guarded status write per transition, waiting for what an
object's refs name (``DependenciesReady``), cycles, finalizers and ordered teardown,
Events, metrics and the event bus.

What a default-lifecycle kind does (:func:`provisioned`):

- Pending (or Reconciling, after a restart mid-way): provision at the simulated provider
  (``provider.py``), fill in the status, → Active;
- Active or Failed with a spec the provider has not seen (``metadata.generation`` ahead
  of ``status.provisionedGeneration``): → Reconciling, provision again, → Active;
- Active or Failed with nothing new: nothing (a Failed object waits for a fix);
- the provider fails (``spec.simulate.fail``): a terminal error; the kernel moves the
  object to Failed with the error as the ``Ready`` condition's message.

Every kind has the same teardown (:func:`deprovision`): the kernel keeps its finalizer
on every object and runs it once nothing references the object any more, so deleting a
Tenant releases its stack at the provider leaves first (a Normal Event ``Deprovisioned``
for each object, in that order).

A :class:`~examples.platform_demo.models.Job` runs (Pending → Running → Succeeded) and runs
again when its spec changes; a :class:`~examples.platform_demo.models.Schedule` follows
``spec.suspend`` through guarded transitions (Active ⇄ Suspended).

Configuration, from the environment:

- ``KUBEWERK_PLATFORM_DELAY``: how long provisioning takes (seconds, default 0.2);
- ``KUBEWERK_PLATFORM_WORKERS``: concurrent reconciles per kind (default 4);
- ``KUBEWERK_PLATFORM_REDIS``: a Redis URL; the event bus is then Redis Streams, shared
  by every operator process on it (each event goes to one of them);
- ``KUBEWERK_PLATFORM_AUDIT``: a file the audit handler appends every phase change to
  (one JSON object a line, with the process id);
- ``KUBEWERK_RECONCILE_STRATEGY``: per-kind reconcile strategies (the kernel's).
"""

from __future__ import annotations

import json
import logging
import os
from collections.abc import Awaitable, Callable
from datetime import UTC, datetime, timedelta
from typing import Any, TypeVar

from kubewerk.client import SECRET
from kubewerk.lifecycle import LifecycleContext, LifecycleEvent, Phase, Platform
from kubewerk.lifecycle.bus import Bus
from kubewerk.runtime import Manager

from . import provider
from .models import (
    KINDS,
    Alert,
    Application,
    Backup,
    BackupStatus,
    Bucket,
    Cache,
    Certificate,
    CertificateStatus,
    CredentialBinding,
    Database,
    DNSRecord,
    EndpointStatus,
    Environment,
    Job,
    JobPhase,
    JobStatus,
    PlatformStatus,
    Project,
    Queue,
    Quota,
    Route,
    Schedule,
    SchedulePhase,
    Tenant,
)

__all__ = ["manager", "platform"]

log = logging.getLogger("platform-example")

WORKERS = max(1, int(os.environ.get("KUBEWERK_PLATFORM_WORKERS", "4") or 4))
"""Concurrent reconciles per kind (``KUBEWERK_PLATFORM_WORKERS``)."""

manager = Manager(name="platform-example", leader_election_id="platform-example")


def _bus(manager: Manager) -> Bus | None:
    """A Redis Streams bus when ``KUBEWERK_PLATFORM_REDIS`` names a server (None: the
    platform's in-process bus)."""
    url = os.environ.get("KUBEWERK_PLATFORM_REDIS")
    if not url:
        return None
    from kubewerk.lifecycle.redis_bus import RedisStreamsBus

    return RedisStreamsBus(url, registry=manager.metrics.registry)


platform = Platform(manager, bus=_bus(manager))

M = TypeVar("M")
Step = Callable[[Any, LifecycleContext], Awaitable[None]]


def _status(obj: Any, status_type: type[M]) -> M:
    """The object's status, made when it has none yet."""
    if obj.status is None:
        obj.status = status_type()
    status: M = obj.status
    return status


def _fresh(obj: Any) -> bool:
    """Whether the provider has not acted on the object's current spec yet."""
    status = obj.status
    seen = status.provisioned_generation if status is not None else None
    return bool(seen != obj.metadata.generation)


def _provisioning(obj: Any, status_type: type[M]) -> M:
    """The status, marked as acted on for the current generation (it goes out with the
    next status write: the move to Active, or the kernel's move to Failed)."""
    status = _status(obj, status_type)
    status.provisioned_generation = obj.metadata.generation  # type: ignore[attr-defined]
    return status


def provisioned(
    kind: Any, status_type: type[PlatformStatus] = PlatformStatus, *, strategy: str | None = None
) -> Callable[[Step], Step]:
    """Register ``kind`` (default lifecycle) with the handler described in the module doc;
    the decorated ``step(obj, ctx)`` fills in the kind's own status fields (of
    ``status_type``) once the provider answered; it may raise
    :class:`~examples.platform_demo.provider.ProvisioningFailed`."""

    def register(step: Step) -> Step:
        @platform.kind(kind, strategy=strategy, max_concurrent_reconciles=WORKERS)
        async def handle(obj: Any, ctx: LifecycleContext) -> Phase | None:
            if ctx.phase in (Phase.ACTIVE, Phase.FAILED):
                if not _fresh(obj):
                    return None
                await ctx.transition(obj, Phase.RECONCILING, reason="SpecChanged")
            status = _provisioning(obj, status_type)
            status.provider_id = await provider.provision(obj)
            await step(obj, ctx)
            await ctx.transition(obj, Phase.ACTIVE, reason="Provisioned")
            return None

        return step

    return register


# -- the kinds -------------------------------------------------------------------------


async def nothing_more(obj: Any, ctx: LifecycleContext) -> None:
    """Kinds whose provider id is all there is to report."""


for _kind in (Tenant, Environment, Project, Quota, Alert):
    provisioned(_kind)(nothing_more)


@provisioned(CredentialBinding)
async def credential_binding(obj: CredentialBinding, ctx: LifecycleContext) -> None:
    """The Secret (there: the kernel waited for it) must hold a username and a password."""
    secret = await ctx.cache.get(SECRET, obj.spec.secret_ref.name, obj.namespace)
    keys = set((secret or {}).get("data") or {}) | set((secret or {}).get("stringData") or {})
    missing = sorted({"username", "password"} - keys)
    if missing:
        raise provider.ProvisioningFailed(
            f"Secret {obj.spec.secret_ref.name} has no {' and no '.join(missing)}"
        )


@provisioned(Database, EndpointStatus)
async def database(obj: Database, ctx: LifecycleContext) -> None:
    """A database may not take more storage than its quota allows."""
    quota = await ctx.cache.get(Quota, obj.spec.quota_ref.name, obj.namespace)
    if quota is not None and obj.spec.storage_gb > quota.spec.storage_gb:
        raise provider.ProvisioningFailed(
            f"{obj.spec.storage_gb} GB asked, quota {quota.name} allows {quota.spec.storage_gb} GB"
        )
    port = 5432 if obj.spec.engine == "postgres" else 3306
    _status(obj, EndpointStatus).endpoint = f"{provider.address(obj)}:{port}"


@provisioned(Cache, EndpointStatus)
async def cache(obj: Cache, ctx: LifecycleContext) -> None:
    _status(obj, EndpointStatus).endpoint = f"{provider.address(obj)}:6379"


@provisioned(Queue, EndpointStatus)
async def queue(obj: Queue, ctx: LifecycleContext) -> None:
    _status(obj, EndpointStatus).endpoint = f"amqp://{provider.address(obj)}:5672/{obj.name}"


@provisioned(Bucket, EndpointStatus)
async def bucket(obj: Bucket, ctx: LifecycleContext) -> None:
    _status(obj, EndpointStatus).endpoint = f"s3://{obj.namespace}-{obj.name}"


@provisioned(DNSRecord, EndpointStatus)
async def dns_record(obj: DNSRecord, ctx: LifecycleContext) -> None:
    _status(obj, EndpointStatus).endpoint = provider.address(obj)


@provisioned(Certificate, CertificateStatus, strategy="backoff(cap=60)")
async def certificate(obj: Certificate, ctx: LifecycleContext) -> None:
    """Issued for the record's hostname; valid ``spec.validityDays`` from now."""
    status = _status(obj, CertificateStatus)
    status.serial = provider.provider_id(obj).rpartition("-")[2].upper()
    now = datetime.now(UTC).replace(microsecond=0)
    status.not_after = now + timedelta(days=obj.spec.validity_days)


@provisioned(Route, EndpointStatus)
async def route(obj: Route, ctx: LifecycleContext) -> None:
    record = await ctx.cache.get(DNSRecord, obj.spec.dns_record_ref.name, obj.namespace)
    hostname = record.spec.hostname if record is not None else obj.name
    _status(obj, EndpointStatus).endpoint = f"https://{hostname}{obj.spec.path}"


@provisioned(Application, EndpointStatus)
async def application(obj: Application, ctx: LifecycleContext) -> None:
    """Served at its route's URL."""
    route = await ctx.cache.get(Route, obj.spec.route_ref.name, obj.namespace)
    url = route.status.endpoint if route is not None and route.status is not None else None
    _status(obj, EndpointStatus).endpoint = url


@provisioned(Backup, BackupStatus)
async def backup(obj: Backup, ctx: LifecycleContext) -> None:
    bucket = await ctx.cache.get(Bucket, obj.spec.bucket_ref.name, obj.namespace)
    base = bucket.status.endpoint if bucket is not None and bucket.status is not None else None
    status = _status(obj, BackupStatus)
    status.location = f"{base or 's3://unknown'}/{obj.spec.database_ref.name}/"


@platform.kind(Job, max_concurrent_reconciles=WORKERS)
async def run_job(job: Job, ctx: LifecycleContext) -> JobPhase | None:
    """Run once (Pending → Running → Succeeded), and again when the spec changes."""
    if ctx.phase in (JobPhase.SUCCEEDED, JobPhase.FAILED) and not _fresh(job):
        return None
    if ctx.phase != JobPhase.RUNNING:
        await ctx.transition(job, JobPhase.RUNNING)
    status = _provisioning(job, JobStatus)
    status.provider_id = await provider.provision(job, "running")  # failure: → Failed
    status.runs = (status.runs or 0) + 1
    status.completion_time = datetime.now(UTC).replace(microsecond=0)
    return JobPhase.SUCCEEDED


@platform.kind(Schedule, max_concurrent_reconciles=WORKERS)
async def schedule(obj: Schedule, ctx: LifecycleContext) -> SchedulePhase | None:
    """Active while it fires, Suspended while ``spec.suspend`` is true (the lifecycle's
    guards check the same field, so only those moves are allowed)."""
    if ctx.phase == SchedulePhase.FAILED and not _fresh(obj):
        return None
    if _fresh(obj):
        _provisioning(obj, PlatformStatus).provider_id = await provider.provision(obj, "scheduling")
    return SchedulePhase.SUSPENDED if obj.spec.suspend else SchedulePhase.ACTIVE


# -- teardown, the same for every kind --------------------------------------------------


async def deprovision(obj: Any, ctx: LifecycleContext) -> None:
    """Release the object at the provider (the kernel calls this once nothing references
    the object any more; a failure is a Warning Event ``CleanupFailed`` and a retry)."""
    await provider.deprovision(obj)
    ctx.event(
        "Normal",
        "Deprovisioned",
        f"{type(obj).__name__} {obj.name} released at the provider",
        action="Deprovision",
    )


for _kind in KINDS:
    platform.teardown(_kind)(deprovision)


# -- the bus ---------------------------------------------------------------------------

AUDIT_FILE = os.environ.get("KUBEWERK_PLATFORM_AUDIT")


@platform.on()  # every kind, every phase change
async def audit(event: LifecycleEvent) -> None:
    """An audit trail of phase changes: logged, and appended to ``KUBEWERK_PLATFORM_AUDIT``
    when set. With a Redis bus shared by several operator processes, each event reaches
    exactly one of them (one consumer group for this subscription)."""
    log.info(
        "audit: %s %s %s → %s (%s)",
        event.kind,
        event.key,
        event.from_phase,
        event.to_phase,
        event.reason,
    )
    if AUDIT_FILE:
        line = json.dumps({"pid": os.getpid(), "event": json.loads(event.to_json())})
        with open(AUDIT_FILE, "a", encoding="utf-8") as out:  # one short line: one write
            out.write(line + "\n")
