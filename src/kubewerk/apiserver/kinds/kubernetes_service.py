"""The ``default/kubernetes`` Service and its endpoints, kept as kube-apiserver keeps them.

kube-apiserver creates the Service ``kubernetes`` in ``default`` at start-up
(``pkg/controlplane/controller/kubernetesservice``): type ClusterIP with the first address
of the service range, port ``https`` 443/TCP to the server's own port, labels
``component=apiserver`` and ``provider=kubernetes``, no selector. Its endpoint reconciler
(``pkg/controlplane/reconcilers``) writes the Endpoints ``kubernetes`` (label
``endpointslice.kubernetes.io/skip-mirror=true``) and the EndpointSlice ``kubernetes``
(label ``kubernetes.io/service-name=kubernetes``, one ready endpoint) with the address
and port the server advertises, and both controllers put back every 10 seconds what was
deleted or changed.

``KubernetesService.reconcile`` does one such pass through the REST layer (so defaults,
validation and watch events apply); ``ApiServer`` runs it once the address is known, again
soon after any of the three objects is deleted, and every ``RECONCILE_INTERVAL`` seconds.
"""

from __future__ import annotations

import logging
from typing import Any

from kubewerk.apiserver.registry import Registry
from kubewerk.apiserver.request import Target
from kubewerk.apiserver.rest import ResourceApi
from kubewerk.core.errors import ApiError
from kubewerk.core.jsoncopy import copy_json

JSON = dict[str, Any]
log = logging.getLogger("kubewerk.apiserver")

NAMESPACE = "default"
NAME = "kubernetes"
PORT_NAME = "https"
SERVICE_PORT = 443
SERVICE_LABELS = {"component": "apiserver", "provider": "kubernetes"}
SKIP_MIRROR = "endpointslice.kubernetes.io/skip-mirror"
SERVICE_NAME_LABEL = "kubernetes.io/service-name"
RECONCILE_INTERVAL = 10.0
"""Seconds between passes (kube-apiserver's endpoint reconciler interval)."""

KEYS = (
    f"/core/services/{NAMESPACE}/{NAME}",
    f"/core/endpoints/{NAMESPACE}/{NAME}",
    f"/discovery.k8s.io/endpointslices/{NAMESPACE}/{NAME}",
)
"""Storage keys of the three objects (a deletion of one triggers a pass)."""


class KubernetesService:
    """Keeps ``default/kubernetes`` (Service, Endpoints, EndpointSlice) pointing at
    ``address``:``port``; ``cluster_ip`` is the Service's address (the range's first)."""

    def __init__(
        self, api: ResourceApi, registry: Registry, cluster_ip: str, address: str, port: int
    ) -> None:
        self.api = api
        self.registry = registry
        self.cluster_ip = cluster_ip
        self.address = address
        self.port = port
        self.family = "IPv6" if ":" in address else "IPv4"

    def reconcile(self) -> None:
        """One pass: create what is missing, put back what differs. A refusal is logged,
        never raised (the next pass tries again)."""
        for ensure in (self._service, self._endpoints, self._endpoint_slice):
            try:
                ensure()
            except ApiError as exc:
                log.warning("default/kubernetes: %s", exc.message)

    # -- the three objects -------------------------------------------------------

    def _ports(self) -> list[JSON]:
        return [
            {"name": PORT_NAME, "protocol": "TCP", "port": SERVICE_PORT, "targetPort": self.port}
        ]

    def _service(self) -> None:
        target = self._target("", "services")
        if target is None:
            return
        current = self._get(target)
        if current is None:
            self.api.create(
                self._collection(target),
                {
                    "apiVersion": "v1",
                    "kind": "Service",
                    "metadata": {"name": NAME, "labels": dict(SERVICE_LABELS)},
                    "spec": {
                        "type": "ClusterIP",
                        "clusterIP": self.cluster_ip,
                        "clusterIPs": [self.cluster_ip],
                        "sessionAffinity": "None",
                        "ports": self._ports(),
                    },
                },
                {},
            )
            return
        spec = current.get("spec") or {}
        ports = [
            {k: p.get(k) for k in ("name", "protocol", "port", "targetPort")}
            for p in spec.get("ports") or []
        ]
        if ports == self._ports() and spec.get("type") == "ClusterIP":
            return
        new = copy_json(current)
        new["spec"]["ports"] = self._ports()
        new["spec"]["type"] = "ClusterIP"
        self.api.update(target, new, {})

    def _endpoints(self) -> None:
        target = self._target("", "endpoints")
        if target is None:
            return
        subsets = [
            {
                "addresses": [{"ip": self.address}],
                "ports": [{"name": PORT_NAME, "port": self.port, "protocol": "TCP"}],
            }
        ]
        labels = {SKIP_MIRROR: "true"}
        current = self._get(target)
        if current is None:
            self.api.create(
                self._collection(target),
                {
                    "apiVersion": "v1",
                    "kind": "Endpoints",
                    "metadata": {"name": NAME, "labels": labels},
                    "subsets": subsets,
                },
                {},
            )
        elif current.get("subsets") != subsets or current["metadata"].get("labels") != labels:
            new = copy_json(current)
            new["subsets"] = subsets
            new["metadata"]["labels"] = labels
            self.api.update(target, new, {})

    def _endpoint_slice(self) -> None:
        target = self._target("discovery.k8s.io", "endpointslices")
        if target is None:
            return
        endpoints = [{"addresses": [self.address], "conditions": {"ready": True}}]
        ports = [{"name": PORT_NAME, "protocol": "TCP", "port": self.port}]
        labels = {SERVICE_NAME_LABEL: NAME}
        current = self._get(target)
        if current is None:
            self.api.create(
                self._collection(target),
                {
                    "apiVersion": "discovery.k8s.io/v1",
                    "kind": "EndpointSlice",
                    "metadata": {"name": NAME, "labels": labels},
                    "addressType": self.family,
                    "endpoints": endpoints,
                    "ports": ports,
                },
                {},
            )
            return
        same = (
            current.get("endpoints") == endpoints
            and current.get("ports") == ports
            and current["metadata"].get("labels") == labels
        )
        if not same:
            new = copy_json(current)
            new["endpoints"] = endpoints
            new["ports"] = ports
            new["metadata"]["labels"] = labels
            self.api.update(target, new, {})

    # -- helpers -----------------------------------------------------------------

    def _target(self, group: str, resource: str) -> Target | None:
        rtype = self.registry.get(group, resource)
        if rtype is None:
            return None
        return Target(rtype, rtype.storage_version, NAMESPACE, NAME)

    @staticmethod
    def _collection(target: Target) -> Target:
        return Target(target.rtype, target.version, target.namespace, None)

    def _get(self, target: Target) -> JSON | None:
        try:
            return self.api.get(target, {}).body
        except ApiError as exc:
            if exc.code == 404:
                return None
            raise
