"""PodSpec defaults and validation, shared by Pod, PodTemplate and every workload's
``spec.template`` (``pkg/apis/core/v1/defaults.go``, the ``+default`` markers of
``k8s.io/api/core/v1`` and ``pkg/apis/core/validation``).

``default_pod_spec`` is what every PodSpec gets (``SetDefaults_PodSpec`` and the
defaulters of the structs inside it); ``default_pod`` adds what only a Pod gets
(``SetDefaults_Pod``: requests copied from limits, ``enableServiceLinks``, host ports
under ``hostNetwork``). ``validate_pod_template_spec`` is ``ValidatePodTemplateSpec``.
"""

from __future__ import annotations

import copy
from typing import Any, Final

from kubewerk.apiserver.kindrules import quantity
from kubewerk.apiserver.kindrules.common import (
    JSON,
    PROTOCOLS,
    Errs,
    KindRules,
    check_dns_label,
    check_enum,
    check_nonnegative,
    check_port_num_or_name,
    ensure,
    int_of,
    items,
    obj,
    port_name_errors,
    port_num_errors,
    set_default,
    str_map,
    str_of,
)
from kubewerk.core.errors import FieldError
from kubewerk.core.validation import validate_annotations, validate_labels

RESTART_POLICIES: Final = ("Always", "OnFailure", "Never")
DNS_POLICIES: Final = ("ClusterFirstWithHostNet", "ClusterFirst", "Default", "None")
PULL_POLICIES: Final = ("Always", "IfNotPresent", "Never")
TERMINATION_MESSAGE_POLICIES: Final = ("File", "FallbackToLogsOnError")
DEFAULT_MODE: Final = 0o644
"""``SecretVolumeSourceDefaultMode`` and the other volume sources' (420)."""

_CONTAINER_LISTS: Final = ("initContainers", "containers", "ephemeralContainers")
_VOLUME_SOURCES: Final = (
    "hostPath",
    "emptyDir",
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "gitRepo",
    "secret",
    "nfs",
    "iscsi",
    "glusterfs",
    "persistentVolumeClaim",
    "rbd",
    "flexVolume",
    "cinder",
    "cephfs",
    "flocker",
    "downwardAPI",
    "fc",
    "azureFile",
    "configMap",
    "vsphereVolume",
    "quobyte",
    "azureDisk",
    "photonPersistentDisk",
    "projected",
    "portworxVolume",
    "scaleIO",
    "storageos",
    "csi",
    "ephemeral",
    "image",
)
_VOLUME_SOURCE_ORDER: Final = {name: i for i, name in enumerate(_VOLUME_SOURCES)}
"""Each volume source's place in ``_VOLUME_SOURCES`` (a volume is scanned by its own
few keys rather than by the thirty source names)."""


def _volume_sources(vol: JSON) -> list[str]:
    """The sources a volume sets (not null), in ``_VOLUME_SOURCES`` order."""
    found = [k for k, v in vol.items() if v is not None and k in _VOLUME_SOURCE_ORDER]
    if len(found) > 1:
        found.sort(key=_VOLUME_SOURCE_ORDER.__getitem__)
    return found


# -- defaults ------------------------------------------------------------------


def image_tag(image: str) -> str:
    """The tag of an image reference as ``parsers.ParseImageName`` reports it: the
    text after the last ``:`` of the last path component, ``latest`` when there is
    neither a tag nor a digest, "" for a digest-only reference."""
    name, _, digest = image.partition("@")
    last = name.rsplit("/", 1)[-1]
    if ":" in last:
        return last.rsplit(":", 1)[1]
    return "" if digest else "latest"


def _default_http_get(handler: JSON) -> None:
    http_get = handler.get("httpGet")
    if isinstance(http_get, dict):
        if not http_get.get("path"):
            http_get["path"] = "/"
        if not http_get.get("scheme"):
            http_get["scheme"] = "HTTP"


def _default_probe(probe: Any) -> None:
    if not isinstance(probe, dict):
        return
    for key, value in (
        ("timeoutSeconds", 1),
        ("periodSeconds", 10),
        ("successThreshold", 1),
        ("failureThreshold", 3),
    ):
        if not probe.get(key):
            probe[key] = value
    _default_http_get(probe)
    grpc = probe.get("grpc")
    if isinstance(grpc, dict):
        set_default(grpc, "service", "")


def _default_field_ref(owner: JSON) -> None:
    ref = owner.get("fieldRef")
    if isinstance(ref, dict) and not ref.get("apiVersion"):
        ref["apiVersion"] = "v1"


def default_container(ctr: JSON) -> None:
    """``SetDefaults_Container`` and the defaulters of the structs in a container
    (``resources`` is written as ``{}`` when absent, as the typed encoding does)."""
    if not ctr.get("imagePullPolicy"):
        tag = image_tag(str_of(ctr, "image"))
        ctr["imagePullPolicy"] = "Always" if tag == "latest" else "IfNotPresent"
    if not ctr.get("terminationMessagePath"):
        ctr["terminationMessagePath"] = "/dev/termination-log"
    if not ctr.get("terminationMessagePolicy"):
        ctr["terminationMessagePolicy"] = "File"
    for port in items(ctr, "ports"):
        if not port.get("protocol"):
            port["protocol"] = "TCP"
    for env in items(ctr, "env"):
        value_from = env.get("valueFrom")
        if isinstance(value_from, dict):
            _default_field_ref(value_from)
    for key in ("livenessProbe", "readinessProbe", "startupProbe"):
        _default_probe(ctr.get(key))
    lifecycle = ctr.get("lifecycle")
    if isinstance(lifecycle, dict):
        for key in ("postStart", "preStop"):
            handler = lifecycle.get(key)
            if isinstance(handler, dict):
                _default_http_get(handler)
    set_default(ctr, "resources", {})
    quantity.canonicalize_requirements(ctr)


def default_volume(vol: JSON) -> None:
    """``SetDefaults_Volume`` and its sources' defaulters."""
    if not _volume_sources(vol):
        vol["emptyDir"] = {}
    for key in ("secret", "configMap", "downwardAPI", "projected"):
        source = vol.get(key)
        if isinstance(source, dict):
            set_default(source, "defaultMode", DEFAULT_MODE)
    empty_dir = vol.get("emptyDir")
    if isinstance(empty_dir, dict) and "sizeLimit" in empty_dir:
        empty_dir["sizeLimit"] = quantity.canonical(empty_dir["sizeLimit"])
    for item in items(obj(vol, "downwardAPI") or None, "items"):
        _default_field_ref(item)
    for source in items(obj(vol, "projected") or None, "sources"):
        token = source.get("serviceAccountToken")
        if isinstance(token, dict):
            set_default(token, "expirationSeconds", 3600)
        for item in items(obj(source, "downwardAPI") or None, "items"):
            _default_field_ref(item)
    host_path = vol.get("hostPath")
    if isinstance(host_path, dict):
        set_default(host_path, "type", "")
    iscsi = vol.get("iscsi")
    if isinstance(iscsi, dict):
        set_default(iscsi, "iscsiInterface", "default")
    rbd = vol.get("rbd")
    if isinstance(rbd, dict):
        set_default(rbd, "pool", "rbd")
        set_default(rbd, "user", "admin")
        set_default(rbd, "keyring", "/etc/ceph/keyring")
    azure = vol.get("azureDisk")
    if isinstance(azure, dict):
        set_default(azure, "cachingMode", "ReadWrite")
        set_default(azure, "fsType", "ext4")
        set_default(azure, "readOnly", False)
        set_default(azure, "kind", "Shared")
    scale_io = vol.get("scaleIO")
    if isinstance(scale_io, dict):
        set_default(scale_io, "storageMode", "ThinProvisioned")
        set_default(scale_io, "fsType", "xfs")
    image = vol.get("image")
    if isinstance(image, dict) and not image.get("pullPolicy"):
        tag = image_tag(str_of(image, "reference"))
        image["pullPolicy"] = "Always" if tag == "latest" else "IfNotPresent"
    claim = obj(obj(vol, "ephemeral"), "volumeClaimTemplate")
    if claim and isinstance(claim.get("spec"), dict):
        default_pvc_spec(claim["spec"])


def default_pvc_spec(spec: JSON) -> None:
    """``SetDefaults_PersistentVolumeClaimSpec`` (volumeMode) and its quantities."""
    set_default(spec, "volumeMode", "Filesystem")
    quantity.canonicalize_requirements(spec)


def alias_service_account(spec: JSON) -> None:
    """``serviceAccount``, the deprecated alias of ``serviceAccountName``, as kube's v1
    conversion keeps it (``Convert_v1_PodSpec_To_core_PodSpec`` and back): the alias
    names the account when ``serviceAccountName`` is empty, and every stored PodSpec
    carries the alias equal to the name (neither when there is no name)."""
    name = spec.get("serviceAccountName") or spec.get("serviceAccount")
    if isinstance(name, str) and name:
        spec["serviceAccountName"] = name
        spec["serviceAccount"] = name
    else:
        spec.pop("serviceAccount", None)


def default_pod_spec(spec: JSON) -> None:
    """The defaults of any PodSpec (``SetDefaults_PodSpec`` and everything inside), after
    the v1 conversion's ``serviceAccount`` alias (``alias_service_account``)."""
    alias_service_account(spec)
    if not spec.get("dnsPolicy"):
        spec["dnsPolicy"] = "ClusterFirst"
    if not spec.get("restartPolicy"):
        spec["restartPolicy"] = "Always"
    set_default(spec, "securityContext", {})
    set_default(spec, "terminationGracePeriodSeconds", 30)
    if not spec.get("schedulerName"):
        spec["schedulerName"] = "default-scheduler"
    for vol in items(spec, "volumes"):
        default_volume(vol)
    for key in _CONTAINER_LISTS:
        for ctr in items(spec, key):
            default_container(ctr)
    quantity.canonicalize_requirements(spec)
    quantity.canonicalize_list(spec.get("overhead"))


def default_pod_template(template: Any) -> None:
    """Defaults of a ``PodTemplateSpec`` (its spec); an empty ``metadata`` is written
    as ``{}`` as the typed encoding does."""
    if isinstance(template, dict):
        set_default(template, "metadata", {})
        if isinstance(template.get("spec"), dict):
            default_pod_spec(template["spec"])


def default_pod(pod: JSON) -> None:
    """``SetObjectDefaults_Pod``: the PodSpec's defaults plus ``SetDefaults_Pod``."""
    spec = ensure(pod, "spec")
    default_pod_spec(spec)
    for key in ("containers", "initContainers"):
        for ctr in items(spec, key):
            res = obj(ctr, "resources")
            limits = res.get("limits")
            if isinstance(limits, dict) and limits:
                requests = ensure(res, "requests")
                for name, value in limits.items():
                    requests.setdefault(name, value)
    set_default(spec, "enableServiceLinks", True)
    if spec.get("hostNetwork") is True:
        for key in ("containers", "initContainers"):
            for ctr in items(spec, key):
                for port in items(ctr, "ports"):
                    if not port.get("hostPort"):
                        port["hostPort"] = port.get("containerPort", 0)


# -- validation ----------------------------------------------------------------


def _check_probe(errs: Errs, probe: Any, path: str) -> None:
    if not isinstance(probe, dict):
        return
    handlers = [k for k in ("exec", "httpGet", "tcpSocket", "grpc") if probe.get(k) is not None]
    if not handlers:
        errs.append(FieldError.required(path, "must specify a handler type"))
    elif len(handlers) > 1:
        errs.append(
            FieldError.forbidden(
                f"{path}.{handlers[1]}", "may not specify more than 1 handler type"
            )
        )
    for key in (
        "initialDelaySeconds",
        "timeoutSeconds",
        "periodSeconds",
        "successThreshold",
        "failureThreshold",
    ):
        check_nonnegative(errs, probe.get(key), f"{path}.{key}")
    http_get = obj(probe, "httpGet")
    if http_get:
        check_port_num_or_name(errs, http_get.get("port"), f"{path}.httpGet.port")
        scheme = http_get.get("scheme")
        if scheme not in (None, "HTTP", "HTTPS"):
            errs.append(
                FieldError.not_supported(f"{path}.httpGet.scheme", scheme, ("HTTP", "HTTPS"))
            )
    tcp = obj(probe, "tcpSocket")
    if tcp:
        check_port_num_or_name(errs, tcp.get("port"), f"{path}.tcpSocket.port")


def _check_resources(errs: Errs, res: Any, path: str) -> None:
    """``ValidateContainerResourceRequirements``: non-negative, requests <= limits."""
    if not isinstance(res, dict):
        return
    limits = obj(res, "limits")
    requests = obj(res, "requests")
    quantity.check_nonnegative_list(errs, limits, f"{path}.limits")
    quantity.check_nonnegative_list(errs, requests, f"{path}.requests")
    for name, value in requests.items():
        if name not in limits:
            continue
        req, lim = quantity.value_of(value), quantity.value_of(limits[name])
        if req is not None and lim is not None and req > lim:
            errs.append(
                FieldError.invalid(
                    f"{path}.requests",
                    quantity.canonical(value),
                    f"must be less than or equal to {name} limit of "
                    f"{quantity.canonical(limits[name])}",
                )
            )


def _check_ports(errs: Errs, ports: list[JSON], path: str) -> None:
    names: set[str] = set()
    for i, port in enumerate(ports):
        ppath = f"{path}[{i}]"
        name = str_of(port, "name")
        if name:
            msgs = port_name_errors(name)
            for msg in msgs:
                errs.append(FieldError.invalid(f"{ppath}.name", name, msg))
            if not msgs:
                if name in names:
                    errs.append(FieldError.duplicate(f"{ppath}.name", name))
                names.add(name)
        container_port = int_of(port, "containerPort")
        if container_port == 0:
            errs.append(FieldError.required(f"{ppath}.containerPort"))
        else:
            for msg in port_num_errors(container_port):
                errs.append(FieldError.invalid(f"{ppath}.containerPort", container_port, msg))
        host_port = int_of(port, "hostPort")
        if host_port != 0:
            for msg in port_num_errors(host_port):
                errs.append(FieldError.invalid(f"{ppath}.hostPort", host_port, msg))
        protocol = port.get("protocol")
        if not protocol:
            errs.append(FieldError.required(f"{ppath}.protocol"))
        elif protocol not in PROTOCOLS:
            errs.append(FieldError.not_supported(f"{ppath}.protocol", protocol, PROTOCOLS))


def _check_containers(
    errs: Errs, containers: list[JSON], path: str, volumes: set[str], seen: set[str]
) -> None:
    for i, ctr in enumerate(containers):
        cpath = f"{path}[{i}]"
        name = str_of(ctr, "name")
        if not name:
            errs.append(FieldError.required(f"{cpath}.name"))
        else:
            check_dns_label(errs, name, f"{cpath}.name")
            if name in seen:
                errs.append(FieldError.duplicate(f"{cpath}.name", name))
            seen.add(name)
        image = str_of(ctr, "image")
        if not image:
            errs.append(FieldError.required(f"{cpath}.image"))
        elif image != image.strip():
            errs.append(
                FieldError.invalid(
                    f"{cpath}.image", image, "must not have leading or trailing whitespace"
                )
            )
        for key in ("livenessProbe", "readinessProbe", "startupProbe"):
            _check_probe(errs, ctr.get(key), f"{cpath}.{key}")
        check_enum(
            errs,
            ctr.get("terminationMessagePolicy"),
            f"{cpath}.terminationMessagePolicy",
            TERMINATION_MESSAGE_POLICIES,
        )
        _check_ports(errs, items(ctr, "ports"), f"{cpath}.ports")
        for j, env in enumerate(items(ctr, "env")):
            if not str_of(env, "name"):
                errs.append(FieldError.required(f"{cpath}.env[{j}].name"))
        for j, mount in enumerate(items(ctr, "volumeMounts")):
            mpath = f"{cpath}.volumeMounts[{j}]"
            mname = str_of(mount, "name")
            if not mname:
                errs.append(FieldError.required(f"{mpath}.name"))
            elif mname not in volumes:
                errs.append(FieldError("FieldValueNotFound", f"{mpath}.name", "", mname))
            if not str_of(mount, "mountPath"):
                errs.append(FieldError.required(f"{mpath}.mountPath"))
        check_enum(errs, ctr.get("imagePullPolicy"), f"{cpath}.imagePullPolicy", PULL_POLICIES)
        _check_resources(errs, ctr.get("resources"), f"{cpath}.resources")


def _check_volumes(errs: Errs, volumes: list[JSON], path: str) -> set[str]:
    names: set[str] = set()
    for i, vol in enumerate(volumes):
        vpath = f"{path}[{i}]"
        name = str_of(vol, "name")
        if not name:
            errs.append(FieldError.required(f"{vpath}.name"))
        else:
            check_dns_label(errs, name, f"{vpath}.name")
            if name in names:
                errs.append(FieldError.duplicate(f"{vpath}.name", name))
            names.add(name)
        sources = _volume_sources(vol)
        if not sources:
            errs.append(FieldError.required(vpath, "must specify a volume type"))
        for extra in sources[1:]:
            errs.append(
                FieldError.forbidden(f"{vpath}.{extra}", "may not specify more than 1 volume type")
            )
        claim = obj(vol, "persistentVolumeClaim")
        if claim and not str_of(claim, "claimName"):
            errs.append(FieldError.required(f"{vpath}.persistentVolumeClaim.claimName"))
        for key in ("configMap", "secret"):
            source = vol.get(key)
            if isinstance(source, dict):
                mode = source.get("defaultMode")
                if isinstance(mode, int) and not isinstance(mode, bool) and not 0 <= mode <= 0o777:
                    errs.append(
                        FieldError.invalid(
                            f"{vpath}.{key}.defaultMode",
                            mode,
                            "must be a number between 0 and 0777 (octal), both inclusive",
                        )
                    )
    return names


def validate_pod_spec(errs: Errs, spec: JSON, path: str) -> None:
    """``ValidatePodSpec``: volumes, containers, policies, scheduling fields."""
    volumes = _check_volumes(errs, items(spec, "volumes"), f"{path}.volumes")
    containers = items(spec, "containers")
    seen: set[str] = set()
    if not containers:
        errs.append(FieldError.required(f"{path}.containers"))
    else:
        _check_containers(errs, containers, f"{path}.containers", volumes, seen)
    _check_containers(errs, items(spec, "initContainers"), f"{path}.initContainers", volumes, seen)
    check_enum(errs, spec.get("restartPolicy"), f"{path}.restartPolicy", RESTART_POLICIES)
    check_enum(errs, spec.get("dnsPolicy"), f"{path}.dnsPolicy", DNS_POLICIES)
    selector = spec.get("nodeSelector")
    if (selector := str_map(selector)) is not None:
        errs.extend(validate_labels(selector, f"{path}.nodeSelector"))
    deadline = spec.get("activeDeadlineSeconds")
    if (
        isinstance(deadline, int)
        and not isinstance(deadline, bool)
        and not 1 <= deadline <= 2**31 - 1
    ):
        errs.append(
            FieldError.invalid(
                f"{path}.activeDeadlineSeconds",
                deadline,
                "must be between 1 and 2147483647, inclusive",
            )
        )
    for i, tol in enumerate(items(spec, "tolerations")):
        operator = tol.get("operator")
        if operator not in (None, "", "Equal", "Exists"):
            errs.append(
                FieldError.not_supported(
                    f"{path}.tolerations[{i}].operator", operator, ("Equal", "Exists")
                )
            )
        effect = tol.get("effect")
        if effect not in (None, "", "NoSchedule", "PreferNoSchedule", "NoExecute"):
            errs.append(
                FieldError.not_supported(
                    f"{path}.tolerations[{i}].effect",
                    effect,
                    ("NoExecute", "NoSchedule", "PreferNoSchedule"),
                )
            )


def validate_pod_template_spec(errs: Errs, template: JSON, path: str) -> None:
    """``ValidatePodTemplateSpec``: the template's labels and annotations (reported at
    ``<path>.labels``, as upstream does), then its spec."""
    meta = obj(template, "metadata")
    labels = meta.get("labels")
    if (labels := str_map(labels)) is not None:
        errs.extend(validate_labels(labels, f"{path}.labels"))
    annotations = meta.get("annotations")
    if (annotations := str_map(annotations)) is not None:
        errs.extend(validate_annotations(annotations, f"{path}.annotations"))
    spec = obj(template, "spec")
    validate_pod_spec(errs, spec, f"{path}.spec")
    if items(spec, "ephemeralContainers"):
        errs.append(
            FieldError.forbidden(
                f"{path}.spec.ephemeralContainers",
                "ephemeral containers not allowed in pod template",
            )
        )


_POD_UPDATE_MSG: Final = (
    "pod updates may not change fields other than `spec.containers[*].image`,"
    "`spec.initContainers[*].image`,`spec.activeDeadlineSeconds`,`spec.tolerations` "
    "(only additions to existing tolerations),`spec.terminationGracePeriodSeconds` "
    "(allow it to be set to 1 if it was previously negative)"
)


def _pod_update(errs: Errs, new: JSON, old: JSON) -> None:
    """``ValidatePodUpdate``'s rule on the spec: only the mutable fields may change.
    (kube appends a diff of the two specs to the message; kubewerk does not.)"""
    new_spec, old_spec = obj(new, "spec"), obj(old, "spec")
    merged = copy.deepcopy(old_spec)
    for key in ("containers", "initContainers"):
        new_ctrs, merged_ctrs = items(new_spec, key), items(merged, key)
        if len(new_ctrs) == len(merged_ctrs):
            for n, m in zip(new_ctrs, merged_ctrs, strict=True):
                if "image" in n:
                    m["image"] = n["image"]
                if "resources" in n or "resources" in m:
                    m["resources"] = n.get("resources")
    for key in (
        "activeDeadlineSeconds",
        "tolerations",
        "terminationGracePeriodSeconds",
        "schedulingGates",
    ):
        if key in new_spec:
            merged[key] = new_spec[key]
        else:
            merged.pop(key, None)
    for key in ("ephemeralContainers",):
        merged.pop(key, None)
    cmp_new = {k: v for k, v in new_spec.items() if k != "ephemeralContainers"}
    if merged != cmp_new:
        errs.append(FieldError.forbidden("spec", _POD_UPDATE_MSG))
    old_deadline = old_spec.get("activeDeadlineSeconds")
    new_deadline = new_spec.get("activeDeadlineSeconds")
    if isinstance(old_deadline, int) and (
        new_deadline is None or (isinstance(new_deadline, int) and new_deadline > old_deadline)
    ):
        errs.append(
            FieldError.invalid(
                "spec.activeDeadlineSeconds",
                new_deadline,
                "must be less than or equal to previous value",
            )
        )


def validate_pod(new: JSON, old: JSON | None) -> list[FieldError]:
    """``ValidatePodCreate`` / ``ValidatePodUpdate`` (spec part)."""
    errs: Errs = []
    validate_pod_spec(errs, obj(new, "spec"), "spec")
    if old is not None:
        _pod_update(errs, new, old)
    return errs


def validate_pod_status(new: JSON, old: JSON | None) -> list[FieldError]:
    """``ValidatePodStatusUpdate``'s own rule: ``spec.nodeName`` may not change through
    ``/status`` (binding sets it)."""
    errs: Errs = []
    if old is not None:
        old_node = str_of(obj(old, "spec"), "nodeName")
        if str_of(obj(new, "spec"), "nodeName") != old_node:
            errs.append(FieldError.forbidden("status.nodeName", "may not be changed directly"))
    return errs


def default_pod_template_object(tmpl: JSON) -> None:
    """``SetObjectDefaults_PodTemplate``."""
    default_pod_template(tmpl.get("template"))


def validate_pod_template_object(new: JSON, old: JSON | None) -> list[FieldError]:
    """``ValidatePodTemplate``: ``template`` as a PodTemplateSpec."""
    errs: Errs = []
    validate_pod_template_spec(errs, obj(new, "template"), "template")
    return errs


RULES: Final[dict[tuple[str, str], KindRules]] = {
    ("v1", "Pod"): KindRules(default_pod, validate_pod, validate_pod_status),
    ("v1", "PodTemplate"): KindRules(default_pod_template_object, validate_pod_template_object),
}
