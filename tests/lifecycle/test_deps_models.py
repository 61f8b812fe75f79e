"""A tenant stack of kinds with refs between them (used by the dependency tests), and what
registering kinds with refs on a platform does: gates where they belong, and a cycle of
required refs between kinds refused at declaration, naming the cycle.

No ``from __future__ import annotations`` here: forward references to kinds are written
as string parameters (``Ref["Database"]``), as model code writes them."""

from typing import Annotated

import pytest

from kubewerk.lifecycle import (
    DEFAULT_LIFECYCLE,
    LifecycleContext,
    LifecycleDefinitionError,
    LifecycleStatus,
    Phase,
    Platform,
)
from kubewerk.lifecycle.dependencies import DEPENDENCIES_READY, DEPENDENTS_REMOVED
from kubewerk.model import KubeModel, OnDelete, Ref, Resource
from kubewerk.model.refs import Secret
from kubewerk.runtime import Manager

GROUP = "deps.kubewerk.dev"


class StackStatus(LifecycleStatus):
    """Observed state of a stack object."""


class TenantSpec(KubeModel):
    """A tenant: the root of a stack."""

    display_name: str = ""


class Tenant(Resource[TenantSpec, StackStatus], group=GROUP, lifecycle=DEFAULT_LIFECYCLE):
    """A tenant."""


class EnvironmentSpec(KubeModel):
    """An environment of a tenant."""

    tenant_ref: Annotated[Ref[Tenant], OnDelete.CASCADE]


class Environment(Resource[EnvironmentSpec, StackStatus], group=GROUP, lifecycle=DEFAULT_LIFECYCLE):
    """An environment."""


class DatabaseSpec(KubeModel):
    """A database in an environment."""

    environment_ref: Annotated[Ref[Environment], OnDelete.CASCADE]
    credentials_ref: Ref[Secret] | None = None
    replica_of: Ref["Database"] | None = None
    """Another database this one replicates (optional: objects may form a cycle)."""


class Database(Resource[DatabaseSpec, StackStatus], group=GROUP, lifecycle=DEFAULT_LIFECYCLE):
    """A database."""


class CacheSpec(KubeModel):
    """A cache in an environment."""

    environment_ref: Annotated[Ref[Environment], OnDelete.CASCADE]
    size: int = 1


class Cache(Resource[CacheSpec, StackStatus], group=GROUP, lifecycle=DEFAULT_LIFECYCLE):
    """A cache."""


class ApplicationSpec(KubeModel):
    """An application on a database and caches."""

    database_ref: Annotated[Ref[Database], OnDelete.CASCADE]
    cache_refs: list[Annotated[Ref[Cache], OnDelete.CASCADE]] = []


class Application(Resource[ApplicationSpec, StackStatus], group=GROUP, lifecycle=DEFAULT_LIFECYCLE):
    """An application."""


class ReportSpec(KubeModel):
    """A report reading a database (deleting the database waits for it)."""

    database_ref: Ref[Database]


class Report(Resource[ReportSpec, StackStatus], group=GROUP, lifecycle=DEFAULT_LIFECYCLE):
    """A report."""


class DashboardSpec(KubeModel):
    """A dashboard showing a cache (the cache may go without it)."""

    cache_ref: Annotated[Ref[Cache], OnDelete.ORPHAN]


class Dashboard(Resource[DashboardSpec, StackStatus], group=GROUP, lifecycle=DEFAULT_LIFECYCLE):
    """A dashboard."""


STACK = (Tenant, Environment, Database, Cache, Application)
"""The kinds of a tenant stack, roots first."""


def new_platform() -> Platform:
    return Platform(Manager(probe_port=None))


def register(platform: Platform, *kinds: type[Resource[KubeModel, StackStatus]]) -> list[str]:
    """Register each kind with a handler that makes it Active; returns the order in which
    teardown handlers ran (filled while the platform runs)."""
    torn_down: list[str] = []
    for kind in kinds:

        async def activate(obj: object, ctx: LifecycleContext) -> Phase:
            return Phase.ACTIVE

        async def teardown(obj: Resource[KubeModel, StackStatus], ctx: LifecycleContext) -> None:
            torn_down.append(f"{obj.kind}/{obj.name}")

        platform.kind(kind)(activate)
        platform.teardown(kind)(teardown)
    return torn_down


def gate_conditions(platform: Platform, kind: type, *, teardown: bool) -> list[str]:
    registration = platform.registration(kind)
    return [g.condition for g in platform.gates_for(registration, teardown=teardown)]


def test_kinds_with_refs_get_the_readiness_gate_and_named_kinds_the_teardown_gate() -> None:
    platform = new_platform()
    register(platform, *STACK, Report, Dashboard)
    assert gate_conditions(platform, Tenant, teardown=False) == []
    for kind in (Environment, Database, Cache, Application, Report, Dashboard):
        assert gate_conditions(platform, kind, teardown=False) == [DEPENDENCIES_READY]
    for kind in (Tenant, Environment, Database, Cache):  # named by block or cascade refs
        assert gate_conditions(platform, kind, teardown=True) == [DEPENDENTS_REMOVED]
    for kind in (Application, Report, Dashboard):  # nobody depends on them
        assert gate_conditions(platform, kind, teardown=True) == []


def test_a_target_registered_after_its_referrer_gets_its_teardown_gate() -> None:
    platform = new_platform()
    register(platform, Report)
    register(platform, Tenant, Environment, Database)
    assert gate_conditions(platform, Database, teardown=True) == [DEPENDENTS_REMOVED]


def test_only_orphan_refs_need_no_teardown_gate() -> None:
    platform = new_platform()
    register(platform, Tenant, Environment, Cache, Dashboard)
    # Cache is named by Dashboard (orphan) only... and by nobody else here
    assert gate_conditions(platform, Cache, teardown=True) == []
    assert gate_conditions(platform, Environment, teardown=True) == [DEPENDENTS_REMOVED]


class AlphaSpec(KubeModel):
    """Needs a beta."""

    beta_ref: Ref["Beta"]


class Alpha(Resource[AlphaSpec, StackStatus], group=GROUP, lifecycle=DEFAULT_LIFECYCLE):
    """Alpha."""


class BetaSpec(KubeModel):
    """Needs an alpha."""

    alpha_ref: Ref[Alpha]


class Beta(Resource[BetaSpec, StackStatus], group=GROUP, lifecycle=DEFAULT_LIFECYCLE):
    """Beta."""


def test_a_cycle_of_required_refs_between_kinds_is_refused_naming_it() -> None:
    platform = new_platform()
    register(platform, Alpha)
    with pytest.raises(LifecycleDefinitionError) as info:
        register(platform, Beta)
    assert str(info.value).startswith(
        "dependency cycle between kinds: Beta -> Alpha -> Beta "
        "(every ref on it is required: Beta.spec.alphaRef, Alpha.spec.betaRef)"
    )
    assert "Beta.deps.kubewerk.dev" not in platform.kinds  # nothing of it was registered


def test_a_cycle_through_an_optional_ref_is_allowed() -> None:
    platform = new_platform()
    register(platform, Tenant, Environment, Database)  # Database.replicaOf: Database | None
    assert "Database.deps.kubewerk.dev" in platform.kinds


def test_a_forward_reference_to_a_kind_defined_later_is_followed_once_it_is_registered() -> None:
    class EarlySpec(KubeModel):
        """Needs a kind defined after this one is registered."""

        later_ref: Ref["LaterKind"]

    class Early(Resource[EarlySpec, StackStatus], group=GROUP, lifecycle=DEFAULT_LIFECYCLE):
        """Early."""

    platform = new_platform()
    register(platform, Early)  # LaterKind names nothing yet: followed later
    assert gate_conditions(platform, Early, teardown=False) == []

    class LaterKindSpec(KubeModel):
        """Defined late."""

        early_ref: Ref[Early] | None = None

    class LaterKind(Resource[LaterKindSpec, StackStatus], group=GROUP, lifecycle=DEFAULT_LIFECYCLE):
        """Later."""

    register(platform, LaterKind)
    assert gate_conditions(platform, Early, teardown=False) == [DEPENDENCIES_READY]
    assert gate_conditions(platform, LaterKind, teardown=True) == [DEPENDENTS_REMOVED]


def test_a_required_cycle_found_when_a_forward_reference_resolves_is_refused() -> None:
    class FirstSpec(KubeModel):
        """Needs a second."""

        second_ref: Ref["SecondKind"]

    class FirstKind(Resource[FirstSpec, StackStatus], group=GROUP, lifecycle=DEFAULT_LIFECYCLE):
        """First."""

    platform = new_platform()
    register(platform, FirstKind)

    class SecondSpec(KubeModel):
        """Needs a first."""

        first_ref: Ref[FirstKind]

    class SecondKind(Resource[SecondSpec, StackStatus], group=GROUP, lifecycle=DEFAULT_LIFECYCLE):
        """Second."""

    with pytest.raises(LifecycleDefinitionError, match="FirstKind -> SecondKind -> FirstKind"):
        register(platform, SecondKind)


async def test_a_forward_reference_that_never_resolves_blocks_its_objects() -> None:
    class OrphanedSpec(KubeModel):
        """Names a kind nobody defines."""

        ghost_ref: Ref["GhostKind"]  # noqa: F821

    class Orphaned(Resource[OrphanedSpec, StackStatus], group=GROUP, lifecycle=DEFAULT_LIFECYCLE):
        """Orphaned."""

    platform = new_platform()
    register(platform, Orphaned)

    class NoCache:
        def informer(self, kind: object) -> object:
            raise AssertionError("nothing to watch")

    platform.dependencies._attach(NoCache())  # type: ignore[arg-type]
    assert gate_conditions(platform, Orphaned, teardown=False) == [DEPENDENCIES_READY]

    class Ctx:
        kind_label = f"Orphaned.{GROUP}"

    answer = await platform.dependencies._check_ready(None, Ctx())  # type: ignore[arg-type]
    assert answer is not None and answer.reason == "InvalidReference"
    assert "Ref['GhostKind'] names no resource class or kind" in answer.message
