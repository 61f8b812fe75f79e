"""kubewerk's controller runtime: informers, work queue, controllers, manager.

from kubewerk.runtime import Manager, Context, Result, GENERATION_CHANGED

mgr = Manager()

@mgr.reconciler(Database, owns=[SECRET, CONFIGMAP], predicates=[GENERATION_CHANGED])
async def reconcile(db: Database, ctx: Context) -> Result:
    ...

asyncio.run(mgr.run_until_signal())   # or: kubewerk run mymodule:mgr
"""

from kubewerk.core.gvk import object_key, split_key
from kubewerk.runtime.conditions import (
    get_condition,
    is_condition_true,
    remove_condition,
    set_condition,
)
from kubewerk.runtime.controller import Context, Controller, Result, TerminalError, Watch
from kubewerk.runtime.events import EventRecorder, SeriesCache
from kubewerk.runtime.helpers import (
    AlreadyOwnedError,
    OperationResult,
    controller_of,
    create_or_patch,
    create_or_update,
    has_finalizer,
    is_deleting,
    merge_patch_diff,
    owner_reference,
    set_controller_reference,
    set_owner_reference,
)
from kubewerk.runtime.informer import Cache, Informer, Scope
from kubewerk.runtime.leaderelection import LeaderElector, LeaderRecord, decide
from kubewerk.runtime.manager import (
    Builder,
    CacheSyncTimeout,
    KindNotServed,
    LeaderElectionLost,
    Manager,
)
from kubewerk.runtime.metrics import Metrics
from kubewerk.runtime.predicates import (
    ANNOTATIONS_CHANGED,
    GENERATION_CHANGED,
    LABELS_CHANGED,
    RESOURCE_VERSION_CHANGED,
    Predicate,
    has_labels,
    label_selector,
    predicate,
)
from kubewerk.runtime.queue import (
    BucketRateLimiter,
    ItemExponentialFailureRateLimiter,
    ItemFastSlowRateLimiter,
    MaxOfRateLimiter,
    RateLimiter,
    ShutDown,
    WorkQueue,
    default_controller_rate_limiter,
)

__all__ = [
    "ANNOTATIONS_CHANGED",
    "GENERATION_CHANGED",
    "LABELS_CHANGED",
    "RESOURCE_VERSION_CHANGED",
    "AlreadyOwnedError",
    "BucketRateLimiter",
    "Builder",
    "Cache",
    "CacheSyncTimeout",
    "Context",
    "Controller",
    "EventRecorder",
    "Informer",
    "ItemExponentialFailureRateLimiter",
    "ItemFastSlowRateLimiter",
    "KindNotServed",
    "LeaderElectionLost",
    "LeaderElector",
    "LeaderRecord",
    "Manager",
    "MaxOfRateLimiter",
    "Metrics",
    "OperationResult",
    "Predicate",
    "RateLimiter",
    "Result",
    "Scope",
    "SeriesCache",
    "ShutDown",
    "TerminalError",
    "Watch",
    "WorkQueue",
    "controller_of",
    "create_or_patch",
    "create_or_update",
    "decide",
    "default_controller_rate_limiter",
    "get_condition",
    "has_finalizer",
    "has_labels",
    "is_condition_true",
    "is_deleting",
    "label_selector",
    "merge_patch_diff",
    "object_key",
    "owner_reference",
    "predicate",
    "remove_condition",
    "set_condition",
    "set_controller_reference",
    "set_owner_reference",
    "split_key",
]
