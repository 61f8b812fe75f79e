"""The platform's 17 kinds, as typed kubewerk models: each class is also its CRD
(``crds/`` holds what ``kubewerk gen crd examples.platform_demo.models`` writes).

Group ``platform.kubewerk.dev``, version ``v1``, category ``platform`` (``kubectl get
platform`` lists every kind). ``Tenant`` is cluster-scoped; everything else lives in
the tenant's namespace. What depends on what (every arrow is a ``Ref`` field)::

    Environment        → Tenant
    Project            → Tenant
    Quota              → Project
    CredentialBinding  → Project, Secret (built-in)
    Database           → Environment, Quota, CredentialBinding, [Database (replicaOf)]
    Cache, Queue       → Environment
    Bucket             → Project, CredentialBinding
    DNSRecord          → Environment
    Certificate        → DNSRecord
    Route              → DNSRecord, Certificate
    Application        → Project, Database, Cache..., [Queue], Route, Certificate
    Job                → Application
    Schedule           → Job
    Backup             → Database, Bucket
    Alert              → Application, [Queue]

(``[...]`` optional; ``kubewerk graph examples/platform_demo/crds examples/platform_demo/stack``
draws a stack's objects). Refs cascade: deleting a Tenant deletes
its Environments and Projects first, theirs first, and so on down to the leaves, so a
stack is torn down in reverse dependency order. Two refs do not cascade: a Database's
optional ``replicaOf`` (``block``: a primary is not deleted while a replica follows it)
and a CredentialBinding's Secret (a built-in kind, not the platform's to delete).

Three lifecycles: most kinds use the kernel's default (Pending → Active | Failed;
Active → Reconciling | Deleting | Failed; Reconciling → Active | Failed; Failed →
Reconciling | Deleting); a :class:`Job` runs to completion (:data:`JOB_LIFECYCLE`), and
a :class:`Schedule` can be suspended (:data:`SCHEDULE_LIFECYCLE`). The CRDs carry each
table as a CEL transition rule, so the API server refuses an illegal ``status.phase``
from any client.

Every spec has ``simulate`` (:class:`Simulation`): nothing here calls a cloud; the
provider in ``provider.py`` takes ``delaySeconds`` to "provision" and fails when
``fail`` is true.

No ``from __future__ import annotations`` here: the self-reference ``Ref["Database"]``
is written as a string, the way model code writes forward references.
"""

import enum
from datetime import datetime
from typing import Annotated, Any, Literal

from pydantic import Field

from kubewerk.lifecycle import DEFAULT_LIFECYCLE, Lifecycle, LifecycleStatus, Transition
from kubewerk.model import Format, KubeModel, OnDelete, PrinterColumn, Ref, Resource
from kubewerk.model.refs import Secret

GROUP = "platform.kubewerk.dev"
CATEGORY = "platform"

AGE = PrinterColumn("Age", json_path=".metadata.creationTimestamp", type="date")
"""Kubernetes shows its default Age column only for CRDs without columns of their own."""


# -- the simulated provider's knobs ------------------------------------------------------


class Simulation(KubeModel):
    """How the simulated provider treats this object (no cloud is called)."""

    delay_seconds: Annotated[float, Field(ge=0, le=60)] | None = None
    """How long provisioning takes, in seconds (default: the operator's
    KUBEWERK_PLATFORM_DELAY, 0.2 unless set)."""
    fail: bool = False
    """Make provisioning fail: the object goes Failed. Set it back to false to recover
    (Failed → Reconciling → Active)."""


Simulate = Annotated[Simulation | None, Field(default=None)]


# -- lifecycles ---------------------------------------------------------------------------


class JobPhase(enum.StrEnum):
    """The phases of a Job."""

    PENDING = "Pending"
    RUNNING = "Running"
    SUCCEEDED = "Succeeded"
    FAILED = "Failed"
    DELETING = "Deleting"


JOB_LIFECYCLE: Lifecycle[JobPhase] = Lifecycle(
    JobPhase,
    initial=JobPhase.PENDING,
    transitions=[
        Transition(JobPhase.PENDING, JobPhase.RUNNING, trigger="Started"),
        Transition(JobPhase.PENDING, JobPhase.FAILED),
        Transition(JobPhase.RUNNING, JobPhase.SUCCEEDED, trigger="Completed"),
        Transition(JobPhase.RUNNING, JobPhase.FAILED),
        Transition(JobPhase.RUNNING, JobPhase.DELETING),
        Transition(JobPhase.SUCCEEDED, JobPhase.RUNNING, trigger="Rerun"),
        Transition(JobPhase.SUCCEEDED, JobPhase.DELETING),
        Transition(JobPhase.FAILED, JobPhase.RUNNING, trigger="Retried"),
        Transition(JobPhase.FAILED, JobPhase.DELETING),
    ],
    terminal=[JobPhase.DELETING],
    ready=[JobPhase.SUCCEEDED],
    description="A run to completion; it is ready (what depends on it may start) once it "
    "Succeeded. A changed spec runs it again.",
)
"""Pending → Running → Succeeded | Failed; a changed spec runs a Succeeded or Failed Job
again (→ Running). Ready in Succeeded: a Schedule waits for its Job's first success."""


class SchedulePhase(enum.StrEnum):
    """The phases of a Schedule."""

    PENDING = "Pending"
    ACTIVE = "Active"
    SUSPENDED = "Suspended"
    FAILED = "Failed"
    DELETING = "Deleting"


def _suspend_asked(schedule: "Schedule", ctx: object) -> bool:
    return schedule.spec.suspend


def _resume_asked(schedule: "Schedule", ctx: object) -> bool:
    return not schedule.spec.suspend


SCHEDULE_LIFECYCLE: Lifecycle[SchedulePhase] = Lifecycle(
    SchedulePhase,
    initial=SchedulePhase.PENDING,
    transitions=[
        Transition(SchedulePhase.PENDING, SchedulePhase.ACTIVE, trigger="Scheduled"),
        Transition(SchedulePhase.PENDING, SchedulePhase.SUSPENDED, guard=_suspend_asked),
        Transition(SchedulePhase.PENDING, SchedulePhase.FAILED),
        Transition(
            SchedulePhase.ACTIVE, SchedulePhase.SUSPENDED, guard=_suspend_asked, trigger="Suspend"
        ),
        Transition(SchedulePhase.ACTIVE, SchedulePhase.FAILED),
        Transition(SchedulePhase.ACTIVE, SchedulePhase.DELETING),
        Transition(
            SchedulePhase.SUSPENDED, SchedulePhase.ACTIVE, guard=_resume_asked, trigger="Resume"
        ),
        Transition(SchedulePhase.SUSPENDED, SchedulePhase.DELETING),
        Transition(SchedulePhase.FAILED, SchedulePhase.ACTIVE, trigger="Fixed"),
        Transition(SchedulePhase.FAILED, SchedulePhase.SUSPENDED, guard=_suspend_asked),
        Transition(SchedulePhase.FAILED, SchedulePhase.DELETING),
    ],
    terminal=[SchedulePhase.DELETING],
    ready=[SchedulePhase.ACTIVE],
    description="Active while it fires on its cron; spec.suspend moves it to Suspended "
    "and back (guarded transitions).",
)
"""Pending → Active | Suspended | Failed; Active ⇄ Suspended (guarded: only when
``spec.suspend`` says so); Failed → Active (or Suspended) once fixed (declared here, unlike
the default lifecycle, where a failed object goes through Reconciling)."""


# -- status types -------------------------------------------------------------------------


class PlatformStatus(LifecycleStatus):
    """What the kernel keeps (phase, conditions, observedGeneration,
    lastTransitionTime) and what the provider reported."""

    provider_id: str | None = None
    """The simulated provider's id for the object."""
    provisioned_generation: Annotated[int, Field(ge=0), Format("int64")] | None = None
    """The metadata.generation the provider last acted on, successfully or not (the
    kernel's observedGeneration also moves while the object waits for its dependencies,
    so it cannot say whether a spec change was provisioned)."""


class EndpointStatus(PlatformStatus):
    """A status with the address clients use."""

    endpoint: str | None = None
    """host:port or URL of the provisioned thing."""


class CertificateStatus(PlatformStatus):
    """A certificate's observed state."""

    serial: str | None = None
    not_after: datetime | None = None
    """When the certificate expires."""


class JobStatus(PlatformStatus):
    """A job's observed state."""

    runs: int | None = None
    """How many times the job has run to completion."""
    completion_time: datetime | None = None


class BackupStatus(PlatformStatus):
    """A backup's observed state."""

    location: str | None = None
    """Where the last backup went (in the bucket)."""


# -- the kinds ----------------------------------------------------------------------------


class TenantSpec(KubeModel):
    """A customer of the platform: the root of a stack."""

    display_name: Annotated[str, Field(max_length=128), PrinterColumn("Display Name")]
    tier: Annotated[Literal["free", "standard", "enterprise"], PrinterColumn("Tier")] = "standard"
    simulate: Simulate


class Tenant(
    Resource[TenantSpec, PlatformStatus],
    group=GROUP,
    scope="Cluster",
    categories=[CATEGORY],
    printer_columns=[AGE],
    lifecycle=DEFAULT_LIFECYCLE,
):
    """A tenant (cluster-scoped); its stack lives in a namespace of its own."""


class EnvironmentSpec(KubeModel):
    """Where a tenant's services run."""

    tenant_ref: Annotated[Ref[Tenant], OnDelete.CASCADE]
    stage: Annotated[Literal["dev", "staging", "prod"], PrinterColumn("Stage")] = "dev"
    simulate: Simulate


class Environment(
    Resource[EnvironmentSpec, PlatformStatus],
    group=GROUP,
    short_names=["env"],
    categories=[CATEGORY],
    printer_columns=[AGE],
    lifecycle=DEFAULT_LIFECYCLE,
):
    """An environment of a tenant (dev, staging, prod)."""


class ProjectSpec(KubeModel):
    """A team's project: what quotas and credentials belong to."""

    tenant_ref: Annotated[Ref[Tenant], OnDelete.CASCADE]
    owner: Annotated[str, Field(max_length=253)] = ""
    simulate: Simulate


class Project(
    Resource[ProjectSpec, PlatformStatus],
    group=GROUP,
    categories=[CATEGORY],
    printer_columns=[AGE],
    lifecycle=DEFAULT_LIFECYCLE,
):
    """A project of a tenant."""


class QuotaSpec(KubeModel):
    """How much a project may use."""

    project_ref: Annotated[Ref[Project], OnDelete.CASCADE]
    cpu: Annotated[int, Field(ge=1, le=1024), PrinterColumn("CPU")] = 8
    storage_gb: Annotated[int, Field(ge=1, le=100000, alias="storageGB")] = 100
    """Storage a project's databases and buckets may take together, in GB."""
    simulate: Simulate


class Quota(
    Resource[QuotaSpec, PlatformStatus],
    group=GROUP,
    categories=[CATEGORY],
    printer_columns=[AGE],
    lifecycle=DEFAULT_LIFECYCLE,
):
    """A project's resource quota."""


class CredentialBindingSpec(KubeModel):
    """Credentials from a Secret, bound to a project."""

    project_ref: Annotated[Ref[Project], OnDelete.CASCADE]
    secret_ref: Ref[Secret]
    """The Secret holding ``username`` and ``password`` (a built-in kind: it only has to
    exist, and deleting the binding leaves it alone)."""
    simulate: Simulate


class CredentialBinding(
    Resource[CredentialBindingSpec, PlatformStatus],
    group=GROUP,
    short_names=["cb"],
    categories=[CATEGORY],
    printer_columns=[AGE],
    lifecycle=DEFAULT_LIFECYCLE,
):
    """Credentials a project's resources use."""


class DatabaseSpec(KubeModel):
    """A managed database."""

    environment_ref: Annotated[Ref[Environment], OnDelete.CASCADE]
    quota_ref: Annotated[Ref[Quota], OnDelete.CASCADE]
    credentials_ref: Annotated[Ref[CredentialBinding], OnDelete.CASCADE]
    replica_of: Ref["Database"] | None = None
    """Another database this one replicates (optional, so objects can make a cycle by an
    edit, which the kernel reports; a primary is not deleted while a replica follows it)."""
    engine: Annotated[Literal["postgres", "mysql"], PrinterColumn("Engine")] = "postgres"
    storage_gb: Annotated[int, Field(ge=1, le=65536, alias="storageGB")] = 10
    simulate: Simulate


class Database(
    Resource[DatabaseSpec, EndpointStatus],
    group=GROUP,
    short_names=["db"],
    categories=[CATEGORY],
    printer_columns=[AGE],
    lifecycle=DEFAULT_LIFECYCLE,
):
    """A managed database in an environment."""


class CacheSpec(KubeModel):
    """An in-memory cache."""

    environment_ref: Annotated[Ref[Environment], OnDelete.CASCADE]
    size_mb: Annotated[int, Field(ge=16, le=65536, alias="sizeMB")] = 256
    simulate: Simulate


class Cache(
    Resource[CacheSpec, EndpointStatus],
    group=GROUP,
    categories=[CATEGORY],
    printer_columns=[AGE],
    lifecycle=DEFAULT_LIFECYCLE,
):
    """A cache in an environment."""


class QueueSpec(KubeModel):
    """A message queue."""

    environment_ref: Annotated[Ref[Environment], OnDelete.CASCADE]
    retention_hours: Annotated[int, Field(ge=1, le=720)] = 24
    simulate: Simulate


class Queue(
    Resource[QueueSpec, EndpointStatus],
    group=GROUP,
    categories=[CATEGORY],
    printer_columns=[AGE],
    lifecycle=DEFAULT_LIFECYCLE,
):
    """A queue in an environment."""


class BucketSpec(KubeModel):
    """Object storage."""

    project_ref: Annotated[Ref[Project], OnDelete.CASCADE]
    credentials_ref: Annotated[Ref[CredentialBinding], OnDelete.CASCADE]
    versioned: bool = False
    simulate: Simulate


class Bucket(
    Resource[BucketSpec, EndpointStatus],
    group=GROUP,
    categories=[CATEGORY],
    printer_columns=[AGE],
    lifecycle=DEFAULT_LIFECYCLE,
):
    """A bucket of a project."""


class DNSRecordSpec(KubeModel):
    """A DNS name in the environment's zone."""

    environment_ref: Annotated[Ref[Environment], OnDelete.CASCADE]
    hostname: Annotated[
        str,
        Field(max_length=253, pattern=r"^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$"),
        PrinterColumn("Hostname"),
    ]
    simulate: Simulate


class DNSRecord(
    Resource[DNSRecordSpec, EndpointStatus],
    group=GROUP,
    plural="dnsrecords",
    short_names=["dns"],
    categories=[CATEGORY],
    printer_columns=[AGE],
    lifecycle=DEFAULT_LIFECYCLE,
):
    """A DNS record (its endpoint is the address it resolves to)."""


class CertificateSpec(KubeModel):
    """A TLS certificate for a DNS name (validated through the record)."""

    dns_record_ref: Annotated[Ref[DNSRecord], OnDelete.CASCADE]
    validity_days: Annotated[int, Field(ge=1, le=397)] = 90
    simulate: Simulate


class Certificate(
    Resource[CertificateSpec, CertificateStatus],
    group=GROUP,
    short_names=["cert"],
    categories=[CATEGORY],
    printer_columns=[AGE],
    lifecycle=DEFAULT_LIFECYCLE,
):
    """A certificate for a DNS record's name."""


class RouteSpec(KubeModel):
    """An HTTPS route: a name, a certificate, a path."""

    dns_record_ref: Annotated[Ref[DNSRecord], OnDelete.CASCADE]
    certificate_ref: Annotated[Ref[Certificate], OnDelete.CASCADE]
    path: Annotated[str, Field(max_length=1024, pattern=r"^/"), PrinterColumn("Path")] = "/"
    simulate: Simulate


class Route(
    Resource[RouteSpec, EndpointStatus],
    group=GROUP,
    categories=[CATEGORY],
    printer_columns=[AGE],
    lifecycle=DEFAULT_LIFECYCLE,
):
    """A route to an application (its endpoint is the URL)."""


class ApplicationSpec(KubeModel):
    """A deployed application and what it needs."""

    project_ref: Annotated[Ref[Project], OnDelete.CASCADE]
    database_ref: Annotated[Ref[Database], OnDelete.CASCADE]
    cache_refs: list[Annotated[Ref[Cache], OnDelete.CASCADE]] = []
    queue_ref: Annotated[Ref[Queue], OnDelete.CASCADE] | None = None
    route_ref: Annotated[Ref[Route], OnDelete.CASCADE]
    certificate_ref: Annotated[Ref[Certificate], OnDelete.CASCADE]
    image: Annotated[str, Field(max_length=512), PrinterColumn("Image")]
    replicas: Annotated[int, Field(ge=0, le=100)] = 2
    simulate: Simulate


class Application(
    Resource[ApplicationSpec, EndpointStatus],
    group=GROUP,
    short_names=["app"],
    categories=[CATEGORY],
    printer_columns=[AGE],
    lifecycle=DEFAULT_LIFECYCLE,
):
    """An application (its endpoint is its public URL)."""


class JobSpec(KubeModel):
    """A run to completion in an application's context (a migration, a report)."""

    application_ref: Annotated[Ref[Application], OnDelete.CASCADE]
    command: Annotated[list[Annotated[str, Field(max_length=1024)]], Field(min_length=1)]
    simulate: Simulate


class Job(
    Resource[JobSpec, JobStatus],
    group=GROUP,
    categories=[CATEGORY],
    printer_columns=[AGE],
    lifecycle=JOB_LIFECYCLE,
):
    """A job of an application."""


class ScheduleSpec(KubeModel):
    """When to run a job again."""

    job_ref: Annotated[Ref[Job], OnDelete.CASCADE]
    cron: Annotated[str, Field(max_length=128, pattern=r"^\S+( +\S+){4}$"), PrinterColumn("Cron")]
    """Five cron fields (minute hour day-of-month month day-of-week)."""
    suspend: bool = False
    """Stop firing (Active → Suspended); false again resumes it."""
    simulate: Simulate


class Schedule(
    Resource[ScheduleSpec, PlatformStatus],
    group=GROUP,
    categories=[CATEGORY],
    printer_columns=[AGE],
    lifecycle=SCHEDULE_LIFECYCLE,
):
    """A schedule for a job (it starts once the job has succeeded once)."""


class BackupSpec(KubeModel):
    """A database backed up into a bucket."""

    database_ref: Annotated[Ref[Database], OnDelete.CASCADE]
    bucket_ref: Annotated[Ref[Bucket], OnDelete.CASCADE]
    retention_days: Annotated[int, Field(ge=1, le=3650)] = 30
    simulate: Simulate


class Backup(
    Resource[BackupSpec, BackupStatus],
    group=GROUP,
    categories=[CATEGORY],
    printer_columns=[AGE],
    lifecycle=DEFAULT_LIFECYCLE,
):
    """A backup of a database."""


class AlertSpec(KubeModel):
    """An alert on an application, notified through a queue."""

    application_ref: Annotated[Ref[Application], OnDelete.CASCADE]
    queue_ref: Annotated[Ref[Queue], OnDelete.CASCADE] | None = None
    """Where notifications go (none: only the alert's status)."""
    expression: Annotated[str, Field(max_length=1024)]
    """What fires the alert, e.g. ``error_rate > 0.05``."""
    severity: Annotated[Literal["info", "warning", "critical"], PrinterColumn("Severity")] = (
        "warning"
    )
    simulate: Simulate


class Alert(
    Resource[AlertSpec, PlatformStatus],
    group=GROUP,
    categories=[CATEGORY],
    printer_columns=[AGE],
    lifecycle=DEFAULT_LIFECYCLE,
):
    """An alert on an application."""


KINDS: tuple[type[Resource[Any, Any]], ...] = (
    Tenant,
    Environment,
    Project,
    Quota,
    CredentialBinding,
    Database,
    Cache,
    Queue,
    Bucket,
    DNSRecord,
    Certificate,
    Route,
    Application,
    Job,
    Schedule,
    Backup,
    Alert,
)
"""The 17 kinds, each after everything it depends on."""
