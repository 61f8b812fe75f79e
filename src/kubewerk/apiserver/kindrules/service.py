"""v1 Service and Endpoints: defaults (``SetDefaults_Service``, ``SetDefaults_Endpoints``)
and validation (``ValidateService``, ``ValidateServiceUpdate``, ``ValidateEndpoints``),
plus the pure part of what the Service REST storage sets once it has allocated an
address (:func:`set_cluster_ips`)."""

from __future__ import annotations

import ipaddress
from typing import Any, Final

from kubewerk.apiserver.kindrules.common import (
    JSON,
    Errs,
    KindRules,
    check_dns_label,
    check_dns_subdomain,
    check_enum,
    check_port_num_or_name,
    check_protocol,
    check_qualified_name,
    ensure,
    int_of,
    items,
    obj,
    port_num_errors,
    str_map,
    str_of,
)
from kubewerk.core.errors import FieldError
from kubewerk.core.validation import validate_labels

SERVICE_TYPES: Final = ("ClusterIP", "ExternalName", "LoadBalancer", "NodePort")
SESSION_AFFINITIES: Final = ("ClientIP", "None")
TRAFFIC_POLICIES: Final = ("Cluster", "Local")
IP_FAMILY_POLICIES: Final = ("SingleStack", "PreferDualStack", "RequireDualStack")
DEFAULT_CLIENT_IP_TIMEOUT: Final = 10800
INVALID_IP: Final = "must be a valid IP address, (e.g. 10.9.8.7 or 2001:db8::ffff)"


def externally_accessible(svc: JSON) -> bool:
    """``service.ExternallyAccessible``: LoadBalancer, NodePort, or ClusterIP with
    external IPs."""
    spec = obj(svc, "spec")
    kind = spec.get("type")
    return kind in ("LoadBalancer", "NodePort") or (
        kind == "ClusterIP" and bool(spec.get("externalIPs"))
    )


def default_service(svc: JSON) -> None:
    """``SetObjectDefaults_Service``."""
    spec = ensure(svc, "spec")
    if not spec.get("sessionAffinity"):
        spec["sessionAffinity"] = "None"
    if spec["sessionAffinity"] == "None":
        spec.pop("sessionAffinityConfig", None)
    elif spec["sessionAffinity"] == "ClientIP":
        client_ip = obj(obj(spec, "sessionAffinityConfig"), "clientIP")
        if client_ip.get("timeoutSeconds") is None:
            spec["sessionAffinityConfig"] = {
                "clientIP": {"timeoutSeconds": DEFAULT_CLIENT_IP_TIMEOUT}
            }
    if not spec.get("type"):
        spec["type"] = "ClusterIP"
    for port in items(spec, "ports"):
        if not port.get("protocol"):
            port["protocol"] = "TCP"
        if port.get("targetPort") in (None, 0, ""):
            port["targetPort"] = port.get("port", 0)
    if externally_accessible(svc) and not spec.get("externalTrafficPolicy"):
        spec["externalTrafficPolicy"] = "Cluster"
    if spec.get("internalTrafficPolicy") is None and spec["type"] in (
        "NodePort",
        "LoadBalancer",
        "ClusterIP",
    ):
        spec["internalTrafficPolicy"] = "Cluster"
    if spec["type"] == "LoadBalancer":
        if spec.get("allocateLoadBalancerNodePorts") is None:
            spec["allocateLoadBalancerNodePorts"] = True
        for ing in items(obj(svc.get("status"), "loadBalancer"), "ingress"):
            if ing.get("ip") and ing.get("ipMode") is None:
                ing["ipMode"] = "VIP"


def set_cluster_ips(svc: JSON, allocated: str | None) -> None:
    """What the Service REST sets on create in a single-stack IPv4 cluster once
    ``allocated`` (None for headless and ExternalName Services) is known:
    ``clusterIP``/``clusterIPs``, ``ipFamilies`` and ``ipFamilyPolicy`` (SingleStack;
    RequireDualStack for a headless Service without a selector, as kube picks)."""
    spec = ensure(svc, "spec")
    if spec.get("type") == "ExternalName":
        return
    headless = spec.get("clusterIP") == "None"
    if headless:
        spec["clusterIPs"] = ["None"]
    elif allocated is not None:
        spec["clusterIP"] = allocated
        spec["clusterIPs"] = [allocated]
    if not spec.get("ipFamilies"):
        spec["ipFamilies"] = ["IPv4"]
    if not spec.get("ipFamilyPolicy"):
        no_selector = not spec.get("selector")
        spec["ipFamilyPolicy"] = "RequireDualStack" if headless and no_selector else "SingleStack"


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def _check_service_port(
    errs: Errs, port: JSON, path: str, require_name: bool, names: set[str]
) -> None:
    name = str_of(port, "name")
    if require_name and not name:
        errs.append(FieldError.required(f"{path}.name"))
    elif name:
        check_dns_label(errs, name, f"{path}.name")
        if name in names:
            errs.append(FieldError.duplicate(f"{path}.name", name))
        names.add(name)
    number = int_of(port, "port")
    for msg in port_num_errors(number):
        errs.append(FieldError.invalid(f"{path}.port", number, msg))
    check_protocol(errs, port.get("protocol"), f"{path}.protocol")
    check_port_num_or_name(errs, port.get("targetPort"), f"{path}.targetPort")
    app_protocol = port.get("appProtocol")
    if isinstance(app_protocol, str):
        check_qualified_name(errs, app_protocol, f"{path}.appProtocol")


def validate_service(new: JSON, old: JSON | None) -> list[FieldError]:
    """``ValidateService`` / ``ValidateServiceUpdate``: ports, types, affinity, traffic
    policies, cluster IPs (``may not change once set``)."""
    errs: Errs = []
    spec = obj(new, "spec")
    kind = spec.get("type")
    ports = items(spec, "ports")
    headless = spec.get("clusterIP") == "None"
    if not ports and not headless and kind != "ExternalName":
        errs.append(FieldError.required("spec.ports"))
    if kind == "ExternalName":
        if spec.get("clusterIPs"):
            errs.append(
                FieldError.forbidden("spec.clusterIPs", "may not be set for ExternalName services")
            )
        cname = str_of(spec, "externalName").removesuffix(".")
        if cname:
            check_dns_subdomain(errs, cname, "spec.externalName")
        else:
            errs.append(FieldError.required("spec.externalName"))
    names: set[str] = set()
    for i, port in enumerate(ports):
        _check_service_port(errs, port, f"spec.ports[{i}]", len(ports) > 1, names)
    selector = spec.get("selector")
    if (selector := str_map(selector)) is not None:
        errs.extend(validate_labels(selector, "spec.selector"))
    check_enum(errs, spec.get("sessionAffinity"), "spec.sessionAffinity", SESSION_AFFINITIES)
    cluster_ip = str_of(spec, "clusterIP")
    if cluster_ip and cluster_ip != "None" and not _is_ip(cluster_ip):
        errs.append(FieldError.invalid("spec.clusterIPs[0]", cluster_ip, INVALID_IP))
    for i, ip in enumerate(spec.get("externalIPs") or []):
        if isinstance(ip, str) and not _is_ip(ip):
            errs.append(FieldError.invalid(f"spec.externalIPs[{i}]", ip, INVALID_IP))
    check_enum(errs, kind, "spec.type", SERVICE_TYPES)
    if kind == "ClusterIP":
        for i, port in enumerate(ports):
            if int_of(port, "nodePort"):
                errs.append(
                    FieldError.forbidden(
                        f"spec.ports[{i}].nodePort", "may not be used when `type` is 'ClusterIP'"
                    )
                )
    seen: set[tuple[int, str]] = set()
    for i, port in enumerate(ports):
        key = (int_of(port, "port"), str_of(port, "protocol"))
        if key in seen:
            errs.append(
                FieldError.duplicate(f"spec.ports[{i}]", {"port": key[0], "protocol": key[1]})
            )
        seen.add(key)
    _check_traffic_policies(errs, new)
    ip_policy = spec.get("ipFamilyPolicy")
    if ip_policy is not None:
        check_enum(errs, ip_policy, "spec.ipFamilyPolicy", IP_FAMILY_POLICIES)
    if old is not None:
        _check_cluster_ip_update(errs, spec, obj(old, "spec"))
    return errs


def _check_traffic_policies(errs: Errs, svc: JSON) -> None:
    spec = obj(svc, "spec")
    policy = spec.get("externalTrafficPolicy")
    if not externally_accessible(svc):
        if policy:
            errs.append(
                FieldError.invalid(
                    "spec.externalTrafficPolicy",
                    policy,
                    "may only be set for externally-accessible services",
                )
            )
    else:
        check_enum(errs, policy, "spec.externalTrafficPolicy", TRAFFIC_POLICIES)
    internal = spec.get("internalTrafficPolicy")
    if internal is None:
        if spec.get("type") in ("ClusterIP", "NodePort", "LoadBalancer"):
            errs.append(FieldError.required("spec.internalTrafficPolicy"))
    elif internal not in TRAFFIC_POLICIES:
        errs.append(
            FieldError.not_supported("spec.internalTrafficPolicy", internal, TRAFFIC_POLICIES)
        )


def _check_cluster_ip_update(errs: Errs, spec: JSON, old_spec: JSON) -> None:
    old_ips = old_spec.get("clusterIPs") or []
    if spec.get("type") == "ExternalName" or old_spec.get("type") == "ExternalName":
        return
    if not old_ips:
        return
    new_ips: Any = spec.get("clusterIPs") or []
    if not new_ips:
        errs.append(
            FieldError.invalid("spec.clusterIPs[0]", new_ips, "primary clusterIP can not be unset")
        )
    elif new_ips[0] != old_ips[0]:
        errs.append(FieldError.invalid("spec.clusterIPs[0]", new_ips, "may not change once set"))


def default_endpoints(ep: JSON) -> None:
    """``SetObjectDefaults_Endpoints``: ports' protocol TCP."""
    for subset in items(ep, "subsets"):
        for port in items(subset, "ports"):
            if not port.get("protocol"):
                port["protocol"] = "TCP"


def validate_endpoints(new: JSON, old: JSON | None) -> list[FieldError]:
    """``ValidateEndpoints``: each subset has addresses, valid IPs and ports."""
    errs: Errs = []
    for i, subset in enumerate(items(new, "subsets")):
        path = f"subsets[{i}]"
        if not items(subset, "addresses") and not items(subset, "notReadyAddresses"):
            errs.append(
                FieldError.required(path, "must specify `addresses` or `notReadyAddresses`")
            )
        for key in ("addresses", "notReadyAddresses"):
            for j, addr in enumerate(items(subset, key)):
                ip = str_of(addr, "ip")
                if not _is_ip(ip):
                    errs.append(FieldError.invalid(f"{path}.{key}[{j}].ip", ip, INVALID_IP))
        ports = items(subset, "ports")
        names: set[str] = set()
        for j, port in enumerate(ports):
            ppath = f"{path}.ports[{j}]"
            name = str_of(port, "name")
            if len(ports) > 1 and not name:
                errs.append(FieldError.required(f"{ppath}.name"))
            elif name:
                check_dns_label(errs, name, f"{ppath}.name")
                if name in names:
                    errs.append(FieldError.duplicate(f"{ppath}.name", name))
                names.add(name)
            number = int_of(port, "port")
            for msg in port_num_errors(number):
                errs.append(FieldError.invalid(f"{ppath}.port", number, msg))
            check_protocol(errs, port.get("protocol"), f"{ppath}.protocol")
    return errs


RULES: Final[dict[tuple[str, str], KindRules]] = {
    ("v1", "Service"): KindRules(default_service, validate_service),
    ("v1", "Endpoints"): KindRules(default_endpoints, validate_endpoints),
}
