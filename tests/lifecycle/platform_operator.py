"""A small platform run by ``kubewerk run`` in the CLI tests."""

from __future__ import annotations

from kubewerk.lifecycle import LifecycleContext, Phase, Platform

from .models import Cache, CachePhase, Database

platform = Platform()


@platform.kind(Database)
async def provision(db: Database, ctx: LifecycleContext) -> Phase:
    """Every database becomes Active at once."""
    return Phase.ACTIVE


@platform.kind(Cache)
async def fill(cache: Cache, ctx: LifecycleContext) -> CachePhase | None:
    """A cache with a size becomes Warm."""
    return CachePhase.WARM if cache.spec.size else None


def make_platform() -> Platform:
    """A factory: ``kubewerk run`` calls it."""
    return platform
