"""PersistentVolumeClaims bound to dynamically provisioned PersistentVolumes.

At start the simulation installs the StorageClass ``default_storage_class`` (``standard``
unless configured; provisioner ``kubewerk.dev/simulated``, reclaim ``Delete``, binding
``Immediate``, annotated ``storageclass.kubernetes.io/is-default-class: "true"``) unless
one of that name exists. A claim without ``storageClassName`` gets the default class's
name (the retroactive default assignment of Kubernetes 1.28+); a claim whose class exists
and has a provisioner gets a PersistentVolume ``pvc-<claim uid>`` (``hostPath`` under
``/var/lib/kubewerk/pv``, the claim's request as capacity, its access modes and volume
mode, ``claimRef``, ``pv.kubernetes.io/provisioned-by``), and both turn ``Bound``
(the claim with ``volumeName``, ``pv.kubernetes.io/bind-completed``,
``pv.kubernetes.io/bound-by-controller`` and the storage-provisioner annotations). With
``WaitForFirstConsumer`` the volume is made once a Pod using the claim is bound to a node.
A deleted claim's volume is deleted (``Delete``) or turns ``Released`` (``Retain``).
A claim with ``volumeName`` or a ``selector`` set by its author is left to its author.
"""

from __future__ import annotations

from typing import Any

from kubewerk.apiserver.simulate.engine import Engine, changed_copy, split_key

JSON = dict[str, Any]

PROVISIONER = "kubewerk.dev/simulated"
DEFAULT_CLASS = "storageclass.kubernetes.io/is-default-class"
PV_PREFIX = "/core/persistentvolumes//"
SC_PREFIX = "/storage.k8s.io/storageclasses//"


class Volumes:
    def __init__(self, engine: Engine) -> None:
        self.engine = engine
        self.bound_volumes: dict[str, str] = {}
        """claim key -> volume name (to release it when the claim goes)"""
        engine.handlers["pvc"] = self.reconcile

    def install_default_class(self) -> None:
        engine = self.engine
        name = engine.config.default_storage_class
        if not name or engine.rtype("storage.k8s.io", "storageclasses") is None:
            return
        if engine.get(SC_PREFIX + name) is not None:
            return
        engine.create(
            "storage.k8s.io",
            "storageclasses",
            None,
            {
                "apiVersion": "storage.k8s.io/v1",
                "kind": "StorageClass",
                "metadata": {"name": name, "annotations": {DEFAULT_CLASS: "true"}},
                "provisioner": PROVISIONER,
                "reclaimPolicy": "Delete",
                "volumeBindingMode": "Immediate",
            },
        )

    def _default_class(self) -> str | None:
        for _, sc in self.engine.items_under(SC_PREFIX):
            if (sc["metadata"].get("annotations") or {}).get(DEFAULT_CLASS) == "true":
                return str(sc["metadata"]["name"])
        return None

    def reconcile(self, key: str) -> None:
        engine = self.engine
        ns, name = split_key(key)
        claim = engine.get(key)
        if claim is None:
            self._release(key)
            return
        spec = claim.get("spec") or {}
        if (claim.get("status") or {}).get("phase") == "Bound" or claim["metadata"].get(
            "deletionTimestamp"
        ):
            return
        if spec.get("volumeName") or spec.get("selector"):
            return
        if engine.rtype("", "persistentvolumes") is None:
            return
        class_name = spec.get("storageClassName")
        if class_name is None:
            default = self._default_class()
            if default is None:
                self._pending(key, claim)
                return
            new = changed_copy(claim)
            new["spec"]["storageClassName"] = default
            # kube's validation lets the PV controller set these two fields of a claim's
            # otherwise immutable spec; written in storage, as the controller's update ends
            engine.write_back(key, new)
            return
        sc = engine.get(SC_PREFIX + str(class_name)) if class_name else None
        if (
            sc is None
            or not sc.get("provisioner")
            or sc.get("provisioner") == "kubernetes.io/no-provisioner"
        ):
            self._pending(key, claim)
            return
        if sc.get("volumeBindingMode") == "WaitForFirstConsumer" and not self._consumer_bound(
            ns, name
        ):
            self._pending(key, claim)
            return
        self._provision(key, claim, sc)

    def _consumer_bound(self, ns: str, claim: str) -> bool:
        for _, pod in self.engine.items_under(f"/core/pods/{ns}/"):
            spec = pod.get("spec") or {}
            if not spec.get("nodeName"):
                continue
            for volume in spec.get("volumes") or []:
                if (volume.get("persistentVolumeClaim") or {}).get("claimName") == claim:
                    return True
        return False

    def _pending(self, key: str, claim: JSON) -> None:
        if (claim.get("status") or {}).get("phase") != "Pending":
            new = changed_copy(claim)
            new["status"] = {**(claim.get("status") or {}), "phase": "Pending"}
            self.engine.update(key, new, status=True)

    def _provision(self, key: str, claim: JSON, sc: JSON) -> None:
        engine = self.engine
        ns, name = split_key(key)
        spec = claim.get("spec") or {}
        pv_name = f"pvc-{claim['metadata']['uid']}"
        request = ((spec.get("resources") or {}).get("requests") or {}).get("storage", "1Gi")
        provisioner = str(sc.get("provisioner"))
        if engine.get(PV_PREFIX + pv_name) is None:
            pv_spec: JSON = {
                "accessModes": list(spec.get("accessModes") or ["ReadWriteOnce"]),
                "capacity": {"storage": request},
                "claimRef": {
                    "apiVersion": "v1",
                    "kind": "PersistentVolumeClaim",
                    "name": name,
                    "namespace": ns,
                    "resourceVersion": claim["metadata"].get("resourceVersion"),
                    "uid": claim["metadata"]["uid"],
                },
                "hostPath": {"path": f"/var/lib/kubewerk/pv/{pv_name}", "type": ""},
                "persistentVolumeReclaimPolicy": sc.get("reclaimPolicy") or "Delete",
                "storageClassName": sc["metadata"]["name"],
                "volumeMode": spec.get("volumeMode") or "Filesystem",
            }
            created = engine.create(
                "",
                "persistentvolumes",
                None,
                {
                    "apiVersion": "v1",
                    "kind": "PersistentVolume",
                    "metadata": {
                        "name": pv_name,
                        "annotations": {"pv.kubernetes.io/provisioned-by": provisioner},
                    },
                    "spec": pv_spec,
                },
            )
            if created is None:
                return
        pv = engine.get(PV_PREFIX + pv_name)
        if pv is not None and (pv.get("status") or {}).get("phase") != "Bound":
            new = changed_copy(pv)
            new["status"] = {"phase": "Bound"}
            engine.update(PV_PREFIX + pv_name, new, status=True)
        claim = engine.get(key) or claim
        if (claim.get("spec") or {}).get("volumeName") != pv_name:
            new = changed_copy(claim)
            new["spec"]["volumeName"] = pv_name
            annotations = new["metadata"].setdefault("annotations", {})
            annotations["pv.kubernetes.io/bind-completed"] = "yes"
            annotations["pv.kubernetes.io/bound-by-controller"] = "yes"
            annotations["volume.beta.kubernetes.io/storage-provisioner"] = provisioner
            annotations["volume.kubernetes.io/storage-provisioner"] = provisioner
            if not engine.write_back(key, new):
                return
            claim = engine.get(key) or claim
        new = changed_copy(claim)
        new["status"] = {
            **(claim.get("status") or {}),
            "phase": "Bound",
            "accessModes": list(spec.get("accessModes") or ["ReadWriteOnce"]),
            "capacity": {"storage": request},
        }
        if engine.update(key, new, status=True) is not None:
            self.bound_volumes[key] = pv_name

    def _release(self, key: str) -> None:
        engine = self.engine
        pv_name = self.bound_volumes.pop(key, None)
        if pv_name is None:
            return
        pv = engine.get(PV_PREFIX + pv_name)
        if pv is None:
            return
        if (pv.get("spec") or {}).get("persistentVolumeReclaimPolicy", "Delete") == "Delete":
            engine.delete(PV_PREFIX + pv_name)
        else:
            new = changed_copy(pv)
            new["status"] = {"phase": "Released"}
            engine.update(PV_PREFIX + pv_name, new, status=True)
