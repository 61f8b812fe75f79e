"""The example operator. Run it with ``kubewerk run database_operator.main:manager``.

Database controller (``For`` Database, ``Owns`` Secret and ConfigMap):
  - adds a finalizer; on deletion "drops" the database (here: records it) and removes
    the finalizer; if that fails, an Event and the ``Ready`` condition say why;
  - keeps a Secret with generated credentials (created once, never rotated by accident)
    and a ConfigMap with the connection settings, both controlled by the Database so
    the garbage collector removes them with it, and puts them back if edited;
  - reports ``status.phase``, ``status.endpoint`` and a ``Ready`` condition.

BackupPolicy controller (``For`` BackupPolicy, ``Watches`` Database):
  - is ``Ready`` only while the referenced Database exists and is Ready; a change to a
    Database re-reconciles every policy pointing at it (found through a cache index).
"""

from __future__ import annotations

import base64
import logging
import secrets
from typing import Any

from kubewerk.client import CONFIGMAP, SECRET
from kubewerk.runtime import GENERATION_CHANGED, Context, Manager, Result, is_condition_true

from .models import BackupPolicy, Database, DatabaseStatus

FINALIZER = "example.kubewerk.dev/drop-database"
PORTS = {"postgres": 5432, "mysql": 3306}
log = logging.getLogger("database-operator")

manager = Manager(name="database-operator", leader_election_id="database-operator")

# BackupPolicies indexed by the Database they point at ("namespace/name")
manager.index(
    BackupPolicy,
    "database",
    lambda p: [f"{p['metadata'].get('namespace')}/{p['spec']['databaseRef']['name']}"],
)

dropped: list[str] = []  # what cleanup did (a real operator would call its backend here)


async def drop_database(db: Database, ctx: Context) -> None:
    """Finalizer cleanup: drop the real database behind the object."""
    if (db.metadata.annotations or {}).get("example.kubewerk.dev/fail-drop") == "true":
        raise RuntimeError("the backend refused to drop the database")
    dropped.append(f"{db.namespace}/{db.name}")
    ctx.log.info("dropped database %s", db.name)


@manager.reconciler(Database, owns=[SECRET, CONFIGMAP])
async def reconcile_database(db: Database, ctx: Context) -> Result:
    if await ctx.finalize(db, FINALIZER, drop_database):
        return Result()
    name = str(db.name)
    secret_name = f"{name}-credentials"

    def keep_password(current: dict[str, Any]) -> None:
        data = current.setdefault("data", {})
        data.setdefault("username", base64.b64encode(b"app").decode())
        if "password" not in data:  # generated once
            data["password"] = base64.b64encode(secrets.token_urlsafe(18).encode()).decode()
        current.setdefault("type", "Opaque")

    await ctx.create_or_update(
        db, {"apiVersion": "v1", "kind": "Secret", "metadata": {"name": secret_name}}, keep_password
    )
    port = PORTS[db.spec.engine]
    host = f"{name}.{db.namespace}.svc"
    settings = {
        "engine": db.spec.engine,
        "version": db.spec.version,
        "host": host,
        "port": str(port),
        "storageGB": str(db.spec.storage_gb),
    }
    await ctx.create_or_update(
        db,
        {
            "apiVersion": "v1",
            "kind": "ConfigMap",
            "metadata": {"name": f"{name}-settings"},
            "data": settings,
        },
    )

    status = db.status or DatabaseStatus()
    db.status = status
    status.phase = "Ready"
    status.endpoint = f"{host}:{port}"
    status.secret_name = secret_name
    ctx.set_condition(
        db,
        "Ready",
        True,
        "Provisioned",
        f"{db.spec.engine} {db.spec.version} is serving on {status.endpoint}",
    )
    if await ctx.patch_status(db):
        ctx.event(
            "Normal",
            "Provisioned",
            f"{db.spec.engine} {db.spec.version} ready at {status.endpoint}",
            action="Provision",
        )
    return Result()


def policies_for(db: dict[str, Any]) -> list[str]:
    """The BackupPolicies that reference a Database."""
    meta = db["metadata"]
    assert manager.cache is not None
    return manager.cache.keys_by_index(
        BackupPolicy, "database", f"{meta.get('namespace')}/{meta['name']}"
    )


@manager.reconciler(
    BackupPolicy, watches=[(Database, policies_for)], predicates=[GENERATION_CHANGED]
)
async def reconcile_backup_policy(policy: BackupPolicy, ctx: Context) -> Result:
    ref = policy.spec.database_ref.name
    db = await ctx.cache.get(Database, ref, policy.namespace)
    if db is None:
        ctx.set_condition(
            policy, "Ready", False, "DatabaseNotFound", f"database {ref} does not exist"
        )
    elif db.metadata.deletion_timestamp is not None:
        ctx.set_condition(
            policy, "Ready", False, "DatabaseDeleting", f"database {ref} is being deleted"
        )
    elif not is_condition_true(db, "Ready"):
        ctx.set_condition(
            policy, "Ready", False, "DatabaseNotReady", f"database {ref} is not ready yet"
        )
    else:
        ctx.set_condition(
            policy,
            "Ready",
            True,
            "Scheduled",
            f"backing up {ref} on '{policy.spec.schedule}', "
            f"keeping {policy.spec.retention_days} days",
        )
    if await ctx.patch_status(policy):
        cond = policy.status.conditions[0] if policy.status and policy.status.conditions else None
        if cond is not None:
            ctx.event("Normal" if cond.status == "True" else "Warning", cond.reason, cond.message)
    return Result()
