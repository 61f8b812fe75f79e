"""The platform example's operator as users write it today: one plain controller per kind.

The hand-written contender of ``benchmarks/lifecycle.py``. It manages the same 17 kinds
(``examples/platform_demo/models.py``) with the same simulated provider
(``examples/platform_demo/provider.py``: the same delay, the same failures) and writes the
same phases the kinds' lifecycles allow, but on ``kubewerk.runtime`` alone, without the
lifecycle kernel: every controller checks by hand what its object's refs name, and
while something is not ready it writes ``status.phase: Pending`` with a ``Ready=False``
condition naming what it waits for and asks to be reconciled again after a fixed time
(``Result(requeue_after=N)``), which is what operators on controller-runtime, kube-rs
or kopf do when nothing tells them that a dependency became ready.

What each reconcile does, in order:

- being deleted: release the object at the provider and remove the finalizer;
- add the finalizer (one metadata patch, the first time);
- already in its ready phase (or Failed) for the current ``metadata.generation``: done;
- read every object its refs name from the informer cache; a missing one, one being
  deleted or one outside its ready phase (``Active``; ``Succeeded`` for a Job; a Secret
  only has to exist) means wait: status Pending (if it is still Pending) and
  ``Ready=False, reason=DependenciesNotReady``, then ``Result(requeue_after=N)``;
- otherwise provision (a Job goes ``Running`` first), fill in the kind's status fields,
  write the ready phase with ``Ready=True`` in one status patch, and record a Normal
  Event, as the kernel does for each transition.

Like most controller-runtime operators it filters its own status writes with
``GENERATION_CHANGED`` (controller-runtime's ``GenerationChangedPredicate``), so a
status write does not cause another reconcile; only the requeue polls.

Run it with ``kubewerk run lifecycle_baseline:manager`` (``benchmarks/`` and the
repository root on ``PYTHONPATH``). Configuration, from the environment:

- ``BENCH_REQUEUE_AFTER``: seconds between two looks at dependencies that are not ready
  (default 2);
- ``KUBEWERK_PLATFORM_WORKERS``: concurrent reconciles per kind (default 4, as the example);
- ``KUBEWERK_PLATFORM_DELAY``: the provider's delay (read by ``provider.py``).
"""

from __future__ import annotations

import os
from collections.abc import Callable
from datetime import UTC, datetime, timedelta
from typing import Any

from examples.platform_demo import provider
from examples.platform_demo.models import (
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
    JobStatus,
    PlatformStatus,
    Project,
    Queue,
    Quota,
    Route,
    Schedule,
    Tenant,
)

from kubewerk.client import SECRET
from kubewerk.runtime import (
    GENERATION_CHANGED,
    Context,
    Manager,
    Result,
    has_finalizer,
    is_deleting,
    set_condition,
)

__all__ = ["REQUEUE_AFTER", "WORKERS", "manager"]

REQUEUE_AFTER = float(os.environ.get("BENCH_REQUEUE_AFTER", "2") or 2)
"""Seconds until a look again at dependencies that were not ready."""

WORKERS = max(1, int(os.environ.get("KUBEWERK_PLATFORM_WORKERS", "4") or 4))
"""Concurrent reconciles per kind, as the example's ``KUBEWERK_PLATFORM_WORKERS``."""

FINALIZER = "platform.kubewerk.dev/cleanup"

manager = Manager(name="platform-baseline")

Dep = tuple[Any, str, str | None]
"""What a ref names: (kind, name, namespace; None for a cluster-scoped kind)."""


# -- what each kind depends on, written out by hand -------------------------------------


def _tenant(obj: Any) -> list[Dep]:
    return []


def _environment(obj: Environment) -> list[Dep]:
    return [(Tenant, obj.spec.tenant_ref.name, None)]


def _project(obj: Project) -> list[Dep]:
    return [(Tenant, obj.spec.tenant_ref.name, None)]


def _quota(obj: Quota) -> list[Dep]:
    return [(Project, obj.spec.project_ref.name, obj.namespace)]


def _credential_binding(obj: CredentialBinding) -> list[Dep]:
    return [
        (Project, obj.spec.project_ref.name, obj.namespace),
        (SECRET, obj.spec.secret_ref.name, obj.namespace),
    ]


def _database(obj: Database) -> list[Dep]:
    deps: list[Dep] = [
        (Environment, obj.spec.environment_ref.name, obj.namespace),
        (Quota, obj.spec.quota_ref.name, obj.namespace),
        (CredentialBinding, obj.spec.credentials_ref.name, obj.namespace),
    ]
    if obj.spec.replica_of is not None:
        deps.append((Database, obj.spec.replica_of.name, obj.namespace))
    return deps


def _in_environment(obj: Cache | Queue | DNSRecord) -> list[Dep]:
    return [(Environment, obj.spec.environment_ref.name, obj.namespace)]


def _bucket(obj: Bucket) -> list[Dep]:
    return [
        (Project, obj.spec.project_ref.name, obj.namespace),
        (CredentialBinding, obj.spec.credentials_ref.name, obj.namespace),
    ]


def _certificate(obj: Certificate) -> list[Dep]:
    return [(DNSRecord, obj.spec.dns_record_ref.name, obj.namespace)]


def _route(obj: Route) -> list[Dep]:
    return [
        (DNSRecord, obj.spec.dns_record_ref.name, obj.namespace),
        (Certificate, obj.spec.certificate_ref.name, obj.namespace),
    ]


def _application(obj: Application) -> list[Dep]:
    ns = obj.namespace
    deps: list[Dep] = [
        (Project, obj.spec.project_ref.name, ns),
        (Database, obj.spec.database_ref.name, ns),
    ]
    deps.extend((Cache, ref.name, ns) for ref in obj.spec.cache_refs)
    if obj.spec.queue_ref is not None:
        deps.append((Queue, obj.spec.queue_ref.name, ns))
    deps.append((Route, obj.spec.route_ref.name, ns))
    deps.append((Certificate, obj.spec.certificate_ref.name, ns))
    return deps


def _job(obj: Job) -> list[Dep]:
    return [(Application, obj.spec.application_ref.name, obj.namespace)]


def _schedule(obj: Schedule) -> list[Dep]:
    return [(Job, obj.spec.job_ref.name, obj.namespace)]


def _backup(obj: Backup) -> list[Dep]:
    return [
        (Database, obj.spec.database_ref.name, obj.namespace),
        (Bucket, obj.spec.bucket_ref.name, obj.namespace),
    ]


def _alert(obj: Alert) -> list[Dep]:
    deps: list[Dep] = [(Application, obj.spec.application_ref.name, obj.namespace)]
    if obj.spec.queue_ref is not None:
        deps.append((Queue, obj.spec.queue_ref.name, obj.namespace))
    return deps


READY_PHASE: dict[Any, str] = {Job: "Succeeded"}
"""The phase in which an object of a kind is ready (Active unless listed)."""


def _ready(kind: Any, dep: Any) -> bool:
    """Whether a dependency read from the cache is ready: it exists, is not being
    deleted and (for the platform's kinds) is in its ready phase."""
    if dep is None:
        return False
    if kind is SECRET:
        return not is_deleting(dep)
    if dep.metadata.deletion_timestamp is not None:
        return False
    phase = dep.status.phase if dep.status is not None else None
    return bool(phase == READY_PHASE.get(kind, "Active"))


# -- the status fields each kind reports once provisioned --------------------------------

Fill = Callable[[Any, dict[str, Any]], None]
"""Fills in a kind's own status fields from the object and the dependencies it read
(by kind name)."""


def _nothing(obj: Any, deps: dict[str, Any]) -> None:
    pass


def _endpoint(make: Callable[[Any], str]) -> Fill:
    def fill(obj: Any, deps: dict[str, Any]) -> None:
        obj.status.endpoint = make(obj)

    return fill


def _database_fill(obj: Database, deps: dict[str, Any]) -> None:
    quota = deps.get("Quota")
    if quota is not None and obj.spec.storage_gb > quota.spec.storage_gb:
        raise provider.ProvisioningFailed(
            f"{obj.spec.storage_gb} GB asked, quota {quota.name} allows {quota.spec.storage_gb} GB"
        )
    port = 5432 if obj.spec.engine == "postgres" else 3306
    obj.status.endpoint = f"{provider.address(obj)}:{port}"


def _credential_fill(obj: CredentialBinding, deps: dict[str, Any]) -> None:
    secret = deps.get(SECRET.kind) or {}
    keys = set(secret.get("data") or {}) | set(secret.get("stringData") or {})
    missing = sorted({"username", "password"} - keys)
    if missing:
        raise provider.ProvisioningFailed(
            f"Secret {obj.spec.secret_ref.name} has no {' and no '.join(missing)}"
        )


def _certificate_fill(obj: Certificate, deps: dict[str, Any]) -> None:
    obj.status.serial = provider.provider_id(obj).rpartition("-")[2].upper()
    now = datetime.now(UTC).replace(microsecond=0)
    obj.status.not_after = now + timedelta(days=obj.spec.validity_days)


def _route_fill(obj: Route, deps: dict[str, Any]) -> None:
    record = deps.get("DNSRecord")
    hostname = record.spec.hostname if record is not None else obj.name
    obj.status.endpoint = f"https://{hostname}{obj.spec.path}"


def _application_fill(obj: Application, deps: dict[str, Any]) -> None:
    route = deps.get("Route")
    obj.status.endpoint = route.status.endpoint if route is not None else None


def _backup_fill(obj: Backup, deps: dict[str, Any]) -> None:
    bucket = deps.get("Bucket")
    base = bucket.status.endpoint if bucket is not None else None
    obj.status.location = f"{base or 's3://unknown'}/{obj.spec.database_ref.name}/"


def _job_fill(obj: Job, deps: dict[str, Any]) -> None:
    obj.status.runs = (obj.status.runs or 0) + 1
    obj.status.completion_time = datetime.now(UTC).replace(microsecond=0)


# -- one controller per kind -----------------------------------------------------------


def _set_phase(obj: Any, phase: str) -> None:
    if obj.status.phase != phase:
        obj.status.phase = phase
        obj.status.last_transition_time = datetime.now(UTC).replace(microsecond=0)
    obj.status.observed_generation = obj.metadata.generation


def controller(
    kind: Any,
    status_type: type[PlatformStatus],
    depends: Callable[[Any], list[Dep]],
    fill: Fill = _nothing,
    *,
    ready: str = "Active",
    working: str | None = "Reconciling",
) -> None:
    """Register the hand-written controller of ``kind``: it waits for ``depends(obj)``
    by requeueing every :data:`REQUEUE_AFTER` seconds, provisions, and writes ``ready``.
    ``working`` is the phase a provisioned object passes through when its spec changes
    (a Job passes through it the first time too); None: straight to ``ready``."""

    async def reconcile(obj: Any, ctx: Context) -> Result | None:
        if obj.metadata.deletion_timestamp is not None:
            if has_finalizer(ctx.snapshot, FINALIZER):
                await provider.deprovision(obj)
                await ctx.remove_finalizer(obj, FINALIZER)
            return None
        await ctx.ensure_finalizer(obj, FINALIZER)
        if obj.status is None:
            obj.status = status_type()
        status = obj.status
        phase = status.phase or "Pending"
        fresh = status.provisioned_generation != obj.metadata.generation
        if phase in (ready, "Failed", "Suspended") and not fresh:
            return None

        # dependencies, by hand: read each one, wait while any is not ready
        found: dict[str, Any] = {}
        waiting: list[str] = []
        for dep_kind, name, namespace in depends(obj):
            dep = await ctx.cache.get(dep_kind, name, namespace)
            kind_name = dep_kind.kind if dep_kind is SECRET else dep_kind.__name__
            if _ready(dep_kind, dep):
                found[kind_name] = dep
            else:
                waiting.append(f"{kind_name}/{name}")
        if waiting:
            if phase == "Pending":
                _set_phase(obj, "Pending")
            set_condition(
                obj, "Ready", False, "DependenciesNotReady", "waiting for " + ", ".join(waiting)
            )
            await ctx.patch_status(obj)
            return Result(requeue_after=REQUEUE_AFTER)

        if working is not None and (phase != "Pending" or kind is Job) and phase != working:
            _set_phase(obj, working)
            set_condition(obj, "Ready", False, "SpecChanged" if phase != "Pending" else working)
            await ctx.patch_status(obj)
        status.provisioned_generation = obj.metadata.generation
        try:
            status.provider_id = await provider.provision(obj)
            fill(obj, found)
        except provider.ProvisioningFailed as exc:
            _set_phase(obj, "Failed")
            set_condition(obj, "Ready", False, "ReconcileFailed", str(exc))
            await ctx.patch_status(obj)
            ctx.event("Warning", "ProvisioningFailed", str(exc), action="Provision")
            return None
        target = "Suspended" if getattr(obj.spec, "suspend", False) else ready
        _set_phase(obj, target)
        set_condition(obj, "Ready", target == ready, "Provisioned")
        await ctx.patch_status(obj)
        ctx.event("Normal", "PhaseChanged", f"{phase} → {target}: Provisioned", action="Provision")
        return None

    manager.reconciler(kind, predicates=[GENERATION_CHANGED], max_concurrent_reconciles=WORKERS)(
        reconcile
    )


controller(Tenant, PlatformStatus, _tenant)
controller(Environment, PlatformStatus, _environment)
controller(Project, PlatformStatus, _project)
controller(Quota, PlatformStatus, _quota)
controller(CredentialBinding, PlatformStatus, _credential_binding, _credential_fill)
controller(Database, EndpointStatus, _database, _database_fill)
controller(
    Cache, EndpointStatus, _in_environment, _endpoint(lambda o: f"{provider.address(o)}:6379")
)
controller(
    Queue,
    EndpointStatus,
    _in_environment,
    _endpoint(lambda o: f"amqp://{provider.address(o)}:5672/{o.name}"),
)
controller(Bucket, EndpointStatus, _bucket, _endpoint(lambda o: f"s3://{o.namespace}-{o.name}"))
controller(DNSRecord, EndpointStatus, _in_environment, _endpoint(provider.address))
controller(Certificate, CertificateStatus, _certificate, _certificate_fill)
controller(Route, EndpointStatus, _route, _route_fill)
controller(Application, EndpointStatus, _application, _application_fill)
controller(Job, JobStatus, _job, _job_fill, ready="Succeeded", working="Running")
controller(Schedule, PlatformStatus, _schedule, working=None)
controller(Backup, BackupStatus, _backup, _backup_fill)
controller(Alert, PlatformStatus, _alert)
