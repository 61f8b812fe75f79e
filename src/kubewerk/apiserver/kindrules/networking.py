"""networking.k8s.io/v1 Ingress, IngressClass, NetworkPolicy and discovery.k8s.io/v1
EndpointSlice: defaults (``pkg/apis/networking/v1/defaults.go``,
``pkg/apis/discovery/v1/defaults.go``) and validation (``pkg/apis/networking/validation``,
``pkg/apis/discovery/validation``)."""

from __future__ import annotations

import ipaddress
from typing import Any, Final

from kubewerk.apiserver.kindrules.common import (
    JSON,
    Errs,
    KindRules,
    check_dns_label,
    check_dns_subdomain,
    check_immutable,
    check_label_selector,
    check_protocol,
    ensure,
    int_of,
    items,
    obj,
    port_name_errors,
    port_num_errors,
    str_of,
)
from kubewerk.core.errors import FieldError
from kubewerk.core.validation import is_dns1035_label, is_dns1123_subdomain

PATH_TYPES: Final = ("Exact", "ImplementationSpecific", "Prefix")
POLICY_TYPES: Final = ("Ingress", "Egress")
ADDRESS_TYPES: Final = ("FQDN", "IPv4", "IPv6")
INVALID_CIDR: Final = "must be a valid CIDR value, (e.g. 10.9.8.0/24 or 2001:db8::/64)"
_BAD_SEQUENCES: Final = ("//", "/./", "/../", "%2f", "%2F")
_BAD_SUFFIXES: Final = ("/..", "/.")


# -- Ingress -------------------------------------------------------------------


def _check_backend(errs: Errs, backend: JSON, path: str) -> None:
    """``validateIngressBackend``."""
    resource, service = backend.get("resource"), backend.get("service")
    if resource is not None and service is not None:
        errs.append(FieldError.invalid(path, "", "cannot set both resource and service backends"))
        return
    if isinstance(resource, dict):
        for key in ("kind", "name"):
            if not str_of(resource, key):
                errs.append(FieldError.required(f"{path}.resource.{key}"))
        return
    if not isinstance(service, dict):
        errs.append(FieldError.invalid(path, "", "resource or service backend is required"))
        return
    name = str_of(service, "name")
    if not name:
        errs.append(FieldError.required(f"{path}.service.name"))
    else:
        for msg in is_dns1035_label(name):
            errs.append(FieldError.invalid(f"{path}.service.name", name, msg))
    port = obj(service, "port")
    port_name, number = str_of(port, "name"), int_of(port, "number")
    if port_name and number:
        errs.append(FieldError.invalid(path, "", "cannot set both port name & port number"))
    elif port_name:
        for msg in port_name_errors(port_name):
            errs.append(FieldError.invalid(f"{path}.service.port.name", port_name, msg))
    elif number:
        for msg in port_num_errors(number):
            errs.append(FieldError.invalid(f"{path}.service.port.number", number, msg))
    else:
        errs.append(FieldError.required(path, "port name or number is required"))


def _check_http_path(errs: Errs, rule_path: JSON, path: str) -> None:
    """``validateHTTPIngressPath``."""
    path_type = rule_path.get("pathType")
    text = str_of(rule_path, "path")
    if path_type is None:
        errs.append(FieldError.required(f"{path}.pathType", "pathType must be specified"))
        return
    if path_type in ("Exact", "Prefix"):
        if not text.startswith("/"):
            errs.append(FieldError.invalid(f"{path}.path", text, "must be an absolute path"))
        if text:
            for seq in _BAD_SEQUENCES:
                if seq in text:
                    errs.append(
                        FieldError.invalid(f"{path}.path", text, f"must not contain '{seq}'")
                    )
            for suffix in _BAD_SUFFIXES:
                if text.endswith(suffix):
                    errs.append(
                        FieldError.invalid(f"{path}.path", text, f"cannot end with '{suffix}'")
                    )
    elif path_type == "ImplementationSpecific":
        if text and not text.startswith("/"):
            errs.append(FieldError.invalid(f"{path}.path", text, "must be an absolute path"))
    else:
        errs.append(FieldError.not_supported(f"{path}.pathType", path_type, PATH_TYPES))
    _check_backend(errs, obj(rule_path, "backend"), f"{path}.backend")


def _is_ip(text: str) -> bool:
    try:
        ipaddress.ip_address(text)
    except ValueError:
        return False
    return True


def validate_ingress(new: JSON, old: JSON | None) -> list[FieldError]:
    """``ValidateIngressSpec``: rules or a default backend, hosts, paths, backends."""
    errs: Errs = []
    spec = obj(new, "spec")
    rules = items(spec, "rules")
    if not rules and spec.get("defaultBackend") is None:
        errs.append(
            FieldError.invalid(
                "spec", spec.get("rules"), "either `defaultBackend` or `rules` must be specified"
            )
        )
    if isinstance(spec.get("defaultBackend"), dict):
        _check_backend(errs, spec["defaultBackend"], "spec.defaultBackend")
    for i, rule in enumerate(rules):
        rpath = f"spec.rules[{i}]"
        host = str_of(rule, "host")
        if host:
            if _is_ip(host):
                errs.append(
                    FieldError.invalid(
                        f"{rpath}.host", host, "must be a DNS name, not an IP address"
                    )
                )
            check = host[2:] if host.startswith("*.") else host
            for msg in is_dns1123_subdomain(check):
                errs.append(FieldError.invalid(f"{rpath}.host", host, msg))
        http = rule.get("http")
        if isinstance(http, dict):
            paths = items(http, "paths")
            if not paths:
                errs.append(FieldError.required(f"{rpath}.http.paths"))
            for j, rule_path in enumerate(paths):
                _check_http_path(errs, rule_path, f"{rpath}.http.paths[{j}]")
    class_name = spec.get("ingressClassName")
    if isinstance(class_name, str):
        check_dns_subdomain(errs, class_name, "spec.ingressClassName")
    return errs


def default_ingress_class(ic: JSON) -> None:
    """``SetDefaults_IngressClass``: parameters' scope Cluster when unset."""
    params = obj(ic, "spec").get("parameters")
    if isinstance(params, dict) and params.get("scope") is None:
        params["scope"] = "Cluster"


def validate_ingress_class(new: JSON, old: JSON | None) -> list[FieldError]:
    """``ValidateIngressClass`` / ``...Update`` (the controller is immutable)."""
    errs: Errs = []
    spec = obj(new, "spec")
    controller = str_of(spec, "controller")
    if not controller:
        errs.append(FieldError.required("spec.controller"))
    elif len(controller) > 250:
        errs.append(FieldError.too_long("spec.controller", 250))
    params = spec.get("parameters")
    if isinstance(params, dict):
        for key in ("kind", "name"):
            if not str_of(params, key):
                errs.append(FieldError.required(f"spec.parameters.{key}"))
        scope = params.get("scope")
        if scope not in (None, "Cluster", "Namespace"):
            errs.append(
                FieldError.not_supported("spec.parameters.scope", scope, ("Cluster", "Namespace"))
            )
        if scope == "Namespace" and not params.get("namespace"):
            errs.append(
                FieldError.required(
                    "spec.parameters.namespace", "`parameters.scope` is set to 'Namespace'"
                )
            )
    if old is not None:
        check_immutable(errs, controller, str_of(obj(old, "spec"), "controller"), "spec.controller")
    return errs


# -- NetworkPolicy -------------------------------------------------------------


def default_network_policy(np: JSON) -> None:
    """``SetObjectDefaults_NetworkPolicy``: policyTypes (Ingress, plus Egress when there
    are egress rules), ports' protocol TCP."""
    spec = ensure(np, "spec")
    if not spec.get("policyTypes"):
        spec["policyTypes"] = ["Ingress"] + (["Egress"] if spec.get("egress") else [])
    for key in ("ingress", "egress"):
        for rule in items(spec, key):
            for port in items(rule, "ports"):
                if port.get("protocol") is None:
                    port["protocol"] = "TCP"


def _check_np_port(errs: Errs, port: JSON, path: str) -> None:
    protocol = port.get("protocol")
    if protocol is not None and protocol not in ("TCP", "UDP", "SCTP"):
        errs.append(FieldError.not_supported(f"{path}.protocol", protocol, ("TCP", "UDP", "SCTP")))
    number, end = port.get("port"), port.get("endPort")
    if isinstance(number, int) and not isinstance(number, bool):
        for msg in port_num_errors(number):
            errs.append(FieldError.invalid(f"{path}.port", number, msg))
        if isinstance(end, int):
            if end < number:
                errs.append(
                    FieldError.invalid(
                        f"{path}.endPort", number, "must be greater than or equal to `port`"
                    )
                )
            for msg in port_num_errors(end):
                errs.append(FieldError.invalid(f"{path}.endPort", end, msg))
    elif isinstance(number, str):
        if end is not None:
            errs.append(
                FieldError.invalid(
                    f"{path}.endPort", end, "may not be specified when `port` is non-numeric"
                )
            )
        for msg in port_name_errors(number):
            errs.append(FieldError.invalid(f"{path}.port", number, msg))
    elif end is not None:
        errs.append(
            FieldError.invalid(
                f"{path}.endPort", end, "may not be specified when `port` is not specified"
            )
        )


def _network(text: str) -> Any:
    try:
        return ipaddress.ip_network(text, strict=False)
    except ValueError:
        return None


def _check_peer(errs: Errs, peer: JSON, path: str) -> None:
    count = 0
    for key in ("podSelector", "namespaceSelector"):
        if peer.get(key) is not None:
            count += 1
            check_label_selector(errs, peer[key], f"{path}.{key}")
    block = peer.get("ipBlock")
    if isinstance(block, dict):
        count += 1
        cidr = str_of(block, "cidr")
        net = _network(cidr) if cidr else None
        if not cidr:
            errs.append(FieldError.required(f"{path}.ipBlock.cidr"))
        elif net is None:
            errs.append(FieldError.invalid(f"{path}.ipBlock.cidr", cidr, INVALID_CIDR))
        for i, text in enumerate(block.get("except") or []):
            except_net = _network(text) if isinstance(text, str) else None
            epath = f"{path}.ipBlock.except[{i}]"
            if except_net is None:
                errs.append(FieldError.invalid(epath, text, INVALID_CIDR))
            elif net is not None and (
                except_net.version != net.version
                or not except_net.subnet_of(net)
                or except_net.prefixlen <= net.prefixlen
            ):
                errs.append(
                    FieldError.invalid(epath, str(except_net), "must be a strict subset of `cidr`")
                )
    if count == 0:
        errs.append(FieldError.required(path, "must specify a peer"))
    elif count > 1 and block is not None:
        errs.append(FieldError.forbidden(path, "may not specify both ipBlock and another peer"))


def validate_network_policy(new: JSON, old: JSON | None) -> list[FieldError]:
    """``ValidateNetworkPolicySpec``."""
    errs: Errs = []
    spec = obj(new, "spec")
    check_label_selector(errs, spec.get("podSelector"), "spec.podSelector")
    for key, peers in (("ingress", "from"), ("egress", "to")):
        for i, rule in enumerate(items(spec, key)):
            for j, port in enumerate(items(rule, "ports")):
                _check_np_port(errs, port, f"spec.{key}[{i}].ports[{j}]")
            for j, peer in enumerate(items(rule, peers)):
                _check_peer(errs, peer, f"spec.{key}[{i}].{peers}[{j}]")
    types = spec.get("policyTypes") or []
    if len(types) > 2:
        errs.append(
            FieldError.invalid(
                "spec.policyTypes", types, "may not specify more than two policyTypes"
            )
        )
        return errs
    for i, kind in enumerate(types):
        if kind not in POLICY_TYPES:
            errs.append(FieldError.not_supported(f"spec.policyTypes[{i}]", kind, POLICY_TYPES))
    return errs


# -- EndpointSlice -------------------------------------------------------------


def default_endpoint_slice(es: JSON) -> None:
    """``SetObjectDefaults_EndpointSlice``: ports' name "" and protocol TCP."""
    for port in items(es, "ports"):
        if port.get("name") is None:
            port["name"] = ""
        if port.get("protocol") is None:
            port["protocol"] = "TCP"


def _address_errors(kind: str, address: str) -> list[str]:
    if kind == "IPv4":
        try:
            ipaddress.IPv4Address(address)
        except ValueError:
            return ["must be a valid IPv4 address"]
        return []
    if kind == "IPv6":
        try:
            ipaddress.IPv6Address(address)
        except ValueError:
            return ["must be a valid IPv6 address"]
        return []
    return is_dns1123_subdomain(address)


def validate_endpoint_slice(new: JSON, old: JSON | None) -> list[FieldError]:
    """``ValidateEndpointSlice`` / ``...Update`` (addressType is immutable)."""
    errs: Errs = []
    kind = new.get("addressType")
    if kind not in ADDRESS_TYPES:
        errs.append(FieldError.not_supported("addressType", kind or "", ADDRESS_TYPES))
    for i, endpoint in enumerate(items(new, "endpoints")):
        addresses = endpoint.get("addresses") or []
        apath = f"endpoints[{i}].addresses"
        if not addresses:
            errs.append(FieldError.required(apath, "must contain at least 1 address"))
        elif len(addresses) > 100:
            errs.append(FieldError.too_many(apath, len(addresses), 100))
        elif isinstance(kind, str) and kind in ADDRESS_TYPES:
            for j, address in enumerate(addresses):
                for msg in _address_errors(kind, str(address)):
                    errs.append(FieldError.invalid(f"{apath}[{j}]", address, msg))
    names: set[str] = set()
    for i, port in enumerate(items(new, "ports")):
        path = f"ports[{i}]"
        name = str_of(port, "name")
        if name:
            check_dns_label(errs, name, f"{path}.name")
        if name in names:
            errs.append(FieldError.duplicate(f"{path}.name", name))
        names.add(name)
        check_protocol(errs, port.get("protocol"), f"{path}.protocol")
        number = port.get("port")
        if isinstance(number, int) and not isinstance(number, bool):
            for msg in port_num_errors(number):
                errs.append(FieldError.invalid(f"{path}.port", number, msg))
    if old is not None:
        check_immutable(errs, kind, old.get("addressType"), "addressType")
    return errs


RULES: Final[dict[tuple[str, str], KindRules]] = {
    ("networking.k8s.io/v1", "Ingress"): KindRules(None, validate_ingress),
    ("networking.k8s.io/v1", "IngressClass"): KindRules(
        default_ingress_class, validate_ingress_class
    ),
    ("networking.k8s.io/v1", "NetworkPolicy"): KindRules(
        default_network_policy, validate_network_policy
    ),
    ("discovery.k8s.io/v1", "EndpointSlice"): KindRules(
        default_endpoint_slice, validate_endpoint_slice
    ),
}
