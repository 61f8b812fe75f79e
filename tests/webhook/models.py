"""Test kinds for the webhook tests: Database in v1alpha1 and v1 (the hub), converters."""

from __future__ import annotations

from typing import Annotated

import orjson
from pydantic import Field

from kubewerk.model import KubeModel, ObjectMeta, Resource, converter
from kubewerk.webhook import AdmissionRequest, Allowed, Denied, WebhookApp

GROUP = "webhook.test.kubewerk.dev"
LOST = f"{GROUP}/v1-fields"


class DatabaseSpecV1alpha1(KubeModel):
    engine: str
    size: str | None = None  # "10Gi"


class Backup(KubeModel):
    schedule: str
    keep: int | None = None


class DatabaseSpec(KubeModel):
    engine: str
    storage_gi: Annotated[int, Field(ge=1, le=1000)] | None = None
    replicas: Annotated[int, Field(ge=0, le=9)] | None = None
    backup: Backup | None = None  # not in v1alpha1: kept in an annotation there
    tags: list[str] | None = None
    options: dict[str, str] | None = None


class DatabaseStatus(KubeModel):
    ready: bool | None = None


class DatabaseV1alpha1(
    Resource[DatabaseSpecV1alpha1, DatabaseStatus], group=GROUP, version="v1alpha1", kind="Database"
):
    """A database, first version."""


class Database(Resource[DatabaseSpec, DatabaseStatus], group=GROUP, version="v1", storage=True):
    """A database."""


@converter
def up(src: DatabaseV1alpha1) -> Database:
    annotations = dict(src.metadata.annotations or {})
    lost = orjson.loads(annotations.pop(LOST)) if LOST in annotations else {}
    size = src.spec.size
    spec = DatabaseSpec(
        engine=src.spec.engine,
        storage_gi=int(size.removesuffix("Gi")) if size else None,
        **lost,
    )
    # metadata set explicitly: convert() takes labels and annotations from it
    return Database(
        metadata=ObjectMeta(annotations=annotations or None), spec=spec, status=src.status
    )


@converter
def down(src: Database) -> DatabaseV1alpha1:
    annotations = dict(src.metadata.annotations or {})
    lost = src.spec.model_dump(
        mode="json", include={"replicas", "backup", "tags", "options"}, exclude_unset=True
    )
    if lost:
        annotations[LOST] = orjson.dumps(lost).decode()
    spec = DatabaseSpecV1alpha1(
        engine=src.spec.engine,
        size=f"{src.spec.storage_gi}Gi" if src.spec.storage_gi is not None else None,
    )
    return DatabaseV1alpha1(
        metadata=ObjectMeta(annotations=annotations or None), spec=spec, status=src.status
    )


def make_app() -> WebhookApp:
    """The app the tests serve: a validator, a mutator, conversion."""
    app = WebhookApp()

    @app.validating(Database)
    async def check(db: Database, old: Database | None, req: AdmissionRequest) -> Allowed | Denied:
        if req.operation == "DELETE":
            if (db.metadata.labels or {}).get("protected") == "true":
                return Denied(f"database {db.name} is protected")
            return Allowed()
        if old is not None and db.spec.engine != old.spec.engine:
            return Denied(
                "spec.engine is immutable",
                code=422,
                reason="Invalid",
                causes=[],
            )
        warnings = ["no backup configured"] if db.spec.backup is None else []
        if db.spec.engine not in ("postgres", "mysql"):
            return Denied(f"engine {db.spec.engine!r} is not supported", warnings=warnings)
        return Allowed(warnings=warnings, audit_annotations={"engine": db.spec.engine})

    @app.mutating(Database)
    async def default(db: Database, old: Database | None, req: AdmissionRequest) -> None:
        if db.spec.replicas is None:
            db.spec.replicas = 1
        labels = dict(db.metadata.labels or {})
        labels.setdefault("app.kubernetes.io/managed-by", "kubewerk")
        db.metadata.labels = labels

    app.conversion("/convert")
    return app


app = make_app()
