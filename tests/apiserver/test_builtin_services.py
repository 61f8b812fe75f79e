"""Service addresses as kube-apiserver's Service storage allocates them: cluster IPs from
the service range (requested ones reserved or refused with kube's messages, headless and
ExternalName without one, given back on delete and on a change to ExternalName, rebuilt
from a reopened SQLite store), the IP family fields, node ports and health check node
ports; and the ``default/kubernetes`` Service with its Endpoints and EndpointSlice."""

from __future__ import annotations

import asyncio
import ipaddress
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from kubewerk.apiserver.app import ApiServer
from kubewerk.apiserver.kinds.services import ServiceNetwork
from kubewerk.apiserver.request import Target
from kubewerk.apiserver.server import EmbeddedServer
from kubewerk.apiserver.storage import open_store
from kubewerk.core.errors import ApiError
from tests.apiserver.helpers import Api

SVC = "/api/v1/namespaces/default/services"
RANGE = ipaddress.ip_network("10.96.0.0/12")


def service(name: str, **spec: Any) -> dict[str, Any]:
    body: dict[str, Any] = {"selector": {"app": name}, "ports": [{"port": 80}]}
    body.update(spec)
    return {"apiVersion": "v1", "kind": "Service", "metadata": {"name": name}, "spec": body}


@pytest.fixture
async def api(aserver: EmbeddedServer) -> AsyncIterator[Api]:
    client = Api(aserver.url)
    try:
        yield client
    finally:
        await client.close()


async def test_a_cluster_ip_is_allocated_from_the_range_with_its_family_fields(api: Api) -> None:
    status, body = await api.post(SVC, service("web"))
    assert status == 201, body
    spec = body["spec"]
    ip = ipaddress.ip_address(spec["clusterIP"])
    assert ip in RANGE
    # dynamic addresses come from the upper band first (KEP-3070: /12 → offset 256)
    assert int(ip) >= int(RANGE.network_address) + 1 + 256
    assert spec["clusterIPs"] == [spec["clusterIP"]]
    assert spec["ipFamilies"] == ["IPv4"]
    assert spec["ipFamilyPolicy"] == "SingleStack"
    assert spec["type"] == "ClusterIP"
    assert spec["internalTrafficPolicy"] == "Cluster"
    # two Services never share an address
    ips = {spec["clusterIP"]}
    for i in range(5):
        status, other = await api.post(SVC, service(f"web{i}"))
        assert status == 201
        ips.add(other["spec"]["clusterIP"])
    assert len(ips) == 6


async def test_a_requested_ip_is_honoured_or_refused_with_kubes_messages(api: Api) -> None:
    status, body = await api.post(SVC, service("dns", clusterIP="10.96.0.10"))
    assert status == 201, body
    assert body["spec"]["clusterIPs"] == ["10.96.0.10"]
    status, body = await api.post(SVC, service("dns2", clusterIP="10.96.0.10"))
    assert status == 422
    assert body["message"] == (
        'Service "dns2" is invalid: spec.clusterIPs: Invalid value: ["10.96.0.10"]: '
        "failed to allocate IP 10.96.0.10: provided IP is already allocated"
    )
    status, body = await api.post(SVC, service("far", clusterIP="192.168.1.1"))
    assert status == 422
    assert body["message"] == (
        'Service "far" is invalid: spec.clusterIPs: Invalid value: ["192.168.1.1"]: '
        "failed to allocate IP 192.168.1.1: the provided network does not match the current range"
    )
    status, body = await api.post(SVC, service("net", clusterIP="10.96.0.0"))
    assert status == 422
    assert body["message"].endswith(
        "failed to allocate IP 10.96.0.0: provided IP 10.96.0.0 is not in the valid range"
    )
    status, body = await api.post(SVC, service("v6", clusterIP="fd00::1"))
    assert status == 422
    assert "spec.clusterIPs[0]" in body["message"]
    assert "IPv6 is not configured on this cluster" in body["message"]
    status, body = await api.post(SVC, service("dual", ipFamilyPolicy="RequireDualStack"))
    assert status == 422
    assert body["message"] == (
        'Service "dual" is invalid: spec.ipFamilyPolicy: Invalid value: "RequireDualStack": '
        "this cluster is not configured for dual-stack services"
    )
    # PreferDualStack on a single-stack cluster: one family
    status, body = await api.post(SVC, service("prefer", ipFamilyPolicy="PreferDualStack"))
    assert status == 201
    assert body["spec"]["ipFamilies"] == ["IPv4"]


async def test_deleting_a_service_gives_its_ip_back(api: Api) -> None:
    assert (await api.post(SVC, service("a", clusterIP="10.96.5.5")))[0] == 201
    assert (await api.post(SVC, service("b", clusterIP="10.96.5.5")))[0] == 422
    status, _ = await api.delete(f"{SVC}/a")
    assert status == 200
    status, body = await api.post(SVC, service("b", clusterIP="10.96.5.5"))
    assert status == 201, body


async def test_dry_run_reserves_nothing(api: Api) -> None:
    status, body = await api.post(f"{SVC}?dryRun=All", service("d", clusterIP="10.96.7.7"))
    assert status == 201
    assert body["spec"]["clusterIP"] == "10.96.7.7"
    # kube's dry-run allocator answers the network address for a dynamic one
    status, body = await api.post(f"{SVC}?dryRun=All", service("d"))
    assert body["spec"]["clusterIP"] == "10.96.0.0"
    status, body = await api.post(SVC, service("real", clusterIP="10.96.7.7"))
    assert status == 201, body


async def test_headless_and_external_name_get_no_address(api: Api) -> None:
    status, body = await api.post(SVC, service("headless", clusterIP="None"))
    assert status == 201, body
    assert body["spec"]["clusterIPs"] == ["None"]
    assert body["spec"]["ipFamilies"] == ["IPv4"]
    assert body["spec"]["ipFamilyPolicy"] == "SingleStack"
    bare = service("bare", clusterIP="None")
    del bare["spec"]["selector"]
    status, body = await api.post(SVC, bare)
    assert status == 201, body
    # headless without a selector: RequireDualStack with both families, as kube picks
    assert body["spec"]["ipFamilyPolicy"] == "RequireDualStack"
    assert body["spec"]["ipFamilies"] == ["IPv4", "IPv6"]
    ext = service("ext", type="ExternalName", externalName="db.example.com")
    del ext["spec"]["ports"]
    status, body = await api.post(SVC, ext)
    assert status == 201, body
    assert "clusterIP" not in body["spec"]
    assert "ipFamilies" not in body["spec"]


async def test_type_changes_release_and_allocate_as_kube(api: Api) -> None:
    status, body = await api.post(SVC, service("t", clusterIP="10.96.9.9"))
    assert status == 201
    # a re-sent manifest without the allocated address keeps it (patchAllocatedValues)
    again = service("t")
    again["metadata"]["resourceVersion"] = body["metadata"]["resourceVersion"]
    status, body = await api.put(f"{SVC}/t", again)
    assert status == 200, body
    assert body["spec"]["clusterIP"] == "10.96.9.9"
    # ClusterIP -> ExternalName: the address is dropped and given back
    status, body = await api.patch(
        f"{SVC}/t", {"spec": {"type": "ExternalName", "externalName": "x.example.com"}}
    )
    assert status == 200, body
    assert "clusterIP" not in body["spec"] and "clusterIPs" not in body["spec"]
    assert "ipFamilies" not in body["spec"] and "ipFamilyPolicy" not in body["spec"]
    status, body = await api.post(SVC, service("u", clusterIP="10.96.9.9"))
    assert status == 201, body
    # ExternalName -> ClusterIP: a new address
    status, body = await api.patch(f"{SVC}/t", {"spec": {"type": "ClusterIP"}})
    assert status == 200, body
    assert ipaddress.ip_address(body["spec"]["clusterIP"]) in RANGE
    assert body["spec"]["clusterIP"] != "10.96.9.9"
    assert body["spec"]["ipFamilies"] == ["IPv4"]
    # the first address stays immutable
    status, body = await api.patch(
        f"{SVC}/t", {"spec": {"clusterIP": "10.96.9.10", "clusterIPs": ["10.96.9.10"]}}
    )
    assert status == 422
    assert "spec.clusterIPs[0]" in body["message"] and "may not change once set" in body["message"]


async def test_node_ports(api: Api) -> None:
    status, body = await api.post(
        SVC,
        service(
            "np", type="NodePort", ports=[{"name": "a", "port": 80}, {"name": "b", "port": 81}]
        ),
    )
    assert status == 201, body
    ports = [p["nodePort"] for p in body["spec"]["ports"]]
    assert all(30000 <= p <= 32767 for p in ports) and len(set(ports)) == 2
    assert body["spec"]["externalTrafficPolicy"] == "Cluster"
    taken = ports[0]
    status, body = await api.post(
        SVC, service("np2", type="NodePort", ports=[{"port": 80, "nodePort": taken}])
    )
    assert status == 422
    assert body["message"] == (
        f'Service "np2" is invalid: spec.ports[0].nodePort: Invalid value: {taken}: '
        "provided port is already allocated"
    )
    status, body = await api.post(
        SVC, service("np3", type="NodePort", ports=[{"port": 80, "nodePort": 20000}])
    )
    assert status == 422
    assert body["message"].endswith(
        "provided port is not in the valid range. The range of valid ports is 30000-32767"
    )
    # the same port number under TCP and UDP shares one node port
    status, body = await api.post(
        SVC,
        service(
            "dns",
            type="NodePort",
            ports=[
                {"name": "tcp", "port": 53, "protocol": "TCP"},
                {"name": "udp", "port": 53, "protocol": "UDP"},
            ],
        ),
    )
    assert status == 201, body
    assert body["spec"]["ports"][0]["nodePort"] == body["spec"]["ports"][1]["nodePort"]
    # NodePort -> ClusterIP drops the node ports; they are free again
    status, body = await api.patch(f"{SVC}/np", {"spec": {"type": "ClusterIP"}})
    assert status == 200, body
    assert all("nodePort" not in p for p in body["spec"]["ports"])
    assert "externalTrafficPolicy" not in body["spec"]
    status, body = await api.post(
        SVC, service("np4", type="NodePort", ports=[{"port": 80, "nodePort": taken}])
    )
    assert status == 201, body


async def test_load_balancer_local_gets_a_health_check_node_port(api: Api) -> None:
    status, body = await api.post(
        SVC, service("lb", type="LoadBalancer", externalTrafficPolicy="Local")
    )
    assert status == 201, body
    spec = body["spec"]
    assert 30000 <= spec["healthCheckNodePort"] <= 32767
    assert spec["healthCheckNodePort"] != spec["ports"][0]["nodePort"]
    assert spec["allocateLoadBalancerNodePorts"] is True
    status, body = await api.post(
        SVC, service("lb2", type="LoadBalancer", allocateLoadBalancerNodePorts=False)
    )
    assert status == 201, body
    assert "nodePort" not in body["spec"]["ports"][0]
    # Local -> Cluster gives the health check port up
    status, body = await api.patch(f"{SVC}/lb", {"spec": {"externalTrafficPolicy": "Cluster"}})
    assert status == 200, body
    assert "healthCheckNodePort" not in body["spec"]


async def test_allocations_are_rebuilt_from_a_reopened_store(tmp_path: Path) -> None:
    url = f"sqlite:{tmp_path / 'db.sqlite'}"
    store = open_store(url)
    server = ApiServer(store)
    services = server.registry.get("", "services")
    assert services is not None
    target = Target(services, "v1", "default")
    server.api.create(target, service("keep", clusterIP="10.100.0.1"), {})
    created = server.api.create(target, service("np", type="NodePort"), {}).body
    node_port = created["spec"]["ports"][0]["nodePort"]
    store.close()
    store = open_store(url)
    try:
        again = ApiServer(store)
        with pytest.raises(ApiError, match="provided IP is already allocated"):
            again.api.create(target, service("other", clusterIP="10.100.0.1"), {})
        body = service("np2", type="NodePort", ports=[{"port": 80, "nodePort": node_port}])
        with pytest.raises(ApiError, match="provided port is already allocated"):
            again.api.create(target, body, {})
    finally:
        store.close()


def test_a_configured_range() -> None:
    server = ApiServer(
        open_store("memory"),
        service_cluster_ip_range="172.30.0.0/24",
        service_node_port_range="31000-31010",
    )
    services = server.registry.get("", "services")
    assert services is not None
    target = Target(services, "v1", "default")
    body = server.api.create(target, service("a", type="NodePort"), {}).body
    assert ipaddress.ip_address(body["spec"]["clusterIP"]) in ipaddress.ip_network("172.30.0.0/24")
    assert 31000 <= body["spec"]["ports"][0]["nodePort"] <= 31010
    with pytest.raises(ApiError, match="does not match the current range"):
        server.api.create(target, service("b", clusterIP="10.96.0.10"), {})
    with pytest.raises(ValueError, match="not a CIDR"):
        ApiServer(open_store("memory"), service_cluster_ip_range="10.96.0.0/33")
    with pytest.raises(ValueError, match="unable to parse port range"):
        ServiceNetwork.parse(node_port_range="32767-30000")


# -- default/kubernetes ----------------------------------------------------------------


async def test_the_kubernetes_service_and_its_endpoints(aserver: EmbeddedServer, api: Api) -> None:
    status, body = await api.get(f"{SVC}/kubernetes")
    assert status == 200, body
    assert body["metadata"]["labels"] == {"component": "apiserver", "provider": "kubernetes"}
    spec = body["spec"]
    assert spec["clusterIP"] == "10.96.0.1" and spec["clusterIPs"] == ["10.96.0.1"]
    assert spec["ports"] == [
        {"name": "https", "protocol": "TCP", "port": 443, "targetPort": aserver.port}
    ]
    assert spec["type"] == "ClusterIP" and "selector" not in spec
    status, ep = await api.get("/api/v1/namespaces/default/endpoints/kubernetes")
    assert status == 200
    assert ep["metadata"]["labels"] == {"endpointslice.kubernetes.io/skip-mirror": "true"}
    assert ep["subsets"] == [
        {
            "addresses": [{"ip": "127.0.0.1"}],
            "ports": [{"name": "https", "port": aserver.port, "protocol": "TCP"}],
        }
    ]
    slices = "/apis/discovery.k8s.io/v1/namespaces/default/endpointslices"
    status, es = await api.get(f"{slices}/kubernetes")
    assert status == 200
    assert es["metadata"]["labels"] == {"kubernetes.io/service-name": "kubernetes"}
    assert es["addressType"] == "IPv4"
    assert es["endpoints"] == [{"addresses": ["127.0.0.1"], "conditions": {"ready": True}}]
    assert es["ports"] == [{"name": "https", "protocol": "TCP", "port": aserver.port}]
    # the first address is taken
    status, body = await api.post(SVC, service("x", clusterIP="10.96.0.1"))
    assert status == 422 and "already allocated" in body["message"]
    # deleted, it comes back (as kube's reconcilers put it back)
    for path in (f"{SVC}/kubernetes", "/api/v1/namespaces/default/endpoints/kubernetes"):
        status, _ = await api.delete(path)
        assert status == 200
    for _ in range(100):
        s1, _ = await api.get(f"{SVC}/kubernetes")
        s2, _ = await api.get("/api/v1/namespaces/default/endpoints/kubernetes")
        if s1 == s2 == 200:
            break
        await asyncio.sleep(0.02)
    assert (s1, s2) == (200, 200)
    status, body = await api.get(f"{SVC}/kubernetes")
    assert body["spec"]["clusterIP"] == "10.96.0.1"


def test_advertise_creates_and_corrects_it() -> None:
    server = ApiServer(open_store("memory"), advertise_address="192.0.2.7", advertise_port=6443)
    services = server.registry.get("", "services")
    assert services is not None
    target = Target(services, "v1", "default", "kubernetes")
    body = server.api.get(target, {}).body
    assert body["spec"]["ports"][0]["targetPort"] == 6443
    server.advertise("192.0.2.7", 7443)
    body = server.api.get(target, {}).body
    assert body["spec"]["ports"][0]["targetPort"] == 7443
    endpoints = server.registry.get("", "endpoints")
    assert endpoints is not None
    ep = server.api.get(Target(endpoints, "v1", "default", "kubernetes"), {}).body
    assert ep["subsets"][0]["addresses"] == [{"ip": "192.0.2.7"}]
    assert ep["subsets"][0]["ports"][0]["port"] == 7443


async def test_a_service_name_is_an_rfc_1035_label(api: Api) -> None:
    """``ValidateServiceName``: a name starting with a digit is refused (a Pod's is not)."""
    body = {
        "apiVersion": "v1",
        "kind": "Service",
        "metadata": {"name": "1web"},
        "spec": {"ports": [{"port": 80}]},
    }
    status, out = await api.post("/api/v1/namespaces/default/services", body)
    assert status == 422, out
    assert out["details"]["causes"][0]["field"] == "metadata.name"
    assert "a DNS-1035 label must consist of lower case alphanumeric characters" in out["message"]
