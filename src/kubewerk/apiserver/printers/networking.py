"""Printers of ``networking.k8s.io/v1`` (Ingress, IngressClass, NetworkPolicy) and
``discovery.k8s.io/v1`` EndpointSlice."""

from __future__ import annotations

from typing import Any, Final

from kubewerk.apiserver.printers.core import AGE, load_balancer_ingress
from kubewerk.apiserver.printers.format import (
    NONE,
    age,
    format_label_selector,
    list_with_more,
    obj_list,
    obj_map,
    obj_str,
)
from kubewerk.apiserver.printers.printer import JSON, Printer
from kubewerk.apiserver.strategy import PrinterColumn

INGRESS_COLUMNS: Final = (
    PrinterColumn(
        "Class",
        "string",
        "",
        "The name of the IngressClass resource that should be used for additional configuration",
    ),
    PrinterColumn(
        "Hosts",
        "string",
        "",
        "Hosts that incoming requests are matched against before the ingress rule",
    ),
    PrinterColumn(
        "Address",
        "string",
        "",
        "Address is a list containing ingress points for the load-balancer",
    ),
    PrinterColumn("Ports", "string", "", "Ports of TLS configurations that open"),
    AGE,
)


def ingress_hosts(rules: Any) -> str:
    """``formatHosts``: up to three rule hosts, `` + N more...`` counting every rule
    past the third (hosted or not), ``*`` when no rule names a host."""
    items = obj_list(rules)
    shown: list[str] = []
    limit = 3
    more = False
    for rule in items:
        if len(shown) == limit:
            more = True
        host = obj_str(obj_map(rule).get("host"))
        if not more and host:
            shown.append(host)
    if not shown:
        return "*"
    text = ",".join(shown)
    if more:
        return f"{text} + {len(items) - limit} more..."
    return text


def ingress_cells(obj: JSON, now: float) -> list[Any]:
    """``printIngress``: CLASS, HOSTS, ADDRESS, PORTS (``80``, or ``80, 443`` with TLS),
    AGE."""
    spec = obj_map(obj.get("spec"))
    class_name = spec.get("ingressClassName")
    return [
        class_name if isinstance(class_name, str) else NONE,
        ingress_hosts(spec.get("rules")),
        load_balancer_ingress(obj_map(obj.get("status")).get("loadBalancer")),
        "80, 443" if obj_list(spec.get("tls")) else "80",
        age(obj, now),
    ]


INGRESS_CLASS_COLUMNS: Final = (
    PrinterColumn(
        "Controller", "string", "", "Controller that is responsible for handling this class"
    ),
    PrinterColumn(
        "Parameters", "string", "", "A reference to a resource with additional parameters"
    ),
    AGE,
)


def ingress_class_cells(obj: JSON, now: float) -> list[Any]:
    """``printIngressClass``: CONTROLLER, PARAMETERS (``Kind.apiGroup/name``), AGE."""
    spec = obj_map(obj.get("spec"))
    parameters = NONE
    params = spec.get("parameters")
    if isinstance(params, dict):
        parameters = obj_str(params.get("kind"))
        if isinstance(params.get("apiGroup"), str):
            parameters += "." + params["apiGroup"]
        parameters += "/" + obj_str(params.get("name"))
    return [obj_str(spec.get("controller")), parameters, age(obj, now)]


NETWORK_POLICY_COLUMNS: Final = (PrinterColumn("Pod-Selector", "string", ""), AGE)


def network_policy_cells(obj: JSON, now: float) -> list[Any]:
    """``printNetworkPolicy``: POD-SELECTOR, AGE."""
    selector = obj_map(obj.get("spec")).get("podSelector")
    return [format_label_selector(selector if isinstance(selector, dict) else {}), age(obj, now)]


ENDPOINT_SLICE_COLUMNS: Final = (
    PrinterColumn("AddressType", "string", ""),
    PrinterColumn("Ports", "string", ""),
    PrinterColumn("Endpoints", "string", ""),
    AGE,
)


def endpoint_slice_ports(ports: Any) -> str:
    """``formatDiscoveryPorts``: up to three port numbers (the name for a port
    without a number, ``*`` for neither), `` + N more...``, ``<unset>`` for none."""
    items = obj_list(ports)
    shown: list[str] = []
    for port in items[:3]:
        port = obj_map(port)
        number = port.get("port")
        if isinstance(number, int) and not isinstance(number, bool):
            shown.append(str(number))
        elif isinstance(port.get("name"), str):
            shown.append(port["name"])
        else:
            shown.append("*")
    return list_with_more(shown, len(items), 3)


def endpoint_slice_endpoints(endpoints: Any) -> str:
    """``formatDiscoveryEndpoints``: up to three addresses over all endpoints."""
    addresses = [
        obj_str(a) for e in obj_list(endpoints) for a in obj_list(obj_map(e).get("addresses"))
    ]
    return list_with_more(addresses[:3], len(addresses), 3)


def endpoint_slice_cells(obj: JSON, now: float) -> list[Any]:
    """``printEndpointSlice``: ADDRESSTYPE, PORTS, ENDPOINTS, AGE."""
    return [
        obj_str(obj.get("addressType")),
        endpoint_slice_ports(obj.get("ports")),
        endpoint_slice_endpoints(obj.get("endpoints")),
        age(obj, now),
    ]


def printers() -> dict[str, Printer]:
    """The networking and discovery kinds' printers."""
    return {
        "networking.k8s.io/v1/Ingress": Printer.of(INGRESS_COLUMNS, ingress_cells),
        "networking.k8s.io/v1/IngressClass": Printer.of(INGRESS_CLASS_COLUMNS, ingress_class_cells),
        "networking.k8s.io/v1/NetworkPolicy": Printer.of(
            NETWORK_POLICY_COLUMNS, network_policy_cells
        ),
        "discovery.k8s.io/v1/EndpointSlice": Printer.of(
            ENDPOINT_SLICE_COLUMNS, endpoint_slice_cells
        ),
    }
