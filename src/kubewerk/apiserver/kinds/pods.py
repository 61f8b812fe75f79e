"""``v1`` Pod and PersistentVolume: what their create sets beyond the shared typed strategy.

A Pod is created ``Pending`` with its QoS class (``pkg/registry/core/pod`` strategy's
``PrepareForCreate`` with ``qos.GetPodQOS``); a PersistentVolume starts ``Pending`` with
``lastPhaseTransitionTime`` set (``pkg/registry/core/persistentvolume``).
"""

from __future__ import annotations

from collections.abc import Mapping
from fractions import Fraction
from typing import Any, ClassVar

from kubewerk.apiserver.kindrules.quantity import value_of
from kubewerk.apiserver.kinds.typed import TypedKindStrategy
from kubewerk.core import meta as metautil

JSON = dict[str, Any]

_QOS_RESOURCES = ("cpu", "memory")


def quantity_value(value: Any) -> Fraction | None:
    """A resource quantity (``500m``, ``1Gi``, ``1e3``, a number) as ``ParseQuantity``
    keeps it; None if it does not parse (validation reports those)."""
    return value_of(value)


def pod_qos_class(pod: JSON) -> str:
    """``qos.GetPodQOS`` over the containers and init containers: BestEffort without any
    cpu/memory request or limit, Guaranteed when every container limits both and the
    requests (a missing one defaults to the limit) equal the limits, else Burstable."""
    spec = pod.get("spec") if isinstance(pod.get("spec"), dict) else {}
    assert isinstance(spec, dict)
    requests: dict[str, Fraction] = {}
    limits: dict[str, Fraction] = {}
    guaranteed = True
    containers = [
        c
        for key in ("containers", "initContainers")
        for c in (spec.get(key) if isinstance(spec.get(key), list) else []) or []
        if isinstance(c, dict)
    ]
    for container in containers:
        res = container.get("resources") if isinstance(container.get("resources"), dict) else {}
        assert isinstance(res, dict)
        lim = res.get("limits") if isinstance(res.get("limits"), dict) else {}
        req = res.get("requests") if isinstance(res.get("requests"), dict) else {}
        assert isinstance(lim, dict) and isinstance(req, dict)
        found_limits = set()
        for name in _QOS_RESOURCES:
            limit = quantity_value(lim.get(name))
            request = quantity_value(req.get(name)) if name in req else limit
            if request is not None and request != 0:
                requests[name] = requests.get(name, Fraction(0)) + request
            if limit is not None and limit != 0:
                found_limits.add(name)
                limits[name] = limits.get(name, Fraction(0)) + limit
        if len(found_limits) != len(_QOS_RESOURCES):
            guaranteed = False
    if not requests and not limits:
        return "BestEffort"
    if (
        guaranteed
        and all(requests.get(n) == limits.get(n) for n in limits)
        and (set(requests) == set(limits))
    ):
        return "Guaranteed"
    return "Burstable"


class PodStrategy(TypedKindStrategy):
    """Pods: created Pending with their QoS class and generation 1; deleted gracefully;
    evicted through ``pods/eviction`` (``kinds.eviction``)."""

    subresources: ClassVar[Mapping[str, tuple[str, ...]]] = {"eviction": ("create",)}
    subresource_kinds: ClassVar[Mapping[str, tuple[str, str, str]]] = {
        "eviction": ("policy", "v1", "Eviction")
    }

    def prepare_for_create(self, obj: JSON) -> None:
        super().prepare_for_create(obj)
        obj["status"] = {"phase": "Pending", "qosClass": pod_qos_class(obj)}

    def delete_grace_period(self, obj: JSON, requested: int | None) -> int | None:
        """``podStrategy.CheckGracefulDelete``: the request's period, else the Pod's
        ``terminationGracePeriodSeconds`` (0 when unset); 0 for a Pod never bound to a
        node or already Succeeded or Failed; a negative one becomes 1. A Pod with a
        period above 0 stays, Terminating, until a delete with period 0 (the kubelet's)."""
        spec = obj.get("spec") if isinstance(obj.get("spec"), dict) else {}
        status = obj.get("status") if isinstance(obj.get("status"), dict) else {}
        assert isinstance(spec, dict) and isinstance(status, dict)
        period = requested
        if period is None:
            default = spec.get("terminationGracePeriodSeconds")
            period = default if isinstance(default, int) and not isinstance(default, bool) else 0
        if not spec.get("nodeName") or status.get("phase") in ("Failed", "Succeeded"):
            period = 0
        return 1 if period < 0 else period

    def holds_deletion(self, obj: JSON) -> bool:
        """A Pod in its grace period is removed by a delete, never by losing its last
        finalizer (``shouldDeleteDuringUpdate`` wants a zero grace period)."""
        grace = (obj.get("metadata") or {}).get("deletionGracePeriodSeconds")
        return isinstance(grace, int) and grace > 0


class PersistentVolumeStrategy(TypedKindStrategy):
    """PersistentVolumes: created Pending, the phase's transition time now."""

    def prepare_for_create(self, obj: JSON) -> None:
        super().prepare_for_create(obj)
        obj["status"] = {"phase": "Pending", "lastPhaseTransitionTime": metautil.now_rfc3339()}
