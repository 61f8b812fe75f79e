"""Services' endpoints: the EndpointSlice and Endpoints controllers.

For a Service with a selector (not ExternalName), the Pods of its namespace that match it
and have an IP become one IPv4 EndpointSlice ``<service>-`` plus five characters (labels
``kubernetes.io/service-name``, ``endpointslice.kubernetes.io/managed-by:
endpointslice-controller.k8s.io`` and the Service's own; a controller ownerReference to
the Service), each endpoint with ``ready``/``serving``/``terminating``, ``nodeName`` and
``targetRef``; ports with named ``targetPort``s resolved against the first Pod's
container ports. The Endpoints object named as the Service carries the same addresses in
one subset (``notReadyAddresses`` for Pods not ready, terminating ones left out); it is
removed with its Service.
"""

from __future__ import annotations

import ipaddress
from typing import Any

from kubewerk.apiserver.simulate.engine import (
    Engine,
    changed_copy,
    is_pod_ready,
    owner_ref,
    split_key,
)
from kubewerk.apiserver.simulate.fit import is_finished
from kubewerk.apiserver.simulate.workloads import POD_PREFIX

JSON = dict[str, Any]

SERVICE_NAME = "kubernetes.io/service-name"
MANAGED_BY = "endpointslice.kubernetes.io/managed-by"
SLICE_CONTROLLER = "endpointslice-controller.k8s.io"
SLICE_PREFIX = "/discovery.k8s.io/endpointslices/"


def _selected(selector: dict[str, str], labels: dict[str, str]) -> bool:
    return all(labels.get(k) == v for k, v in selector.items())


def _ip_key(ip: str) -> tuple[int, int]:
    try:
        addr = ipaddress.ip_address(ip)
    except ValueError:
        return (9, 0)
    return (addr.version, int(addr))


def _target_port(port: JSON, pod: JSON | None) -> int | None:
    target = port.get("targetPort", port.get("port"))
    if isinstance(target, int):
        return target
    if pod is None:
        return None
    for container in (pod.get("spec") or {}).get("containers") or []:
        for cport in container.get("ports") or []:
            if cport.get("name") == target:
                return int(cport.get("containerPort", 0))
    return None


class Endpoints:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        engine.handlers["service"] = self.reconcile

    def reconcile(self, key: str) -> None:
        engine = self.engine
        ns, name = split_key(key)
        svc = engine.get(key)
        ep_key = f"/core/endpoints/{ns}/{name}"
        spec = (svc or {}).get("spec") or {}
        selector = spec.get("selector") or {}
        if svc is None or svc["metadata"].get("deletionTimestamp"):
            if engine.get(ep_key) is not None:
                engine.delete(ep_key)
            return  # slices go with the Service through their ownerReference
        if not selector or spec.get("type") == "ExternalName":
            return  # endpoints of selector-less Services are the user's
        pods = []
        for _, pod in engine.items_under(f"{POD_PREFIX}{ns}/"):
            if not _selected(selector, (pod["metadata"].get("labels") or {})):
                continue
            if is_finished(pod) or not (pod.get("status") or {}).get("podIP"):
                continue
            pods.append(pod)
        pods.sort(key=lambda p: _ip_key(p["status"]["podIP"]))
        first = pods[0] if pods else None
        ports = []
        for port in spec.get("ports") or []:
            number = _target_port(port, first)
            if number is None:
                continue
            entry: JSON = {
                "name": port.get("name", ""),
                "port": number,
                "protocol": port.get("protocol", "TCP"),
            }
            if port.get("appProtocol"):
                entry["appProtocol"] = port["appProtocol"]
            ports.append(entry)
        self._slice(svc, ns, name, pods, ports)
        self._endpoints(svc, ns, name, pods, ports, ep_key)

    def _slice(self, svc: JSON, ns: str, name: str, pods: list[JSON], ports: list[JSON]) -> None:
        engine = self.engine
        if engine.rtype("discovery.k8s.io", "endpointslices") is None:
            return
        endpoints = []
        for pod in pods:
            terminating = bool(pod["metadata"].get("deletionTimestamp"))
            ready = is_pod_ready(pod)
            ep: JSON = {
                "addresses": [pod["status"]["podIP"]],
                "conditions": {
                    "ready": ready and not terminating,
                    "serving": ready,
                    "terminating": terminating,
                },
                "targetRef": {
                    "kind": "Pod",
                    "name": pod["metadata"]["name"],
                    "namespace": ns,
                    "uid": pod["metadata"].get("uid"),
                },
            }
            node = (pod.get("spec") or {}).get("nodeName")
            if node:
                ep["nodeName"] = node
            endpoints.append(ep)
        labels = {
            **(svc["metadata"].get("labels") or {}),
            SERVICE_NAME: name,
            MANAGED_BY: SLICE_CONTROLLER,
        }
        slices = [s for _, s in engine.owned(svc, SLICE_PREFIX)]
        body: JSON = {
            "addressType": "IPv4",
            "endpoints": endpoints,
            "ports": ports,
        }
        if slices:
            current = slices[0]
            for extra in slices[1:]:
                engine.delete(f"{SLICE_PREFIX}{ns}/{extra['metadata']['name']}")
            same = (
                (current.get("endpoints") or []) == endpoints
                and (current.get("ports") or []) == ports
                and (current["metadata"].get("labels") or {}) == labels
            )
            if same:
                return
            new = changed_copy(current)
            new["endpoints"] = endpoints
            new["ports"] = ports
            new["metadata"]["labels"] = labels
            new["metadata"].setdefault("annotations", {})[
                "endpoints.kubernetes.io/last-change-trigger-time"
            ] = engine.now()
            engine.update(f"{SLICE_PREFIX}{ns}/{current['metadata']['name']}", new)
            return
        engine.create(
            "discovery.k8s.io",
            "endpointslices",
            ns,
            {
                "apiVersion": "discovery.k8s.io/v1",
                "kind": "EndpointSlice",
                "metadata": {
                    "generateName": f"{name}-",
                    "namespace": ns,
                    "labels": labels,
                    "annotations": {
                        "endpoints.kubernetes.io/last-change-trigger-time": engine.now()
                    },
                    "ownerReferences": [owner_ref(svc, "v1", "Service")],
                },
                **body,
            },
        )

    def _endpoints(
        self, svc: JSON, ns: str, name: str, pods: list[JSON], ports: list[JSON], ep_key: str
    ) -> None:
        engine = self.engine
        if engine.rtype("", "endpoints") is None:
            return
        ready: list[JSON] = []
        not_ready: list[JSON] = []
        for pod in pods:
            if pod["metadata"].get("deletionTimestamp"):
                continue
            address: JSON = {
                "ip": pod["status"]["podIP"],
                "targetRef": {
                    "kind": "Pod",
                    "name": pod["metadata"]["name"],
                    "namespace": ns,
                    "uid": pod["metadata"].get("uid"),
                },
            }
            if (pod.get("spec") or {}).get("nodeName"):
                address["nodeName"] = pod["spec"]["nodeName"]
            (ready if is_pod_ready(pod) else not_ready).append(address)
        subset: JSON = {}
        if ready:
            subset["addresses"] = ready
        if not_ready:
            subset["notReadyAddresses"] = not_ready
        subsets = []
        if subset and ports:
            subset["ports"] = [
                {
                    k: v
                    for k, v in p.items()
                    if k in ("name", "port", "protocol", "appProtocol") and v != ""
                }
                for p in ports
            ]
            subsets.append(subset)
        labels = dict(svc["metadata"].get("labels") or {})
        current = engine.get(ep_key)
        if current is None:
            body: JSON = {
                "apiVersion": "v1",
                "kind": "Endpoints",
                "metadata": {"name": name, "namespace": ns},
            }
            if labels:
                body["metadata"]["labels"] = labels
            if subsets:
                body["subsets"] = subsets
            engine.create("", "endpoints", ns, body)
            return
        if (current.get("subsets") or []) == subsets and (
            current["metadata"].get("labels") or {}
        ) == labels:
            return
        new = changed_copy(current)
        if subsets:
            new["subsets"] = subsets
        else:
            new.pop("subsets", None)
        if labels:
            new["metadata"]["labels"] = labels
        else:
            new["metadata"].pop("labels", None)
        engine.update(ep_key, new)
