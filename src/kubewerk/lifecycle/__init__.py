"""kubewerk's lifecycle kernel: declared phases and transitions, dependencies between
resources, one platform for many kinds, and the event bus (in-process, Redis Streams).

::

    from kubewerk.lifecycle import DEFAULT_LIFECYCLE, LifecycleStatus, Phase, Platform

    class DatabaseStatus(LifecycleStatus):
        endpoint: str | None = None

    class Database(Resource[DatabaseSpec, DatabaseStatus], group="example.com",
                   lifecycle=DEFAULT_LIFECYCLE):
        \"\"\"A database.\"\"\"           # the CRD refuses illegal phase changes (CEL)

    platform = Platform()

    @platform.kind(Database)
    async def provision(db: Database, ctx: LifecycleContext) -> Phase | None:
        return Phase.ACTIVE             # Pending → Active: one guarded status write

See docs/lifecycle.md.
"""

from typing import TYPE_CHECKING, Any

from kubewerk.lifecycle.context import READY, LifecycleContext
from kubewerk.lifecycle.dependencies import (
    DEPENDENCIES_READY,
    DEPENDENCY_CYCLE,
    DEPENDENTS_REMOVED,
    Dependencies,
)
from kubewerk.lifecycle.errors import (
    IllegalTransition,
    LifecycleDefinitionError,
    LifecycleError,
    UnknownPhase,
)
from kubewerk.lifecycle.gates import Blocked, Gate
from kubewerk.lifecycle.metrics import LifecycleMetrics
from kubewerk.lifecycle.phases import DEFAULT_LIFECYCLE, Lifecycle, Phase, Transition
from kubewerk.lifecycle.platform import FINALIZER, KindRegistration, Platform
from kubewerk.lifecycle.status import LifecycleStatus
from kubewerk.lifecycle.strategy import STRATEGY_ENV, Strategy

if TYPE_CHECKING:
    from kubewerk.lifecycle.bus import Bus, InProcessBus, LifecycleEvent

__all__ = [
    "DEFAULT_LIFECYCLE",
    "DEPENDENCIES_READY",
    "DEPENDENCY_CYCLE",
    "DEPENDENTS_REMOVED",
    "FINALIZER",
    "READY",
    "STRATEGY_ENV",
    "Blocked",
    "Bus",
    "Dependencies",
    "Gate",
    "IllegalTransition",
    "InProcessBus",
    "KindRegistration",
    "Lifecycle",
    "LifecycleContext",
    "LifecycleDefinitionError",
    "LifecycleError",
    "LifecycleEvent",
    "LifecycleMetrics",
    "LifecycleStatus",
    "Phase",
    "Platform",
    "Strategy",
    "Transition",
    "UnknownPhase",
]

_FROM_BUS = frozenset({"Bus", "InProcessBus", "LifecycleEvent"})


def __getattr__(name: str) -> Any:
    # the bus module is imported when first asked for, not with the package
    if name in _FROM_BUS:
        from kubewerk.lifecycle import bus

        return getattr(bus, name)
    raise AttributeError(f"module 'kubewerk.lifecycle' has no attribute {name!r}")
