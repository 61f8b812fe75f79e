"""``v1`` Service: cluster IPs and node ports allocated as kube-apiserver's Service storage does.

kube-apiserver allocates a Service's addresses in its REST storage, after the request is
decoded and defaulted and before it is validated (``pkg/registry/core/service/storage``:
``beginCreate``/``beginUpdate`` with ``Allocators``; the strategy's
``dropTypeDependentFields`` on update). ``ServiceStrategy.allocate`` does the same:

* the IP family fields are filled as on a single-stack cluster of the range's family
  (``initIPFamilyFields``): ``ipFamilyPolicy`` SingleStack (an update keeps the old one; a
  headless Service without a selector gets RequireDualStack and both families),
  ``ipFamilies`` from the cluster IPs or the cluster's family; a family, an IP of another
  family or RequireDualStack on a headful Service is refused as kube refuses it;
* ``clusterIP``/``clusterIPs`` (kept in step as ``normalizeClusterIPs`` does): a requested
  address is reserved or refused (``failed to allocate IP X: provided IP is already
  allocated``, ``... the provided network does not match the current range``, ``...
  provided IP X is not in the valid range``); none requested: a free one, chosen at
  random from the upper part of the range first (KEP-3070's offset); a dry run answers
  the range's network address without reserving anything, as kube's dry-run allocator;
  ``None`` (headless) and ExternalName get none;
* node ports for NodePort and LoadBalancer (unless ``allocateLoadBalancerNodePorts`` is
  false) from the node port range, random from its upper part first; the same port
  number under two protocols shares one node port; a requested port is refused when
  another Service holds it (``provided port is already allocated``) or it is outside the
  range; ``healthCheckNodePort`` for a LoadBalancer with ``externalTrafficPolicy: Local``;
* an update keeps what the client left out (``patchAllocatedValues``), and a type change
  drops what the new type does not use when the client did not change it
  (``dropTypeDependentFields``): ClusterIP → ExternalName gives the address back,
  NodePort → ClusterIP the node ports.

What is reserved is exactly what stored Services hold: ``ServiceAllocator`` follows the
store's events (a write that is refused or fails reserves nothing, a deleted Service —
however deleted — frees its addresses) and is rebuilt from the stored Services when a
server opens an existing store.
"""

from __future__ import annotations

import ipaddress
import random
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any, ClassVar

from kubewerk.apiserver.kinds.typed import TypedKindStrategy
from kubewerk.apiserver.storage.base import Event, Store
from kubewerk.core.errors import ApiError, FieldError
from kubewerk.core.validation import NameRule

JSON = dict[str, Any]
IPNetwork = ipaddress.IPv4Network | ipaddress.IPv6Network

DEFAULT_SERVICE_CLUSTER_IP_RANGE = "10.96.0.0/12"
"""kube-apiserver's ``--service-cluster-ip-range`` default."""
DEFAULT_SERVICE_NODE_PORT_RANGE = "30000-32767"
"""kube-apiserver's ``--service-node-port-range`` default."""
SERVICES_PREFIX = "/core/services/"

ALREADY_ALLOCATED_IP = "provided IP is already allocated"
MISMATCHED_NETWORK = "the provided network does not match the current range"
ALREADY_ALLOCATED_PORT = "provided port is already allocated"


def parse_cluster_ip_range(text: str) -> IPNetwork:
    """``--service-cluster-ip-range``: one CIDR (IPv6 at most a /64 as kube requires, and
    large enough to hold an address besides the network and broadcast ones). Raises
    ``ValueError`` saying what is wrong."""
    try:
        network = ipaddress.ip_network(text.strip(), strict=True)
    except ValueError as exc:
        raise ValueError(f"service cluster IP range {text!r} is not a CIDR: {exc}") from None
    if network.version == 6 and network.prefixlen < 64:
        raise ValueError(
            f"shortest allowed prefix length for service CIDR is 64, got {network.prefixlen}"
        )
    if network.num_addresses < 4:
        raise ValueError(f"service cluster IP range {text!r} is too small")
    return network


def parse_node_port_range(text: str) -> tuple[int, int]:
    """``--service-node-port-range``: ``BASE-MAX`` (both included) or a single port."""
    parts = text.strip().split("-")
    try:
        if len(parts) == 1:
            low = high = int(parts[0])
        elif len(parts) == 2:
            low, high = int(parts[0]), int(parts[1])
        else:
            raise ValueError
    except ValueError:
        raise ValueError(f"unable to parse port range: {text}") from None
    if not (0 < low <= high <= 65535):
        raise ValueError(f"unable to parse port range: {text}")
    return low, high


def _range_offset(size: int, minimum: int, maximum: int, step: int) -> int:
    """KEP-3070/3668's lower static band: ``min(max(min, size/step), max)``, none for
    ranges of at most ``minimum`` values."""
    if size <= minimum:
        return 0
    return min(max(minimum, size // step), maximum)


@dataclass(frozen=True)
class ServiceNetwork:
    """The address ranges a server allocates from."""

    cluster_ip_range: IPNetwork
    node_port_range: tuple[int, int]

    @classmethod
    def parse(
        cls,
        cluster_ip_range: str = DEFAULT_SERVICE_CLUSTER_IP_RANGE,
        node_port_range: str = DEFAULT_SERVICE_NODE_PORT_RANGE,
    ) -> ServiceNetwork:
        """Both ranges from their flag forms; ``ValueError`` for a malformed one."""
        return cls(parse_cluster_ip_range(cluster_ip_range), parse_node_port_range(node_port_range))

    @property
    def family(self) -> str:
        """``IPv4`` or ``IPv6``: the cluster's (only) service IP family."""
        return "IPv4" if self.cluster_ip_range.version == 4 else "IPv6"

    @property
    def first_ip(self) -> str:
        """The range's first usable address (the ``default/kubernetes`` Service's)."""
        return str(self.cluster_ip_range.network_address + 1)

    @property
    def node_port_text(self) -> str:
        low, high = self.node_port_range
        return f"{low}-{high}"


def _family_of(ip: str) -> str | None:
    try:
        return "IPv4" if ipaddress.ip_address(ip).version == 4 else "IPv6"
    except ValueError:
        return None


class ServiceAllocator:
    """The cluster IPs and node ports stored Services hold, and allocation from the rest.

    Follows ``store``'s events for Services (subscribed on construction, after reading the
    Services already stored), so it always equals what storage holds; the REST layer runs
    allocation and the write with no await in between, so what it picks is still free
    when the write commits.
    """

    def __init__(self, store: Store, network: ServiceNetwork, rng: random.Random | None = None):
        self.network = network
        self._rng = rng or random.Random()
        net = network.cluster_ip_range
        self._first = int(net.network_address) + 1
        last = int(net.broadcast_address)
        self._last = last - 1 if net.version == 4 else last
        size = self._last - self._first + 1
        self._ip_offset = _range_offset(size, 16, 256, 16)
        low, high = network.node_port_range
        self._port_offset = _range_offset(high - low + 1, 16, 128, 32)
        self._ips: dict[int, str] = {}
        self._ports: dict[int, str] = {}
        self._held: dict[str, tuple[tuple[int, ...], tuple[int, ...]]] = {}
        items, _, _ = store.list(SERVICES_PREFIX)
        for key, obj in items:
            self._hold(key, obj)
        self.unsubscribe: Callable[[], None] = store.subscribe(self._on_event)

    # -- bookkeeping -------------------------------------------------------------

    def _on_event(self, ev: Event) -> None:
        if not ev.key.startswith(SERVICES_PREFIX):
            return
        self._release(ev.key)
        if ev.type != "DELETED":
            self._hold(ev.key, ev.obj)

    def _hold(self, key: str, obj: JSON) -> None:
        self._release(key)
        ips = tuple(self._in_range(ip) for ip in cluster_ips(obj))
        held_ips = tuple(i for i in ips if i is not None)
        ports = tuple(node_ports(obj))
        for i in held_ips:
            self._ips[i] = key
        for port in ports:
            self._ports[port] = key
        if held_ips or ports:
            self._held[key] = (held_ips, ports)

    def _release(self, key: str) -> None:
        held = self._held.pop(key, None)
        if held is None:
            return
        for i in held[0]:
            if self._ips.get(i) == key:
                del self._ips[i]
        for port in held[1]:
            if self._ports.get(port) == key:
                del self._ports[port]

    def _in_range(self, ip: str) -> int | None:
        try:
            addr = ipaddress.ip_address(ip)
        except ValueError:
            return None
        if addr.version != self.network.cluster_ip_range.version:
            return None
        value = int(addr)
        return value if self._first <= value <= self._last else None

    def ip_holder(self, ip: str) -> str | None:
        """The storage key of the Service holding ``ip`` (None: free or not ours)."""
        value = self._in_range(ip)
        return self._ips.get(value) if value is not None else None

    def port_holder(self, port: int) -> str | None:
        """The storage key of the Service holding node port ``port``."""
        return self._ports.get(port)

    # -- cluster IPs -------------------------------------------------------------

    def check_ip(self, ip: str, key: str, dry_run: bool) -> str | None:
        """Why ``ip`` cannot be given to the Service at ``key`` (kube's allocator error
        text), or None. A dry run checks the range only, as kube's dry-run allocator."""
        try:
            addr = ipaddress.ip_address(ip)
        except ValueError:
            return None  # validation reports the malformed address
        if addr not in self.network.cluster_ip_range:
            return MISMATCHED_NETWORK
        value = int(addr)
        if not self._first <= value <= self._last:
            return f"provided IP {addr} is not in the valid range"
        if dry_run:
            return None
        holder = self._ips.get(value)
        if holder is not None and holder != key:
            return ALREADY_ALLOCATED_IP
        return None

    def next_ip(self, dry_run: bool, taken: Iterable[int] = ()) -> str:
        """A free address: random in the upper band first, then the lower band. A dry run
        answers the network address (kube's dry-run allocator does not search)."""
        if dry_run:
            return str(self.network.cluster_ip_range.network_address)
        skip = set(taken)
        upper = self._first + self._ip_offset
        for low, high in ((upper, self._last), (self._first, upper - 1)):
            found = self._probe(low, high, lambda v: v in self._ips or v in skip)
            if found is not None:
                return str(ipaddress.ip_address(found))
        raise ApiError.internal("failed to allocate a serviceIP: range is full")

    def _probe(self, low: int, high: int, used: Callable[[int], bool]) -> int | None:
        if high < low:
            return None
        size = high - low + 1
        start = self._rng.randrange(size)
        for step in range(size):
            value = low + (start + step) % size
            if not used(value):
                return value
        return None

    # -- node ports --------------------------------------------------------------

    def check_port(self, port: int, key: str, dry_run: bool, taken: set[int]) -> str | None:
        """Why node port ``port`` cannot go to the Service at ``key``, or None."""
        low, high = self.network.node_port_range
        if not dry_run and not low <= port <= high:
            return (
                "provided port is not in the valid range. The range of valid ports is "
                + self.network.node_port_text
            )
        holder = self._ports.get(port)
        if (holder is not None and holder != key) or port in taken:
            return ALREADY_ALLOCATED_PORT
        return None

    def next_port(self, dry_run: bool, taken: set[int]) -> int:
        """A free node port (random in the upper band first). A dry run answers 32769,
        32770, ... past what it already answered, as kube's dry-run operation does."""
        if dry_run:
            return max([*taken, 32768]) + 1
        low, high = self.network.node_port_range
        upper = low + self._port_offset
        for band_low, band_high in ((upper, high), (low, upper - 1)):
            found = self._probe(band_low, band_high, lambda p: p in self._ports or p in taken)
            if found is not None:
                return found
        raise ApiError.internal("failed to allocate a nodePort: range is full")


def cluster_ips(svc: JSON) -> list[str]:
    """The addresses a stored Service holds (``clusterIPs``, else ``clusterIP``; none for
    headless or ExternalName)."""
    spec = _spec(svc)
    if spec.get("type") == "ExternalName":
        return []
    ips = spec.get("clusterIPs")
    if not isinstance(ips, list) or not ips:
        single = spec.get("clusterIP")
        ips = [single] if isinstance(single, str) and single else []
    return [ip for ip in ips if isinstance(ip, str) and ip and ip != "None"]


def node_ports(svc: JSON) -> list[int]:
    """The node ports a stored Service holds (its ports' and ``healthCheckNodePort``)."""
    spec = _spec(svc)
    out: list[int] = []
    for port in _ports(spec):
        value = port.get("nodePort")
        if _is_int(value) and value:
            out.append(value)
    hc = spec.get("healthCheckNodePort")
    if _is_int(hc) and hc:
        out.append(hc)
    return out


def _spec(svc: JSON) -> JSON:
    spec = svc.get("spec")
    return spec if isinstance(spec, dict) else {}


def _ports(spec: JSON) -> list[JSON]:
    ports = spec.get("ports")
    return [p for p in ports if isinstance(p, dict)] if isinstance(ports, list) else []


def _is_int(value: Any) -> bool:
    return isinstance(value, int) and not isinstance(value, bool)


def _needs_cluster_ip(spec: JSON) -> bool:
    return spec.get("type") != "ExternalName"


def _needs_node_port(spec: JSON) -> bool:
    return spec.get("type") in ("NodePort", "LoadBalancer")


def _should_allocate_node_ports(spec: JSON) -> bool:
    if spec.get("type") == "NodePort":
        return True
    return (
        spec.get("type") == "LoadBalancer"
        and spec.get("allocateLoadBalancerNodePorts") is not False
    )


def _needs_hc_node_port(spec: JSON) -> bool:
    return spec.get("type") == "LoadBalancer" and spec.get("externalTrafficPolicy") == "Local"


def _nonzero_node_ports(spec: JSON) -> set[int]:
    return {p["nodePort"] for p in _ports(spec) if _is_int(p.get("nodePort")) and p.get("nodePort")}


def _same_cluster_ips(old: JSON, new: JSON) -> bool:
    return old.get("clusterIP") == new.get("clusterIP") and (old.get("clusterIPs") or []) == (
        new.get("clusterIPs") or []
    )


class ServiceStrategy(TypedKindStrategy):
    """Services: the typed strategy, plus address allocation once a server gives it its
    ``ServiceAllocator`` (``attach``); without one, addresses are left as the client sent
    them."""

    name_rule: ClassVar[NameRule] = "dns1035-label"
    """``ValidateServiceName``: Service names are RFC 1035 labels."""
    allocator: ServiceAllocator | None = None

    def attach(self, allocator: ServiceAllocator) -> None:
        """Allocate from ``allocator`` (a server does this for its own Service type)."""
        self.allocator = allocator

    def allocate(self, obj: JSON, old: JSON | None, dry_run: bool, subresource: str | None) -> None:
        allocator = self.allocator
        if allocator is None or subresource is not None:
            return
        spec = obj.get("spec")
        if not isinstance(spec, dict):
            return
        meta = obj.get("metadata") or {}
        name = str(meta.get("name") or "")
        key = f"{SERVICES_PREFIX}{meta.get('namespace', '')}/{name}"
        old_spec = _spec(old) if old is not None else None
        if old_spec is not None:
            _patch_allocated_values(spec, old_spec)
        _normalize_cluster_ips(spec, old_spec)
        errors = _init_ip_family_fields(spec, old_spec, allocator.network.family)
        if errors:
            raise ApiError.invalid("Service", "", name, errors)
        self._allocate_cluster_ips(spec, old_spec, key, name, dry_run)
        self._allocate_node_ports(spec, old_spec, key, name, dry_run)
        if old_spec is not None:
            _drop_type_dependent_fields(spec, old_spec)

    def _allocate_cluster_ips(
        self, spec: JSON, old_spec: JSON | None, key: str, name: str, dry_run: bool
    ) -> None:
        allocator = self.allocator
        assert allocator is not None
        if not _needs_cluster_ip(spec):
            return
        if old_spec is not None and _needs_cluster_ip(old_spec):
            # an update of a Service that already has its addresses: the first is
            # immutable (validation says so); nothing to allocate
            old_ips = old_spec.get("clusterIPs") or []
            if old_ips:
                return
        ips = spec.get("clusterIPs")
        if isinstance(ips, list) and ips and ips[0] == "None":
            return
        requested = ips[0] if isinstance(ips, list) and ips and isinstance(ips[0], str) else ""
        if requested:
            why = allocator.check_ip(requested, key, dry_run)
            if why is not None:
                raise ApiError.invalid(
                    "Service",
                    "",
                    name,
                    [
                        FieldError.invalid(
                            "spec.clusterIPs", ips, f"failed to allocate IP {requested}: {why}"
                        )
                    ],
                )
            ip = requested
        else:
            ip = allocator.next_ip(dry_run)
        spec["clusterIP"] = ip
        rest = ips[1:] if isinstance(ips, list) else []
        spec["clusterIPs"] = [ip, *rest]

    def _allocate_node_ports(
        self, spec: JSON, old_spec: JSON | None, key: str, name: str, dry_run: bool
    ) -> None:
        allocator = self.allocator
        assert allocator is not None
        mine = _nonzero_node_ports(old_spec) if old_spec is not None else set()
        if old_spec is not None:
            hc = old_spec.get("healthCheckNodePort")
            if _is_int(hc) and hc:
                mine.add(hc)
        taken: set[int] = set()  # given out by this request

        def reserve(port: int, path: str) -> None:
            if port not in mine:
                why = allocator.check_port(port, key, dry_run, taken)
                if why is not None:
                    raise ApiError.invalid(
                        "Service", "", name, [FieldError.invalid(path, port, why)]
                    )
            taken.add(port)

        if _needs_node_port(spec):
            by_port: dict[Any, int] = {}
            ports = _ports(spec)
            for i, port in enumerate(ports):
                value = port.get("nodePort")
                requested = value if _is_int(value) and value else 0
                if not requested and not _should_allocate_node_ports(spec):
                    continue
                number = port.get("port")
                if requested:
                    if by_port.get(number) != requested:
                        reserve(requested, f"spec.ports[{i}].nodePort")
                    by_port.setdefault(number, requested)
                    continue
                known = by_port.get(number)
                if known is None:
                    # a later port of the same number may ask for a node port: use it
                    known = next(
                        (
                            p["nodePort"]
                            for p in ports[i + 1 :]
                            if p.get("port") == number
                            and _is_int(p.get("nodePort"))
                            and p["nodePort"]
                        ),
                        None,
                    )
                    if known is not None:
                        reserve(known, f"spec.ports[{i}].nodePort")
                    else:
                        known = allocator.next_port(dry_run, taken | mine)
                        taken.add(known)
                    by_port[number] = known
                port["nodePort"] = known
        needs_hc = _needs_hc_node_port(spec)
        needed_hc = old_spec is not None and _needs_hc_node_port(old_spec)
        if needs_hc and not needed_hc:
            hc = spec.get("healthCheckNodePort")
            if _is_int(hc) and hc:
                if hc not in mine:
                    why = allocator.check_port(hc, key, dry_run, taken)
                    if why is not None:
                        raise ApiError.internal(
                            f"failed to allocate requested HealthCheck NodePort {hc}: {why}"
                        )
                taken.add(hc)
            else:
                spec["healthCheckNodePort"] = allocator.next_port(dry_run, taken | mine)
        elif needed_hc and not needs_hc:
            spec.pop("healthCheckNodePort", None)


def _patch_allocated_values(spec: JSON, old_spec: JSON) -> None:
    """``patchAllocatedValues``: an update that leaves out what was allocated keeps it."""
    if _needs_cluster_ip(old_spec) and _needs_cluster_ip(spec):
        if not spec.get("clusterIP") and old_spec.get("clusterIP"):
            spec["clusterIP"] = old_spec["clusterIP"]
        if not spec.get("clusterIPs") and old_spec.get("clusterIPs"):
            spec["clusterIPs"] = list(old_spec["clusterIPs"])
    if _needs_node_port(old_spec) and _needs_node_port(spec):
        used = _nonzero_node_ports(old_spec) & _nonzero_node_ports(spec)
        by_name = {p.get("name", ""): p.get("nodePort") for p in _ports(old_spec)}
        for port in _ports(spec):
            if not port.get("nodePort"):
                old_value = by_name.get(port.get("name", ""))
                if _is_int(old_value) and old_value and old_value not in used:
                    port["nodePort"] = old_value
    if (
        _needs_hc_node_port(old_spec)
        and _needs_hc_node_port(spec)
        and not spec.get("healthCheckNodePort")
        and old_spec.get("healthCheckNodePort")
    ):
        spec["healthCheckNodePort"] = old_spec["healthCheckNodePort"]


def _normalize_cluster_ips(spec: JSON, old_spec: JSON | None) -> None:
    """``normalizeClusterIPs``: ``clusterIPs`` follows ``clusterIP`` for clients that set
    only the singular field."""
    ip = spec.get("clusterIP") or ""
    ips = spec.get("clusterIPs") or []
    if old_spec is None:
        if ip and not ips:
            spec["clusterIPs"] = [ip]
        return
    old_ip = old_spec.get("clusterIP") or ""
    old_ips = old_spec.get("clusterIPs") or []
    if old_ips and not ips and old_ip == ip:
        spec["clusterIPs"] = ips = list(old_ips)
    if old_ip != ip:
        same_plural = ips == old_ips
        if old_ip and not ip:
            if same_plural:
                spec.pop("clusterIPs", None)
        elif same_plural:
            spec["clusterIPs"] = [ip]


def _init_ip_family_fields(spec: JSON, old_spec: JSON | None, family: str) -> list[FieldError]:
    """``initIPFamilyFields`` on a single-stack cluster of ``family``."""
    if spec.get("type") == "ExternalName":
        return []
    if not spec.get("ipFamilyPolicy"):
        if old_spec is not None and old_spec.get("ipFamilyPolicy"):
            spec["ipFamilyPolicy"] = old_spec["ipFamilyPolicy"]
        elif spec.get("clusterIP") == "None" and not spec.get("selector"):
            spec["ipFamilyPolicy"] = "RequireDualStack"
        else:
            spec["ipFamilyPolicy"] = "SingleStack"
    policy = spec["ipFamilyPolicy"]
    families = spec.get("ipFamilies")
    if not isinstance(families, list):
        families = []
    ips = spec.get("clusterIPs")
    ips = ips if isinstance(ips, list) else []
    errors: list[FieldError] = []
    if policy == "SingleStack":
        if len(ips) == 2:
            errors.append(
                FieldError.invalid(
                    "spec.ipFamilyPolicy",
                    policy,
                    "must be 'RequireDualStack' or 'PreferDualStack' when multiple cluster IPs "
                    "are specified",
                )
            )
        if len(families) == 2:
            errors.append(
                FieldError.invalid(
                    "spec.ipFamilyPolicy",
                    policy,
                    "must be 'RequireDualStack' or 'PreferDualStack' when multiple IP families "
                    "are specified",
                )
            )
    inferred = list(families)
    for i, ip in enumerate(ips):
        if ip == "None" or not isinstance(ip, str):
            break
        ip_family = _family_of(ip)
        if ip_family is None:
            break  # validation reports it
        if i >= len(inferred):
            if ip_family != family:
                errors.append(
                    FieldError.invalid(
                        f"spec.clusterIPs[{i}]",
                        ips,
                        f"{ip_family} is not configured on this cluster",
                    )
                )
            else:
                inferred.append(ip_family)
    if errors:
        return errors
    if spec.get("clusterIP") == "None" and not spec.get("selector"):
        if not inferred:
            inferred = [family]
        if len(inferred) < 2 and policy != "SingleStack":
            inferred.append("IPv6" if inferred[0] == "IPv4" else "IPv4")
        spec["ipFamilies"] = inferred
        return []
    if policy == "RequireDualStack":
        errors.append(
            FieldError.invalid(
                "spec.ipFamilyPolicy",
                policy,
                "this cluster is not configured for dual-stack services",
            )
        )
    for i, requested in enumerate(inferred):
        if requested != family:
            errors.append(
                FieldError.invalid(
                    f"spec.ipFamilies[{i}]", requested, "not configured on this cluster"
                )
            )
    if errors:
        return errors
    spec["ipFamilies"] = inferred or [family]
    return []


def _drop_type_dependent_fields(spec: JSON, old_spec: JSON) -> None:
    """``dropTypeDependentFields``: what the new type does not use, and the client did not
    change, goes (addresses and ports are then free)."""
    if _needs_cluster_ip(old_spec) and not _needs_cluster_ip(spec):
        if _same_cluster_ips(old_spec, spec):
            spec.pop("clusterIP", None)
            spec.pop("clusterIPs", None)
        if (old_spec.get("ipFamilies") or []) == (spec.get("ipFamilies") or []):
            spec.pop("ipFamilies", None)
        if old_spec.get("ipFamilyPolicy") == spec.get("ipFamilyPolicy"):
            spec.pop("ipFamilyPolicy", None)
    if (
        _needs_node_port(old_spec)
        and not _needs_node_port(spec)
        and _nonzero_node_ports(spec) <= _nonzero_node_ports(old_spec)
    ):
        for port in _ports(spec):
            port.pop("nodePort", None)
    if (
        _needs_hc_node_port(old_spec)
        and not _needs_hc_node_port(spec)
        and old_spec.get("healthCheckNodePort") == spec.get("healthCheckNodePort")
    ):
        spec.pop("healthCheckNodePort", None)
    if old_spec.get("type") == "LoadBalancer" and spec.get("type") != "LoadBalancer":
        old_alloc = old_spec.get("allocateLoadBalancerNodePorts")
        new_alloc = spec.get("allocateLoadBalancerNodePorts")
        if old_alloc is not None and new_alloc is not None and old_alloc == new_alloc:
            spec.pop("allocateLoadBalancerNodePorts", None)
        if old_spec.get("loadBalancerClass") == spec.get("loadBalancerClass"):
            spec.pop("loadBalancerClass", None)
    if (
        _externally_accessible(old_spec)
        and not _externally_accessible(spec)
        and old_spec.get("externalTrafficPolicy") == spec.get("externalTrafficPolicy")
    ):
        spec.pop("externalTrafficPolicy", None)


def _externally_accessible(spec: JSON) -> bool:
    """``ExternallyAccessible``: NodePort, LoadBalancer, or ClusterIP with external IPs
    (the types an ``externalTrafficPolicy`` applies to)."""
    kind = spec.get("type")
    return kind in ("NodePort", "LoadBalancer") or (
        kind == "ClusterIP" and bool(spec.get("externalIPs"))
    )
