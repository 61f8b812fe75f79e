"""What a simulated cluster looks like and how fast it moves."""

from __future__ import annotations

import fnmatch
from dataclasses import dataclass, field
from typing import Any

from kubewerk.apiserver.simulate.clock import Clock

FAIL_ANNOTATION = "simulate.kubewerk.dev/fail"
"""On a Pod (or its template): ``crash`` (every container exits 1 after ``run_seconds``
and is restarted with kube's back-off), ``image-pull`` (every image fails to pull)."""
RUN_SECONDS_ANNOTATION = "simulate.kubewerk.dev/run-seconds"
"""On a Pod (or its template): how long its containers run before they exit (Pods whose
``restartPolicy`` is Never or OnFailure then succeed; crashing ones fail)."""


@dataclass(frozen=True)
class NodePool:
    """``count`` identical fake Nodes named ``<prefix><n>`` (n from 0)."""

    count: int = 3
    prefix: str = "kubewerk-node-"
    cpu: str = "4"
    memory: str = "16Gi"
    pods: int = 110
    ephemeral_storage: str = "100Gi"
    labels: dict[str, str] = field(default_factory=dict)
    taints: tuple[dict[str, Any], ...] = ()

    def __post_init__(self) -> None:
        if self.count < 0:
            raise ValueError("a node pool's count must not be negative")
        if self.pods <= 0:
            raise ValueError("a node pool's pods capacity must be positive")


@dataclass(frozen=True)
class SimulationConfig:
    """A simulated cluster: its nodes, its delays (seconds) and its failure rules.

    ``start_seconds``: from a Pod's binding to its containers Running and Ready.
    ``run_seconds``: how long containers of run-to-completion Pods (restartPolicy Never
    or OnFailure) run before they succeed; ``terminate_seconds``: from a Pod's deletion
    to its removal (capped by its grace period). ``heartbeat_seconds``: node Lease
    renewals (and node status refreshes every ``node_status_seconds``).
    ``node_monitor_grace_seconds``: how long a node may miss heartbeats before the node
    lifecycle controller marks it Unknown; ``eviction_seconds``: the toleration seconds
    assumed for Pods that do not tolerate ``node.kubernetes.io/unreachable`` themselves
    (kube's DefaultTolerationSeconds adds 300). ``backoff_seconds``/``max_backoff_seconds``:
    the kubelet's container restart back-off (10 s doubling to 300 s in kube).
    ``crash_images``/``bad_images``: image patterns (``fnmatch``, e.g. ``"*:crash"``) whose
    containers crash or fail to pull, besides the ``simulate.kubewerk.dev/fail`` annotation.
    ``clock``: the time source (None: wall time); tests pass a ``ManualClock``.
    ``event_ttl_seconds``: how long an Event the simulation wrote lives after its last
    write (kube-apiserver's ``--event-ttl``, 1 h).
    ``default_storage_class``: the StorageClass installed (and made default) at start,
    whose provisioner binds claims at once ("" installs none).
    """

    nodes: tuple[NodePool, ...] = (NodePool(),)
    start_seconds: float = 0.5
    run_seconds: float = 1.0
    terminate_seconds: float = 0.0
    heartbeat_seconds: float = 10.0
    node_status_seconds: float = 60.0
    node_monitor_grace_seconds: float = 40.0
    eviction_seconds: float = 300.0
    backoff_seconds: float = 10.0
    max_backoff_seconds: float = 300.0
    crash_images: tuple[str, ...] = ()
    bad_images: tuple[str, ...] = ()
    default_storage_class: str = "standard"
    kubelet_version: str = "v1.31.0"
    pod_cidr: str = "10.244.0.0/16"
    clock: Clock | None = None
    event_ttl_seconds: float = 3600.0

    def __post_init__(self) -> None:
        for name in (
            "start_seconds",
            "run_seconds",
            "terminate_seconds",
            "backoff_seconds",
            "max_backoff_seconds",
        ):
            if getattr(self, name) < 0:
                raise ValueError(f"{name} must not be negative")
        for name in (
            "heartbeat_seconds",
            "node_status_seconds",
            "node_monitor_grace_seconds",
            "event_ttl_seconds",
        ):
            if getattr(self, name) <= 0:
                raise ValueError(f"{name} must be positive")

    @classmethod
    def with_nodes(cls, count: int, **options: Any) -> SimulationConfig:
        """``count`` default nodes; ``cpu``, ``memory``, ``pods`` and ``labels`` go to the
        pool, the rest to the config."""
        pool_keys = {"cpu", "memory", "pods", "labels", "prefix", "taints", "ephemeral_storage"}
        pool = NodePool(count=count, **{k: v for k, v in options.items() if k in pool_keys})
        return cls(nodes=(pool,), **{k: v for k, v in options.items() if k not in pool_keys})

    def image_fails(self, image: str) -> str | None:
        """``crash`` or ``image-pull`` when ``image`` matches a failure pattern."""
        if any(fnmatch.fnmatchcase(image, p) for p in self.bad_images):
            return "image-pull"
        if any(fnmatch.fnmatchcase(image, p) for p in self.crash_images):
            return "crash"
        return None
