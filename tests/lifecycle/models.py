"""Kinds with lifecycles for the lifecycle tests."""

from __future__ import annotations

import enum

from kubewerk.lifecycle import DEFAULT_LIFECYCLE, Lifecycle, LifecycleStatus, Transition
from kubewerk.model import KubeModel, Resource

GROUP = "lifecycle.kubewerk.dev"


class DatabaseSpec(KubeModel):
    """Desired state of a database."""

    engine: str = "postgres"
    fail: bool = False
    """The simulated backend refuses to provision it (a terminal error)."""


class DatabaseStatus(LifecycleStatus):
    """Observed state of a database."""

    endpoint: str | None = None


class Database(Resource[DatabaseSpec, DatabaseStatus], group=GROUP, lifecycle=DEFAULT_LIFECYCLE):
    """A database (the default lifecycle)."""


class CachePhase(enum.StrEnum):
    """The phases of a cache."""

    WAITING = "Waiting"
    WARM = "Warm"
    COLD = "Cold"
    EVICTED = "Evicted"


def has_size(obj: Cache, ctx: object) -> bool:
    """Guard: a cache becomes Warm only with a size."""
    return obj.spec.size > 0


CACHE_LIFECYCLE = Lifecycle(
    CachePhase,
    initial=CachePhase.WAITING,
    transitions=[
        Transition(CachePhase.WAITING, CachePhase.WARM, guard=has_size, trigger="Filled"),
        Transition(CachePhase.WARM, CachePhase.COLD),
        Transition(CachePhase.COLD, CachePhase.WARM),
        Transition(CachePhase.COLD, CachePhase.EVICTED),
        Transition(CachePhase.WAITING, CachePhase.EVICTED),
    ],
    terminal=[CachePhase.EVICTED],
    ready=[CachePhase.WARM],
)


class CacheSpec(KubeModel):
    """Desired state of a cache."""

    size: int = 0


class CacheStatus(LifecycleStatus):
    """Observed state of a cache."""


class Cache(Resource[CacheSpec, CacheStatus], group=GROUP, lifecycle=CACHE_LIFECYCLE):
    """A cache (its own lifecycle, with a guard)."""
