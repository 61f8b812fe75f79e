"""v1 PersistentVolumeClaim and PersistentVolume, storage.k8s.io/v1 StorageClass:
defaults (``SetDefaults_PersistentVolume*``, ``pkg/apis/storage/v1/defaults.go``) and
validation (``ValidatePersistentVolume*``, ``pkg/apis/storage/validation``)."""

from __future__ import annotations

from typing import Final

from kubewerk.apiserver.kindrules import quantity
from kubewerk.apiserver.kindrules.common import (
    JSON,
    Errs,
    KindRules,
    check_immutable,
    check_label_selector,
    check_qualified_name,
    ensure,
    items,
    obj,
    set_default,
    str_of,
)
from kubewerk.apiserver.kindrules.pod import default_pvc_spec
from kubewerk.core.errors import FieldError
from kubewerk.core.gofmt import GoText, go_json
from kubewerk.core.validation import is_dns1123_subdomain

ACCESS_MODES: Final = ("ReadOnlyMany", "ReadWriteMany", "ReadWriteOnce", "ReadWriteOncePod")
VOLUME_MODES: Final = ("Block", "Filesystem")
PV_RECLAIM_POLICIES: Final = ("Delete", "Recycle", "Retain")
SC_RECLAIM_POLICIES: Final = ("Delete", "Retain")
BINDING_MODES: Final = ("Immediate", "WaitForFirstConsumer")
PVC_UPDATE_FORBIDDEN: Final = (
    "spec is immutable after creation except resources.requests and "
    "volumeAttributesClassName for bound claims"
)
_PV_SOURCES: Final = (
    "gcePersistentDisk",
    "awsElasticBlockStore",
    "hostPath",
    "glusterfs",
    "nfs",
    "rbd",
    "iscsi",
    "cinder",
    "cephfs",
    "fc",
    "flocker",
    "flexVolume",
    "azureFile",
    "vsphereVolume",
    "quobyte",
    "azureDisk",
    "photonPersistentDisk",
    "portworxVolume",
    "scaleIO",
    "local",
    "storageos",
    "csi",
)


def _check_access_modes(errs: Errs, modes: object, path: str, required_detail: str) -> None:
    if not isinstance(modes, list) or not modes:
        errs.append(FieldError.required(path, required_detail))
        return
    for mode in modes:
        if mode not in ACCESS_MODES:
            errs.append(FieldError.not_supported(path, mode, ACCESS_MODES))
    if "ReadWriteOncePod" in modes and len(modes) > 1:
        errs.append(
            FieldError.forbidden(path, "may not use ReadWriteOncePod with other access modes")
        )


def _check_class_name(errs: Errs, name: object, path: str) -> None:
    if isinstance(name, str) and name:
        for msg in is_dns1123_subdomain(name):
            errs.append(FieldError.invalid(path, name, msg))


def _positive_quantity(errs: Errs, value: object, path: str) -> None:
    amount = quantity.value_of(value)
    if amount is not None and amount <= 0:
        errs.append(
            FieldError.invalid(path, quantity.canonical(value), "must be greater than zero")
        )


# -- PersistentVolumeClaim -----------------------------------------------------


def default_pvc(pvc: JSON) -> None:
    """``SetObjectDefaults_PersistentVolumeClaim``: volumeMode Filesystem, phase Pending."""
    default_pvc_spec(ensure(pvc, "spec"))
    status = ensure(pvc, "status")
    if not status.get("phase"):
        status["phase"] = "Pending"
    quantity.canonicalize_list(status.get("capacity"))


def validate_pvc_spec(errs: Errs, spec: JSON, path: str) -> None:
    """``ValidatePersistentVolumeClaimSpec``."""
    _check_access_modes(
        errs, spec.get("accessModes"), f"{path}.accessModes", "at least 1 access mode is required"
    )
    if spec.get("selector") is not None:
        check_label_selector(errs, spec["selector"], f"{path}.selector")
    requests = obj(obj(spec, "resources"), "requests")
    storage_path = f"{path}.resources[storage]"
    if "storage" not in requests:
        errs.append(FieldError.required(storage_path))
    else:
        _positive_quantity(errs, requests["storage"], storage_path)
    _check_class_name(errs, spec.get("storageClassName"), f"{path}.storageClassName")
    mode = spec.get("volumeMode")
    if mode is not None and mode not in VOLUME_MODES:
        errs.append(FieldError.not_supported(f"{path}.volumeMode", mode, VOLUME_MODES))


def validate_pvc(new: JSON, old: JSON | None) -> list[FieldError]:
    """``ValidatePersistentVolumeClaim`` / ``...Update``: on update only
    ``resources.requests`` (of a bound claim) and ``volumeAttributesClassName`` may
    change. (kube appends a diff of the specs to that message; kubewerk does not.)"""
    errs: Errs = []
    spec = obj(new, "spec")
    validate_pvc_spec(errs, spec, "spec")
    if old is None:
        return errs
    old_spec = obj(old, "spec")
    bound = obj(old, "status").get("phase") == "Bound"
    mutable = ("volumeAttributesClassName",) + (("resources",) if bound else ())
    rest_new = {k: v for k, v in spec.items() if k not in mutable}
    rest_old = {k: v for k, v in old_spec.items() if k not in mutable}
    if bound:
        new_res, old_res = obj(spec, "resources"), obj(old_spec, "resources")
        rest_new["resources"] = {k: v for k, v in new_res.items() if k != "requests"}
        rest_old["resources"] = {k: v for k, v in old_res.items() if k != "requests"}
    if rest_new != rest_old:
        errs.append(FieldError.forbidden("spec", PVC_UPDATE_FORBIDDEN))
    return errs


# -- PersistentVolume ----------------------------------------------------------


def default_pv(pv: JSON) -> None:
    """``SetObjectDefaults_PersistentVolume``: reclaim policy Retain, volumeMode
    Filesystem, phase Pending, a hostPath's type ""."""
    spec = ensure(pv, "spec")
    if not spec.get("persistentVolumeReclaimPolicy"):
        spec["persistentVolumeReclaimPolicy"] = "Retain"
    set_default(spec, "volumeMode", "Filesystem")
    host_path = spec.get("hostPath")
    if isinstance(host_path, dict):
        set_default(host_path, "type", "")
    quantity.canonicalize_list(spec.get("capacity"))
    status = ensure(pv, "status")
    if not status.get("phase"):
        status["phase"] = "Pending"


def validate_pv(new: JSON, old: JSON | None) -> list[FieldError]:
    """``ValidatePersistentVolume`` / ``...Update`` (the source and volumeMode are
    immutable)."""
    errs: Errs = []
    spec = obj(new, "spec")
    _check_access_modes(errs, spec.get("accessModes"), "spec.accessModes", "")
    capacity = obj(spec, "capacity")
    if not capacity:
        errs.append(FieldError.required("spec.capacity"))
    if "storage" not in capacity or len(capacity) > 1:
        shown = {k: quantity.canonical(v) for k, v in capacity.items()}
        errs.append(FieldError.not_supported("spec.capacity", GoText(go_json(shown)), ("storage",)))
    for name, value in capacity.items():
        _positive_quantity(errs, value, f"spec.capacity[{name}]")
    _check_class_name(errs, spec.get("storageClassName"), "spec.storageClassName")
    mode = spec.get("volumeMode")
    if mode is not None and mode not in VOLUME_MODES:
        errs.append(FieldError.not_supported("spec.volumeMode", mode, VOLUME_MODES))
    policy = spec.get("persistentVolumeReclaimPolicy")
    if policy and policy not in PV_RECLAIM_POLICIES:
        errs.append(
            FieldError.not_supported(
                "spec.persistentVolumeReclaimPolicy", policy, PV_RECLAIM_POLICIES
            )
        )
    sources = [s for s in _PV_SOURCES if spec.get(s) is not None]
    if not sources:
        errs.append(FieldError.required("spec", "must specify a volume type"))
    for extra in sources[1:]:
        errs.append(
            FieldError.forbidden(f"spec.{extra}", "may not specify more than 1 volume type")
        )
    host_path = spec.get("hostPath")
    if isinstance(host_path, dict) and not str_of(host_path, "path"):
        errs.append(FieldError.required("spec.hostPath.path"))
    if old is not None:
        old_spec = obj(old, "spec")
        if {s: spec.get(s) for s in _PV_SOURCES} != {s: old_spec.get(s) for s in _PV_SOURCES}:
            errs.append(
                FieldError.forbidden(
                    "spec.persistentvolumesource",
                    "spec.persistentvolumesource is immutable after creation",
                )
            )
        check_immutable(errs, spec.get("volumeMode"), old_spec.get("volumeMode"), "volumeMode")
    return errs


# -- StorageClass --------------------------------------------------------------


def default_storage_class(sc: JSON) -> None:
    """``SetDefaults_StorageClass``: reclaimPolicy Delete, volumeBindingMode Immediate."""
    if not sc.get("reclaimPolicy"):
        sc["reclaimPolicy"] = "Delete"
    if not sc.get("volumeBindingMode"):
        sc["volumeBindingMode"] = "Immediate"


def validate_storage_class(new: JSON, old: JSON | None) -> list[FieldError]:
    """``ValidateStorageClass`` / ``ValidateStorageClassUpdate``."""
    errs: Errs = []
    provisioner = str_of(new, "provisioner")
    if not provisioner:
        errs.append(FieldError.required("provisioner"))
    else:
        for msg in _qualified(provisioner.lower()):
            errs.append(FieldError.invalid("provisioner", provisioner, msg))
    policy = new.get("reclaimPolicy")
    if policy and policy not in SC_RECLAIM_POLICIES:
        errs.append(FieldError.not_supported("reclaimPolicy", policy, SC_RECLAIM_POLICIES))
    mode = new.get("volumeBindingMode")
    if mode is None:
        errs.append(FieldError.required("volumeBindingMode"))
    elif mode not in BINDING_MODES:
        errs.append(FieldError.not_supported("volumeBindingMode", mode, BINDING_MODES))
    for i, term in enumerate(items(new, "allowedTopologies")):
        if not items(term, "matchLabelExpressions"):
            errs.append(
                FieldError.required(
                    f"allowedTopologies[{i}].matchLabelExpressions", "must have at least one term"
                )
            )
    if old is not None:
        if (new.get("parameters") or {}) != (old.get("parameters") or {}):
            errs.append(FieldError.forbidden("parameters", "updates to parameters are forbidden."))
        if provisioner != str_of(old, "provisioner"):
            errs.append(
                FieldError.forbidden("provisioner", "updates to provisioner are forbidden.")
            )
        if new.get("reclaimPolicy") != old.get("reclaimPolicy"):
            errs.append(
                FieldError.forbidden("reclaimPolicy", "updates to reclaimPolicy are forbidden.")
            )
        check_immutable(errs, mode, old.get("volumeBindingMode"), "volumeBindingMode")
    return errs


def _qualified(name: str) -> list[str]:
    errs: Errs = []
    check_qualified_name(errs, name, "x")
    return [e.detail for e in errs]


RULES: Final[dict[tuple[str, str], KindRules]] = {
    ("v1", "PersistentVolumeClaim"): KindRules(default_pvc, validate_pvc),
    ("v1", "PersistentVolume"): KindRules(default_pv, validate_pv),
    ("storage.k8s.io/v1", "StorageClass"): KindRules(default_storage_class, validate_storage_class),
}
