"""Printers of the core (``v1``) kinds: Pod, PodTemplate, ReplicationController,
Service, Endpoints, Node, PersistentVolume, PersistentVolumeClaim, LimitRange and
ResourceQuota — the columns and cells of kube's ``printPod``, ``printService``, ...
(``pkg/printers/internalversion``), computed from stored ``v1`` objects.
"""

from __future__ import annotations

from typing import Any, Final

from kubewerk.apiserver.printers.format import (
    NONE,
    UNKNOWN,
    UNSET,
    age,
    container_cells,
    deleting,
    format_labels,
    meta,
    obj_int,
    obj_list,
    obj_map,
    obj_str,
    quantity_string,
)
from kubewerk.apiserver.printers.printer import JSON, Printer
from kubewerk.apiserver.strategy import PrinterColumn
from kubewerk.core.meta import human_duration, parse_time

AGE: Final = PrinterColumn("Age", "string", ".metadata.creationTimestamp")
CONTAINERS: Final = PrinterColumn(
    "Containers", "string", "", "Names of each container in the template.", priority=1
)
IMAGES: Final = PrinterColumn(
    "Images", "string", "", "Images referenced by each container in the template.", priority=1
)
SELECTOR: Final = PrinterColumn("Selector", "string", "", priority=1)
CREATED_AT: Final = PrinterColumn("Created At", "date", ".metadata.creationTimestamp")
"""The column of the default table convertor (kinds kube has no printer for)."""


# -- Pod --------------------------------------------------------------------------------

POD_COLUMNS: Final = (
    PrinterColumn(
        "Ready", "string", "", "The aggregate readiness state of this pod for accepting traffic."
    ),
    PrinterColumn("Status", "string", "", "The aggregate status of the containers in this pod."),
    PrinterColumn(
        "Restarts",
        "string",
        "",
        "The number of times the containers in this pod have been restarted and when the "
        "last container in this pod has restarted.",
    ),
    AGE,
    PrinterColumn("IP", "string", "", priority=1),
    PrinterColumn("Node", "string", "", priority=1),
    PrinterColumn("Nominated Node", "string", "", priority=1),
    PrinterColumn("Readiness Gates", "string", "", priority=1),
)

NODE_UNREACHABLE_POD_REASON: Final = "NodeLost"


def _restartable(container: JSON | None) -> bool:
    """``IsRestartableInitContainer``: an init container with ``restartPolicy: Always``
    (a sidecar)."""
    return container is not None and container.get("restartPolicy") == "Always"


def _has_condition(conditions: Any, type_: str) -> bool:
    """The first condition of ``type_`` is True."""
    for cond in obj_list(conditions):
        cond = obj_map(cond)
        if cond.get("type") == type_:
            return cond.get("status") == "True"
    return False


def _later(current: float | None, candidate: Any) -> float | None:
    """The later of a restart time so far and a ``finishedAt`` (``Before`` semantics:
    a candidate replaces the current only when strictly later)."""
    ts = parse_time(candidate) if isinstance(candidate, str) and candidate else None
    if ts is None:
        return current
    if current is None or current < ts:
        return ts
    return current


def _terminated(state: Any) -> JSON | None:
    value = obj_map(state).get("terminated")
    return value if isinstance(value, dict) else None


def _waiting(state: Any) -> JSON | None:
    value = obj_map(state).get("waiting")
    return value if isinstance(value, dict) else None


def _terminated_reason(term: JSON, prefix: str) -> str:
    """A terminated container's reason, or ``Signal:N`` / ``ExitCode:N`` without one."""
    reason = obj_str(term.get("reason"))
    if reason:
        return prefix + reason
    signal = obj_int(term.get("signal"))
    if signal:
        return f"{prefix}Signal:{signal}"
    return f"{prefix}ExitCode:{obj_int(term.get('exitCode'))}"


def pod_cells(pod: JSON, now: float) -> list[Any]:
    """``printPod`` (wide): READY, STATUS, RESTARTS, AGE, IP, NODE, NOMINATED NODE,
    READINESS GATES."""
    spec = obj_map(pod.get("spec"))
    status = obj_map(pod.get("status"))
    containers = obj_list(spec.get("containers"))
    init_specs = [obj_map(c) for c in obj_list(spec.get("initContainers"))]
    total = len(containers)
    ready = 0
    restarts = 0
    sidecar_restarts = 0
    last_restart: float | None = None
    last_sidecar_restart: float | None = None

    phase = obj_str(status.get("phase"))
    reason = obj_str(status.get("reason")) or phase
    conditions = obj_list(status.get("conditions"))
    for cond in conditions:
        cond = obj_map(cond)
        if cond.get("type") == "PodScheduled" and cond.get("reason") == "SchedulingGated":
            reason = "SchedulingGated"

    init_by_name: dict[str, JSON] = {}
    for c in init_specs:
        init_by_name[obj_str(c.get("name"))] = c
        if _restartable(c):
            total += 1

    initializing = False
    for i, cs in enumerate(obj_list(status.get("initContainerStatuses"))):
        cs = obj_map(cs)
        count = obj_int(cs.get("restartCount"))
        restarts += count
        last_term = _terminated(cs.get("lastState"))
        if last_term is not None:
            last_restart = _later(last_restart, last_term.get("finishedAt"))
        sidecar = _restartable(init_by_name.get(obj_str(cs.get("name"))))
        if sidecar:
            sidecar_restarts += count
            if last_term is not None:
                last_sidecar_restart = _later(last_sidecar_restart, last_term.get("finishedAt"))
        term = _terminated(cs.get("state"))
        waiting = _waiting(cs.get("state"))
        if term is not None and obj_int(term.get("exitCode")) == 0:
            continue
        if sidecar and cs.get("started") is True:
            if cs.get("ready") is True:
                ready += 1
            continue
        if term is not None:
            reason = _terminated_reason(term, "Init:")
        elif (
            waiting is not None
            and obj_str(waiting.get("reason"))
            and waiting.get("reason") != "PodInitializing"
        ):
            reason = "Init:" + obj_str(waiting.get("reason"))
        else:
            reason = f"Init:{i}/{len(init_specs)}"
        initializing = True
        break

    if not initializing or _has_condition(conditions, "Initialized"):
        restarts = sidecar_restarts
        last_restart = last_sidecar_restart
        has_running = False
        for cs in reversed(obj_list(status.get("containerStatuses"))):
            cs = obj_map(cs)
            restarts += obj_int(cs.get("restartCount"))
            last_term = _terminated(cs.get("lastState"))
            if last_term is not None:
                last_restart = _later(last_restart, last_term.get("finishedAt"))
            state = obj_map(cs.get("state"))
            waiting = _waiting(state)
            term = _terminated(state)
            if waiting is not None and obj_str(waiting.get("reason")):
                reason = obj_str(waiting.get("reason"))
            elif term is not None:
                reason = _terminated_reason(term, "")
            elif cs.get("ready") is True and isinstance(state.get("running"), dict):
                has_running = True
                ready += 1
        if reason == "Completed" and has_running:
            reason = "Running" if _has_condition_true(conditions, "Ready") else "NotReady"

    if deleting(pod) and status.get("reason") == NODE_UNREACHABLE_POD_REASON:
        reason = "Unknown"
    elif deleting(pod) and phase not in ("Failed", "Succeeded"):
        reason = "Terminating"

    restarts_cell = str(restarts)
    if restarts != 0 and last_restart is not None:
        restarts_cell = f"{restarts} ({human_duration(now - last_restart)} ago)"

    pod_ips = obj_list(status.get("podIPs"))
    # the v1 conversion makes a lone status.podIP the first of podIPs
    pod_ip = obj_str(obj_map(pod_ips[0]).get("ip")) if pod_ips else obj_str(status.get("podIP"))
    gates = obj_list(spec.get("readinessGates"))
    gates_cell = NONE
    if gates:
        true_count = 0
        for gate in gates:
            wanted = obj_map(gate).get("conditionType")
            for cond in conditions:
                cond = obj_map(cond)
                if cond.get("type") == wanted:
                    if cond.get("status") == "True":
                        true_count += 1
                    break
        gates_cell = f"{true_count}/{len(gates)}"
    return [
        f"{ready}/{total}",
        reason,
        restarts_cell,
        age(pod, now),
        pod_ip or NONE,
        obj_str(spec.get("nodeName")) or NONE,
        obj_str(status.get("nominatedNodeName")) or NONE,
        gates_cell,
    ]


def _has_condition_true(conditions: list[Any], type_: str) -> bool:
    """``hasPodReadyCondition``: any condition of ``type_`` is True."""
    return any(
        obj_map(c).get("type") == type_ and obj_map(c).get("status") == "True" for c in conditions
    )


# -- PodTemplate, ReplicationController -------------------------------------------------

POD_TEMPLATE_COLUMNS: Final = (
    PrinterColumn("Containers", "string", "", "Names of each container in the template."),
    PrinterColumn("Images", "string", "", "Images referenced by each container in the template."),
    PrinterColumn("Pod Labels", "string", "", "The labels for the pod template."),
)


def pod_template_cells(obj: JSON, now: float) -> list[Any]:
    """``printPodTemplate``: CONTAINERS, IMAGES, POD LABELS."""
    template = obj_map(obj.get("template"))
    names, images = container_cells(obj_map(template.get("spec")).get("containers"))
    return [names, images, format_labels(meta(template).get("labels"))]


REPLICATION_CONTROLLER_COLUMNS: Final = (
    PrinterColumn("Desired", "integer", ""),
    PrinterColumn("Current", "integer", ""),
    PrinterColumn("Ready", "integer", ""),
    AGE,
    CONTAINERS,
    IMAGES,
    SELECTOR,
)


def replication_controller_cells(obj: JSON, now: float) -> list[Any]:
    """``printReplicationController`` (wide)."""
    spec = obj_map(obj.get("spec"))
    status = obj_map(obj.get("status"))
    names, images = container_cells(
        obj_map(obj_map(spec.get("template")).get("spec")).get("containers")
    )
    return [
        obj_int(spec.get("replicas"), 1),
        obj_int(status.get("replicas")),
        obj_int(status.get("readyReplicas")),
        age(obj, now),
        names,
        images,
        format_labels(spec.get("selector")),
    ]


# -- Service, Endpoints -----------------------------------------------------------------

SERVICE_COLUMNS: Final = (
    PrinterColumn("Type", "string", ""),
    PrinterColumn("Cluster-IP", "string", ""),
    PrinterColumn("External-IP", "string", ""),
    PrinterColumn("Port(s)", "string", ""),
    AGE,
    SELECTOR,
)

LOAD_BALANCER_WIDTH: Final = 16


def load_balancer_ingress(status: Any, wide: bool = True) -> str:
    """``loadBalancerStatusStringer``: the distinct ingress IPs (or hostnames where an
    entry has no IP), sorted and comma-joined; cut to 16 bytes with ``...`` unless
    ``wide`` (the API server always prints wide)."""
    found: set[str] = set()
    for entry in obj_list(obj_map(status).get("ingress")):
        entry = obj_map(entry)
        if obj_str(entry.get("ip")):
            found.add(obj_str(entry.get("ip")))
        elif obj_str(entry.get("hostname")):
            found.add(obj_str(entry.get("hostname")))
    text = ",".join(sorted(found, key=lambda s: s.encode()))
    if not wide and len(text.encode()) > LOAD_BALANCER_WIDTH:
        text = text.encode()[: LOAD_BALANCER_WIDTH - 3].decode(errors="ignore") + "..."
    return text


def service_external_ip(svc: JSON) -> str:
    """``getServiceExternalIP`` (wide)."""
    spec = obj_map(svc.get("spec"))
    external = [obj_str(ip) for ip in obj_list(spec.get("externalIPs"))]
    kind = spec.get("type", "ClusterIP")
    if kind in ("ClusterIP", "NodePort"):
        return ",".join(external) if external else NONE
    if kind == "LoadBalancer":
        lb = load_balancer_ingress(obj_map(svc.get("status")).get("loadBalancer"))
        if external:
            return ",".join([*(lb.split(",") if lb else []), *external])
        return lb or "<pending>"
    if kind == "ExternalName":
        return obj_str(spec.get("externalName"))
    return UNKNOWN


def service_ports(ports: Any) -> str:
    """``makePortString``: ``80/TCP``, or ``80:30080/TCP`` with a node port."""
    pieces = []
    for port in obj_list(ports):
        port = obj_map(port)
        number = obj_int(port.get("port"))
        protocol = obj_str(port.get("protocol")) or "TCP"
        node_port = obj_int(port.get("nodePort"))
        if node_port > 0:
            pieces.append(f"{number}:{node_port}/{protocol}")
        else:
            pieces.append(f"{number}/{protocol}")
    return ",".join(pieces)


def service_cells(svc: JSON, now: float) -> list[Any]:
    """``printService`` (wide): TYPE, CLUSTER-IP, EXTERNAL-IP, PORT(S), AGE, SELECTOR."""
    spec = obj_map(svc.get("spec"))
    cluster_ips = obj_list(spec.get("clusterIPs"))
    internal = obj_str(cluster_ips[0]) if cluster_ips else NONE
    return [
        obj_str(spec.get("type", "ClusterIP")),
        internal,
        service_external_ip(svc),
        service_ports(spec.get("ports")) or NONE,
        age(svc, now),
        format_labels(spec.get("selector")),
    ]


ENDPOINTS_COLUMNS: Final = (PrinterColumn("Endpoints", "string", ""), AGE)


def _join_host_port(host: str, port: int) -> str:
    """``net.JoinHostPort``: brackets around a host containing a colon."""
    return f"[{host}]:{port}" if ":" in host else f"{host}:{port}"


def format_endpoints(endpoints: JSON) -> str:
    """``formatEndpoints`` with every port: up to three ``ip:port`` (or bare IPs of a
    subset without ports), then `` + N more...``; ``<none>`` without subsets."""
    subsets = obj_list(endpoints.get("subsets"))
    if not subsets:
        return NONE
    shown: list[str] = []
    limit = 3
    more = False
    count = 0
    for subset in subsets:
        subset = obj_map(subset)
        addresses = [obj_map(a) for a in obj_list(subset.get("addresses"))]
        ports = obj_list(subset.get("ports"))
        if not ports:
            count += len(addresses)
            for addr in addresses:
                if len(shown) == limit:
                    more = True
                    break
                shown.append(obj_str(addr.get("ip")))
            continue
        for port in ports:
            count += len(addresses)
            for addr in addresses:
                if len(shown) == limit:
                    more = True
                    break
                shown.append(
                    _join_host_port(obj_str(addr.get("ip")), obj_int(obj_map(port).get("port")))
                )
    text = ",".join(shown)
    if more:
        return f"{text} + {count - limit} more..."
    return text


def endpoints_cells(obj: JSON, now: float) -> list[Any]:
    """``printEndpoints``: ENDPOINTS, AGE."""
    return [format_endpoints(obj), age(obj, now)]


# -- Node -------------------------------------------------------------------------------

NODE_COLUMNS: Final = (
    PrinterColumn("Status", "string", "", "The status of the node"),
    PrinterColumn("Roles", "string", "", "The roles of the node"),
    AGE,
    PrinterColumn("Version", "string", ""),
    PrinterColumn("Internal-IP", "string", "", priority=1),
    PrinterColumn("External-IP", "string", "", priority=1),
    PrinterColumn("OS-Image", "string", "", priority=1),
    PrinterColumn("Kernel-Version", "string", "", priority=1),
    PrinterColumn("Container-Runtime", "string", "", priority=1),
)

NODE_ROLE_PREFIX: Final = "node-role.kubernetes.io/"
NODE_ROLE_LABEL: Final = "kubernetes.io/role"


def node_roles(node: JSON) -> list[str]:
    """``findNodeRoles``: roles from ``node-role.kubernetes.io/<role>`` label keys and
    ``kubernetes.io/role=<role>`` values, distinct and sorted."""
    roles: set[str] = set()
    for key, value in obj_map(meta(node).get("labels")).items():
        if key.startswith(NODE_ROLE_PREFIX):
            role = key[len(NODE_ROLE_PREFIX) :]
            if role:
                roles.add(role)
        elif key == NODE_ROLE_LABEL and value:
            roles.add(obj_str(value))
    return sorted(roles, key=lambda s: s.encode())


def _node_address(node: JSON, type_: str) -> str:
    for address in obj_list(obj_map(node.get("status")).get("addresses")):
        address = obj_map(address)
        if address.get("type") == type_:
            return obj_str(address.get("address"))
    return NONE


def node_cells(node: JSON, now: float) -> list[Any]:
    """``printNode`` (wide)."""
    status = obj_map(node.get("status"))
    states: list[str] = []
    ready = None
    for cond in obj_list(status.get("conditions")):
        cond = obj_map(cond)
        if cond.get("type") == "Ready":
            ready = cond  # the last of a repeated type wins, as in kube's map
    if ready is not None:
        states.append("Ready" if ready.get("status") == "True" else "NotReady")
    if not states:
        states.append("Unknown")
    if obj_map(node.get("spec")).get("unschedulable") is True:
        states.append("SchedulingDisabled")
    info = obj_map(status.get("nodeInfo"))
    return [
        ",".join(states),
        ",".join(node_roles(node)) or NONE,
        age(node, now),
        obj_str(info.get("kubeletVersion")),
        _node_address(node, "InternalIP"),
        _node_address(node, "ExternalIP"),
        obj_str(info.get("osImage")) or UNKNOWN,
        obj_str(info.get("kernelVersion")) or UNKNOWN,
        obj_str(info.get("containerRuntimeVersion")) or UNKNOWN,
    ]


# -- PersistentVolume, PersistentVolumeClaim --------------------------------------------

BETA_STORAGE_CLASS_ANNOTATION: Final = "volume.beta.kubernetes.io/storage-class"

PERSISTENT_VOLUME_COLUMNS: Final = (
    PrinterColumn("Capacity", "string", ""),
    PrinterColumn("Access Modes", "string", ""),
    PrinterColumn("Reclaim Policy", "string", ""),
    PrinterColumn("Status", "string", ""),
    PrinterColumn("Claim", "string", ""),
    PrinterColumn("StorageClass", "string", "", "StorageClass of the pv"),
    PrinterColumn("VolumeAttributesClass", "string", "", "VolumeAttributesClass of the pv"),
    PrinterColumn("Reason", "string", ""),
    AGE,
    PrinterColumn("VolumeMode", "string", "", priority=1),
)


def access_modes(modes: Any) -> str:
    """``GetAccessModesAsString``: RWO, ROX, RWX, RWOP in that order, each once."""
    have = {obj_str(m) for m in obj_list(modes)}
    short = (
        ("ReadWriteOnce", "RWO"),
        ("ReadOnlyMany", "ROX"),
        ("ReadWriteMany", "RWX"),
        ("ReadWriteOncePod", "RWOP"),
    )
    return ",".join(abbr for mode, abbr in short if mode in have)


def storage_class(obj: JSON) -> str:
    """``storageutil.GetPersistentVolumeClass`` / ``GetPersistentVolumeClaimClass``: the
    beta storage-class annotation when present (even empty), else ``spec.storageClassName``."""
    annotations = obj_map(meta(obj).get("annotations"))
    if BETA_STORAGE_CLASS_ANNOTATION in annotations:
        return obj_str(annotations[BETA_STORAGE_CLASS_ANNOTATION])
    return obj_str(obj_map(obj.get("spec")).get("storageClassName"))


def persistent_volume_cells(pv: JSON, now: float) -> list[Any]:
    """``printPersistentVolume``."""
    spec = obj_map(pv.get("spec"))
    status = obj_map(pv.get("status"))
    claim = ""
    if isinstance(spec.get("claimRef"), dict):
        ref = spec["claimRef"]
        claim = f"{obj_str(ref.get('namespace'))}/{obj_str(ref.get('name'))}"
    vac = spec.get("volumeAttributesClassName")
    return [
        quantity_string(obj_map(spec.get("capacity")).get("storage")),
        access_modes(spec.get("accessModes")),
        obj_str(spec.get("persistentVolumeReclaimPolicy")),
        "Terminating" if deleting(pv) else obj_str(status.get("phase")),
        claim,
        storage_class(pv),
        vac if isinstance(vac, str) else UNSET,
        obj_str(status.get("reason")),
        age(pv, now),
        obj_str(spec.get("volumeMode")) or UNSET,
    ]


PERSISTENT_VOLUME_CLAIM_COLUMNS: Final = (
    PrinterColumn("Status", "string", ""),
    PrinterColumn("Volume", "string", ""),
    PrinterColumn("Capacity", "string", ""),
    PrinterColumn("Access Modes", "string", ""),
    PrinterColumn("StorageClass", "string", "", "StorageClass of the pvc"),
    PrinterColumn("VolumeAttributesClass", "string", "", "VolumeAttributesClass of the pvc"),
    AGE,
    PrinterColumn("VolumeMode", "string", "", priority=1),
)


def persistent_volume_claim_cells(pvc: JSON, now: float) -> list[Any]:
    """``printPersistentVolumeClaim``: capacity and access modes only once bound to a
    volume (``spec.volumeName``), from the status."""
    spec = obj_map(pvc.get("spec"))
    status = obj_map(pvc.get("status"))
    volume = obj_str(spec.get("volumeName"))
    capacity = ""
    modes = ""
    if volume:
        modes = access_modes(status.get("accessModes"))
        capacity = quantity_string(obj_map(status.get("capacity")).get("storage"))
    vac = spec.get("volumeAttributesClassName")
    return [
        "Terminating" if deleting(pvc) else obj_str(status.get("phase")),
        volume,
        capacity,
        modes,
        storage_class(pvc),
        vac if isinstance(vac, str) else UNSET,
        age(pvc, now),
        obj_str(spec.get("volumeMode")) or UNSET,
    ]


# -- LimitRange, ResourceQuota ----------------------------------------------------------

CREATED_AT_COLUMNS: Final = (CREATED_AT,)


def created_at_cells(obj: JSON, now: float) -> list[Any]:
    """The default table convertor's cell: ``metadata.creationTimestamp`` as stored."""
    created = meta(obj).get("creationTimestamp")
    return [created if isinstance(created, str) else None]


RESOURCE_QUOTA_COLUMNS: Final = (
    PrinterColumn(
        "Request",
        "string",
        "",
        "Request represents a minimum amount of cpu/memory that a container may consume.",
    ),
    PrinterColumn(
        "Limit",
        "string",
        "",
        "Limits control the maximum amount of cpu/memory that a container may use "
        "independent of contention on the node.",
    ),
    AGE,
)


def resource_quota_cells(quota: JSON, now: float) -> list[Any]:
    """``printResourceQuota``: ``name: used/hard`` per resource of ``status.hard`` in
    name order; ``limits.*`` resources in LIMIT, the others in REQUEST."""
    status = obj_map(quota.get("status"))
    hard = obj_map(status.get("hard"))
    used = obj_map(status.get("used"))
    requests: list[str] = []
    limits: list[str] = []
    for name in sorted(hard, key=lambda s: s.encode()):
        pieces = name.split(".")
        target = limits if len(pieces) > 1 and pieces[0] == "limits" else requests
        target.append(f"{name}: {quantity_string(used.get(name))}/{quantity_string(hard[name])}")
    return [", ".join(requests), ", ".join(limits), age(quota, now)]


def printers() -> dict[str, Printer]:
    """The core kinds' printers, keyed ``v1/Kind``."""
    return {
        "v1/Pod": Printer.of(POD_COLUMNS, pod_cells),
        "v1/PodTemplate": Printer.of(POD_TEMPLATE_COLUMNS, pod_template_cells),
        "v1/ReplicationController": Printer.of(
            REPLICATION_CONTROLLER_COLUMNS, replication_controller_cells
        ),
        "v1/Service": Printer.of(SERVICE_COLUMNS, service_cells),
        "v1/Endpoints": Printer.of(ENDPOINTS_COLUMNS, endpoints_cells),
        "v1/Node": Printer.of(NODE_COLUMNS, node_cells),
        "v1/PersistentVolume": Printer.of(PERSISTENT_VOLUME_COLUMNS, persistent_volume_cells),
        "v1/PersistentVolumeClaim": Printer.of(
            PERSISTENT_VOLUME_CLAIM_COLUMNS, persistent_volume_claim_cells
        ),
        "v1/LimitRange": Printer.of(CREATED_AT_COLUMNS, created_at_cells),
        "v1/ResourceQuota": Printer.of(RESOURCE_QUOTA_COLUMNS, resource_quota_cells),
    }
