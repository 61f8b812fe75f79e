"""The example's custom resources, as typed kubewerk models (each class is also its CRD)."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from kubewerk.model import Conditions, KubeModel, Resource

GROUP = "example.kubewerk.dev"


class DatabaseSpec(KubeModel):
    """What the user asks for."""

    engine: Literal["postgres", "mysql"] = "postgres"
    """Database engine."""
    version: str = "16"
    """Engine version."""
    storage_gb: Annotated[int, Field(ge=1, le=1024, alias="storageGB")] = 10
    """Disk size in GiB."""


class DatabaseStatus(KubeModel):
    """What the operator observed."""

    phase: str | None = None
    """Pending, Ready or Deleting."""
    endpoint: str | None = None
    """host:port clients connect to."""
    secret_name: str | None = None
    """The Secret holding the credentials."""
    conditions: Conditions | None = None


class Database(Resource[DatabaseSpec, DatabaseStatus], group=GROUP):
    """A managed database."""


class DatabaseRef(KubeModel):
    """A Database in the same namespace."""

    name: str


class BackupPolicySpec(KubeModel):
    """How to back a Database up."""

    database_ref: DatabaseRef
    """The Database to back up."""
    schedule: str = "0 3 * * *"
    """Cron schedule."""
    retention_days: Annotated[int, Field(ge=1, le=365)] = 7
    """How long backups are kept."""


class BackupPolicyStatus(KubeModel):
    """Whether the policy can run."""

    conditions: Conditions | None = None


class BackupPolicy(Resource[BackupPolicySpec, BackupPolicyStatus], group=GROUP):
    """A backup schedule for a Database."""
